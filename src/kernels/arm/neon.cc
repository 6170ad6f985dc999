// Plain Armv8-A Advanced SIMD kernels (no dotprod): what every AArch64 CPU runs (Cortex-A53/A72).
#define ED_NEON_DOTPROD 0
#define ED_NEON_I8MM 0
#define ED_NEON_NS neon
#include "kernels/arm/neon_kernels.inc"
