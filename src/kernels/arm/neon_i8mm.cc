// Advanced SIMD + dotprod + i8mm kernels (compiled with +dotprod+i8mm; called only when HWCAP2 has i8mm):
// the basic formats by smmla, 2 rows x 2 columns per instruction (Cortex-A510/A710/X2 and later,
// Neoverse N2/V1, Apple M2); the other types as the dotprod build.
#define ED_NEON_DOTPROD 1
#define ED_NEON_I8MM 1
#define ED_NEON_NS neon_i8mm
#include "kernels/arm/neon_kernels.inc"
