// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; called only when cpuid says so).
#define ED_X86_VNNI 0
#define ED_X86_NS avx2
#include "kernels/x86/x86_kernels.inc"
