/* conv_sm90_pingpong.cuh -- the implicit-GEMM convolution on CUTLASS's
 * persistent ping-pong GEMM kernel.  CUTLASS 4.2 builds convolutions only
 * as a non-persistent kernel (one CTA per tile: its prologue and epilogue
 * never overlap a main loop), and its conv dispatch policy refuses the
 * persistent schedules.  Its fprop mainloop itself (TMA im2col loads,
 * wgmma) has the interface of a GEMM mainloop, so gko re-types it under
 * the ping-pong tag and lets GemmUniversal's ping-pong kernel drive it: CTAs
 * stay resident over many tiles, and one consumer warp group's epilogue
 * runs while the other's main loop computes.  Included by
 * kernels/conv_sm90_pp_<type>.cu. */
#ifndef GK_CONV_SM90_PINGPONG_CUH
#define GK_CONV_SM90_PINGPONG_CUH

#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "conv_sm90.cuh"

namespace gk {
namespace sm90 {

using namespace cute;

/* The ping-pong configurations (conv_sm90.h): one consumer warp group per
 * tile, stages from the shared memory the epilogue leaves; a 1 x 2 cluster
 * loads each pixel tile once for the two CTAs of its two channel tiles
 * (TMA multicast), halving the im2col reads from L2. */
struct conv_pp_128x64 {
  using Tile = Shape<_128, _64, Shape<_64>>;
  using Cluster = Shape<_1, _1, _1>;
};
struct conv_pp_128x128 {
  using Tile = Shape<_128, _128, Shape<_64>>;
  using Cluster = Shape<_1, _1, _1>;
};
struct conv_pp_128x128_c12 {
  using Tile = Shape<_128, _128, Shape<_64>>;
  using Cluster = Shape<_1, _2, _1>;
};

/* GemmUniversal picks its ping-pong kernel by this base of the schedule. */
struct conv_pingpong_schedule : cutlass::gemm::KernelTmaWarpSpecializedPingpong {};

/* CUTLASS's fprop mainloop as its builder makes it for the non-persistent
 * kernel (one consumer warp group per tile, as ping-pong has), under the
 * ping-pong tag, with what the GEMM kernel asks of a mainloop besides:
 *  - the kernel's problem is the conv's linearized one, (M = N*OH*OW,
 *    N = K, K = (C, S, R), 1); the ConvProblemShape the TMA descriptors
 *    are built from travels in the arguments;
 *  - load_init's tiled views get a batch mode of extent 1 (the kernel
 *    reads the batch count from B's fifth mode), which load() drops. */
template <class Built>
struct conv_pp_mainloop
    : cutlass::conv::collective::CollectiveConv<
          cutlass::conv::MainloopSm90TmaGmmaWarpSpecializedImplicitGemm<
              cutlass::conv::Operator::kFprop, Built::DispatchPolicy::Stages,
              Built::DispatchPolicy::NumSpatialDimensions,
              typename Built::DispatchPolicy::ClusterShape, conv_pingpong_schedule>,
          typename Built::TileShape, typename Built::ElementA, typename Built::ElementB,
          typename Built::TiledMma,
          cutlass::conv::collective::detail::Sm90ImplicitGemmTileTraits<
              typename Built::GmemTiledCopyA, typename Built::SmemLayoutA>,
          cutlass::conv::collective::detail::Sm90ImplicitGemmTileTraits<
              typename Built::GmemTiledCopyB, typename Built::SmemLayoutB>> {
  using Base = typename conv_pp_mainloop::CollectiveConv;
  using ConvProblem = typename Base::ProblemShape;
  /* (M, N, (C, S, R), L) with L a run-time 1, as the GEMM epilogue's TMA
   * descriptors are typed */
  using GemmShape = decltype(make_shape(
      int(0), int(0), get<2>(Base::get_problem_shape_MNKL(ConvProblem{})), int(0)));
  static GemmShape gemm_shape(ConvProblem const &problem) {
    auto mnkl = Base::get_problem_shape_MNKL(problem);
    return make_shape(int(get<0>(mnkl)), int(get<1>(mnkl)), get<2>(mnkl), 1);
  }
  static constexpr int NumProducerThreadEvents = 1;
  /* The GEMM kernel only checks that these have an (M or N, K, L) rank;
   * the real strides come from the ConvProblemShape. */
  using StrideA = Stride<int64_t, int64_t, int64_t>;
  using StrideB = Stride<int64_t, int64_t, int64_t>;

  struct Arguments : Base::Arguments {
    ConvProblem problem;
  };
  using Params = typename Base::Params;

  static Params to_underlying_arguments(GemmShape const &, Arguments const &a, void *ws) {
    return Base::to_underlying_arguments(a.problem, a, ws);
  }
  static bool can_implement(GemmShape const &, Arguments const &a) {
    return Base::can_implement(a.problem, a);
  }

  /* t with a last mode of extent 1 (stride 0); TMA's im2col views are
   * composed layouts, whose outer layout gets the mode */
  template <class L>
  CUTLASS_DEVICE static auto with_batch_layout(L const &l) {
    return make_layout(append(l.shape(), _1{}), append(l.stride(), _0{}));
  }
  template <class A, class O, class B>
  CUTLASS_DEVICE static auto with_batch_layout(ComposedLayout<A, O, B> const &l) {
    return composition(l.layout_a(), l.offset(), with_batch_layout(l.layout_b()));
  }
  template <class T>
  CUTLASS_DEVICE static auto with_batch(T const &t) {
    return make_tensor(t.data(), with_batch_layout(t.layout()));
  }
  template <class ShapeMNKL>
  CUTLASS_DEVICE auto load_init(ShapeMNKL const &shape, Params const &params) {
    auto in = Base::load_init(shape, params);
    return make_tuple(with_batch(get<0>(in)), with_batch(get<1>(in)));
  }
  template <class TA, class TB, class KIter, class Coord>
  CUTLASS_DEVICE void load(Params const &params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState state, cute::tuple<TA, TB> const &in,
                           Coord const &blk, KIter k_iter, int k_count, int thread,
                           uint32_t rank, typename Base::TensorStorage &smem) {
    Base::load(params, pipeline, state, make_tuple(get<0>(in)(_, _, _, _, 0), get<1>(in)(_, _, _, _, 0)),
               blk, k_iter, k_count, thread, rank, smem);
  }
};

template <class T, class Cfg>
struct conv_pp {
  static constexpr int kAlign = 16 / (int)sizeof(T);
  using Tile = typename Cfg::Tile;
  using Cluster = typename Cfg::Cluster;
  using Problem = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, 2>;
  using Fusion = typename conv_tree<T, Tile>::Fusion;
  /* y and z as a GEMM's row-major D (N*OH*OW x K): NHWK is exactly that */
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster, Shape<_64, _64>,
      float, float, T, cutlass::layout::RowMajor, kAlign, T, cutlass::layout::RowMajor, kAlign,
      cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
  using Built = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, T,
      cutlass::layout::TensorNHWC, kAlign, T, cutlass::layout::TensorNHWC, kAlign, float, Tile,
      Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage) + 1024)>, /* + the kernel's barriers */
      cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
  using Mainloop = conv_pp_mainloop<Built>;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<typename Mainloop::GemmShape, Mainloop,
                                                      Epilogue>;
  using Arguments = typename Kernel::Arguments;
  static_assert(Kernel::SharedStorageSize <= 227 * 1024, "the ping-pong conv outgrows shared memory");

  /* The kernel's arguments (conv<T, Cfg>::arguments' contract) */
  static Arguments arguments(const gk_conv_sm90_problem *p, float alpha, float beta,
                             const void *x, const void *w, const void *z, void *y,
                             const void *bias) {
    const Problem shape = conv_problem(p);
    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = Mainloop::gemm_shape(shape);
    args.mainloop.ptr_A = static_cast<const T *>(x);
    args.mainloop.ptr_B = static_cast<const T *>(w);
    args.mainloop.problem = shape;
    const int64_t k = p->k, m = (int64_t)p->n * p->oh * p->ow;
    typename Kernel::StrideD d{};
    get<0>(d) = k;
    get<2>(d) = m * k;
    args.epilogue.ptr_C = static_cast<const T *>(z ? z : y);
    args.epilogue.dC = d;
    args.epilogue.ptr_D = static_cast<T *>(y);
    args.epilogue.dD = d;
    conv_tree<T, Tile>::set(args.epilogue.thread, p->act, alpha, beta, z != nullptr, bias);
    args.hw_info.device_id = p->device;
    args.hw_info.sm_count = p->sm_count;
    return args;
  }
};

template <class T, class Cfg>
constexpr gk_conv_sm90_entry conv_pp_entry() {
  return conv_entry_of<conv_pp<T, Cfg>>();
}

}  // namespace sm90
}  // namespace gk

#endif /* GK_CONV_SM90_PINGPONG_CUH */
