/* conv_sm90_bf16.cu -- gko's Hopper implicit-GEMM convolution for bf16
 * (conv_sm90.h's configurations). */
#include "conv_sm90.cuh"

extern "C" const gk_conv_sm90_entry gk_conv_sm90_bf16[GK_CONV_SM90_NCONV] = {
    gk::sm90::conv_entry<cutlass::bfloat16_t, gk::sm90::conv_64x128>(),
    gk::sm90::conv_entry<cutlass::bfloat16_t, gk::sm90::conv_64x64>(),
};
