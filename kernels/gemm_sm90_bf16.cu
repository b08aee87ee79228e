/* gemm_sm90_bf16.cu -- gko's Hopper GEMM for bf16 inputs and bf16 C/D: the
 * four operand layouts x the configurations built for this pair
 * (gemm_sm90.h). */
#include "gemm_sm90.cuh"

extern "C" const gk_sm90_entry gk_sm90_bf16_bf16[GK_SM90_NCONFIGS][4] = {
    GK_SM90_LAYOUTS(cutlass::bfloat16_t, cutlass::bfloat16_t, gk::sm90::cfg_coop_256),
    GK_SM90_LAYOUTS(cutlass::bfloat16_t, cutlass::bfloat16_t, gk::sm90::cfg_pingpong),
    GK_SM90_LAYOUTS(cutlass::bfloat16_t, cutlass::bfloat16_t, gk::sm90::cfg_coop_192),
};
