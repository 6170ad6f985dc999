// Advanced SIMD + dotprod kernels (compiled with +dotprod; called only when HWCAP has asimddp): integer
// dot products by sdot (Cortex-A55/A76 and later, Neoverse, Apple M).
#define ED_NEON_DOTPROD 1
#define ED_NEON_I8MM 0
#define ED_NEON_NS neon_dotprod
#include "kernels/arm/neon_kernels.inc"
