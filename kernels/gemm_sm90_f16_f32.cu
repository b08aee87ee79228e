/* gemm_sm90_f16_f32.cu -- gko's Hopper GEMM for f16 inputs and f32 C/D: the
 * four operand layouts x the configurations built for this pair
 * (gemm_sm90.h). */
#include "gemm_sm90.cuh"

extern "C" const gk_sm90_entry gk_sm90_f16_f32[GK_SM90_NCONFIGS][4] = {
    GK_SM90_LAYOUTS(cutlass::half_t, float, gk::sm90::cfg_coop_256),
    GK_SM90_NONE,
    GK_SM90_NONE,
};
