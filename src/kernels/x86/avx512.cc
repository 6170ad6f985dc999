// AVX-512 F/BW/VL + VNNI kernels (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only
// when cpuid says so). Integer dots use vpdpbusd/vpdpwssd on 256-bit vectors (Zen 4 splits 512-bit ops
// in two anyway); float types use 512-bit vectors.
#define ED_X86_VNNI 1
#define ED_X86_NS avx512
#include "kernels/x86/x86_kernels.inc"
