/* conv_sm90.cuh -- gko's Hopper implicit-GEMM convolution as CUTLASS 3.x
 * types: CUTLASS's sm90 fprop mainloop (TMA im2col loads of x, TMA loads of
 * the filter, wgmma) and its TMA epilogue, whose tree is
 * act(alpha * acc + bias[k] + beta * z) with gko's activation node
 * (sm90_common.cuh).  Included by kernels/conv_sm90_<type>.cu, one per
 * type, each defining the configurations of conv_sm90.h. */
#ifndef GK_CONV_SM90_CUH
#define GK_CONV_SM90_CUH

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp> /* before the conv headers, which use it */
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>

#include "conv_sm90.h"
#include "sm90_common.cuh"

namespace gk {
namespace sm90 {

using namespace cute;

/* conv_sm90.h's configurations of CUTLASS's conv kernel: the tile (pixels,
 * channels, a channel block of the reduction), the mainloop's stages and
 * the CTAs per SM the kernel is compiled for (2: at most 128 registers, so
 * that one CTA's prologue and epilogue hide behind the other's main loop) */
struct conv_64x128 {
  using Tile = Shape<_64, _128, Shape<_64>>;
  static constexpr int kStages = 4, kCtasPerSm = 2;
};
struct conv_64x64 {
  using Tile = Shape<_64, _64, Shape<_64>>;
  static constexpr int kStages = 4, kCtasPerSm = 2;
};

/* The epilogue's tree, act(beta * z + (alpha * acc + bias[k])), and its
 * run-time arguments; shared by the non-persistent and the ping-pong
 * kernels. */
template <class T, class Tile>
struct conv_tree {
  static constexpr int kAlign = 16 / (int)sizeof(T);
  /* bias[k]: one value per output channel, the GEMM's column */
  using bias_row = cutlass::epilogue::fusion::Sm90RowBroadcast<0, Tile, T, float,
                                                               Stride<_0, _1, int64_t>, kAlign>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      act_node<false>, fma_node<scalar_node, cutlass::epilogue::fusion::Sm90AccFetch, bias_row>>;

  /* op_0 alpha * acc + bias (alpha, acc, bias), op_1 the root: beta * z
   * and the activation; without z, beta is 0 and z is not read */
  template <class Thread>
  static void set(Thread &t, int act, float alpha, float beta, bool has_z, const void *bias) {
    auto &lin = t.op_0;
    lin.op_0.scalars[0] = alpha;
    lin.op_2.ptr_row = static_cast<const T *>(bias);
    t.op_1 = {act, has_z ? beta : 0.0f};
  }
};

/* p as CUTLASS's problem: x NHWC, w KRSC, cross-correlation, one group */
inline cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, 2> conv_problem(
    const gk_conv_sm90_problem *p) {
  cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, 2> shape(
      cutlass::conv::Mode::kCrossCorrelation, {p->n, p->h, p->w, p->c},
      {p->k, p->r, p->s, p->c}, {p->pad_h, p->pad_w}, {p->pad_h_end, p->pad_w_end},
      {p->stride_h, p->stride_w}, {p->dil_h, p->dil_w}, 1);
  return shape;
}

template <class T, class Cfg>
struct conv {
  static constexpr int kAlign = 16 / (int)sizeof(T);
  using Tile = typename Cfg::Tile;
  using Cluster = Shape<_1, _1, _1>; /* 2 x 1 (the filter multicast) measured slower */
  using Problem = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, 2>;
  using Fusion = typename conv_tree<T, Tile>::Fusion;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster, Shape<_64, _64>,
      float, float, T,
      cutlass::layout::TensorNHWC, kAlign, T, cutlass::layout::TensorNHWC, kAlign,
      cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
  using Stages = cutlass::conv::collective::StageCount<Cfg::kStages>;
  using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, T,
      cutlass::layout::TensorNHWC, kAlign, T, cutlass::layout::TensorNHWC, kAlign, float, Tile,
      Cluster, Stages, cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
  /* CUTLASS's kernel with its launch bounds' minimum of CTAs per SM set to
   * the configuration's (device_kernel reads it from here) */
  struct Kernel : cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue> {
    static constexpr uint32_t MinBlocksPerMultiprocessor = Cfg::kCtasPerSm;
  };
  using Arguments = typename Kernel::Arguments;

  /* The kernel's arguments; null pointers at plan time.  z NULL: y stands
   * in for it (beta is 0 then, and the epilogue does not read it). */
  static Arguments arguments(const gk_conv_sm90_problem *p, float alpha, float beta,
                             const void *x, const void *w, const void *z, void *y,
                             const void *bias) {
    Arguments args{};
    args.problem_shape = conv_problem(p);
    args.mainloop.ptr_A = static_cast<const T *>(x);
    args.mainloop.ptr_B = static_cast<const T *>(w);
    /* y and z NHWK: the output pixel (q, p, n) strides, channels contiguous */
    const int64_t k = p->k, qk = (int64_t)p->ow * k, pqk = (int64_t)p->oh * qk;
    typename Kernel::StrideD d{};
    get<0>(d) = make_stride(k, qk, pqk);
    args.epilogue.ptr_C = static_cast<const T *>(z ? z : y);
    args.epilogue.dC = d;
    args.epilogue.ptr_D = static_cast<T *>(y);
    args.epilogue.dD = d;
    conv_tree<T, Tile>::set(args.epilogue.thread, p->act, alpha, beta, z != nullptr, bias);
    return args;
  }
};

/* Plan-time setup and launch of a convolution kernel type C (C::Kernel and
 * C::arguments): the same for CUTLASS's conv kernel and the ping-pong one
 * (conv_sm90_pingpong.cuh). */
template <class C>
struct conv_calls {
  using Kernel = typename C::Kernel;

  static gko_status_t setup(const gk_conv_sm90_problem *p) {
    typename C::Arguments args =
        C::arguments(p, 1.0f, 0.0f, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (!Kernel::can_implement(args))
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "SM90 implicit GEMM: CUTLASS cannot run this convolution (TMA's im2col "
                     "mode needs C and K in multiples of 16 bytes, padding of at most 256, a "
                     "dilated filter extent below 255 and N*OH*OW below 2^31)");
    if (Kernel::get_workspace_size(args) != 0)
      return gk_fail(GKO_STATUS_INTERNAL, "SM90 implicit GEMM: the kernel asks for workspace");
    return allow_smem<Kernel>("cudaFuncSetAttribute (SM90 implicit GEMM)");
  }

  static gko_status_t launch(const gk_conv_sm90_problem *p, float alpha, float beta,
                             const void *x, const void *w, const void *z, void *y,
                             const void *bias, void *stream) {
    typename C::Arguments args = C::arguments(p, alpha, beta, x, w, z, y, bias);
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
    return launch_kernel<Kernel>(params, static_cast<cudaStream_t>(stream),
                                 "SM90 implicit GEMM launch");
  }
};

template <class C>
constexpr gk_conv_sm90_entry conv_entry_of() {
  return {&conv_calls<C>::setup, &conv_calls<C>::launch};
}
template <class T, class Cfg>
constexpr gk_conv_sm90_entry conv_entry() {
  return conv_entry_of<conv<T, Cfg>>();
}

}  // namespace sm90
}  // namespace gk

#endif /* GK_CONV_SM90_CUH */
