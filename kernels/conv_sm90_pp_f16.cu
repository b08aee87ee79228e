/* conv_sm90_pp_f16.cu -- gko's Hopper implicit-GEMM convolution for f16 on
 * CUTLASS's persistent ping-pong kernel (conv_sm90.h's PP configurations). */
#include "conv_sm90_pingpong.cuh"

extern "C" const gk_conv_sm90_entry
    gk_conv_sm90_pp_f16[GK_CONV_SM90_NCONFIGS - GK_CONV_SM90_NCONV] = {
        gk::sm90::conv_pp_entry<cutlass::half_t, gk::sm90::conv_pp_128x64>(),
        gk::sm90::conv_pp_entry<cutlass::half_t, gk::sm90::conv_pp_128x128>(),
        gk::sm90::conv_pp_entry<cutlass::half_t, gk::sm90::conv_pp_128x128_c12>(),
};
