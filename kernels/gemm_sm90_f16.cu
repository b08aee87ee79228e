/* gemm_sm90_f16.cu -- gko's Hopper GEMM for f16 inputs and f16 C/D: the
 * four operand layouts x the configurations built for this pair
 * (gemm_sm90.h). */
#include "gemm_sm90.cuh"

extern "C" const gk_sm90_entry gk_sm90_f16_f16[GK_SM90_NCONFIGS][4] = {
    GK_SM90_LAYOUTS(cutlass::half_t, cutlass::half_t, gk::sm90::cfg_coop_256),
    GK_SM90_LAYOUTS(cutlass::half_t, cutlass::half_t, gk::sm90::cfg_pingpong),
    GK_SM90_LAYOUTS(cutlass::half_t, cutlass::half_t, gk::sm90::cfg_coop_192),
};

#define GK_STR2(x) #x
#define GK_STR(x) GK_STR2(x)
extern "C" const char gk_sm90_cutlass[] =
    GK_STR(CUTLASS_MAJOR) "." GK_STR(CUTLASS_MINOR) "." GK_STR(CUTLASS_PATCH);
