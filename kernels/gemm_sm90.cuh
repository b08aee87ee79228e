/* gemm_sm90.cuh -- gko's Hopper GEMM as CUTLASS 3.x types: the mainloop
 * and epilogue collectives CUTLASS's builders make for one tile
 * configuration; the epilogue is CUTLASS's alpha * acc + beta * C + bias
 * tree under gko's activation node (the activation chosen at run time).  Included by the instantiation files
 * kernels/gemm_sm90_<ab>_<cd>.cu, one per type pair, each defining the
 * four operand layouts x the configurations of gemm_sm90.h. */
#ifndef GK_GEMM_SM90_CUH
#define GK_GEMM_SM90_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/version.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "gemm_sm90.h"
#include "sm90_common.cuh"

namespace gk {
namespace sm90 {

using namespace cute;

/* gemm_sm90.h's configurations */
struct cfg_coop_256 {
  using Tile = Shape<_128, _256, _64>;
  using Cluster = Shape<_2, _1, _1>;
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epi = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using EpiTile = cutlass::epilogue::collective::EpilogueTileAuto;
};
/* 128 x 192: 6 tile rows x 22 tile columns = 132 tiles at 768 x 4096 (the
 * lt view of x W^T with 768 output features), one per SM of an H200 */
struct cfg_coop_192 {
  using Tile = Shape<_128, _192, _64>;
  using Cluster = Shape<_2, _1, _1>;
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epi = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using EpiTile = cutlass::epilogue::collective::EpilogueTileAuto;
};
struct cfg_pingpong {
  using Tile = Shape<_128, _128, _64>;
  using Cluster = Shape<_1, _2, _1>;
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epi = cutlass::epilogue::TmaWarpSpecialized;
  /* 64x64 epilogue subtiles, not CUTLASS's default 64x32: half the
   * subtile steps, twice the elements per activation call */
  using EpiTile = Shape<_64, _64>;
};
/* opa 0: A column-major m x k (M contiguous), 1: k x m (K contiguous);
 * opb 0: B column-major k x n (K contiguous), 1: n x k (N contiguous). */
template <int OPA>
using layout_a = cute::conditional_t<OPA == 0, cutlass::layout::ColumnMajor,
                                     cutlass::layout::RowMajor>;
template <int OPB>
using layout_b = cute::conditional_t<OPB == 0, cutlass::layout::ColumnMajor,
                                     cutlass::layout::RowMajor>;

/* A CuTe (row, column, batch) stride of a matrix whose contiguous mode is
 * static 1: the other mode gets ld. */
template <class S>
S stride_of(int64_t ld, int64_t batch_stride) {
  S s{};
  if constexpr (cute::is_static<cute::tuple_element_t<0, S>>::value) {
    cute::get<1>(s) = ld;
  } else {
    cute::get<0>(s) = ld;
  }
  cute::get<2>(s) = batch_stride;
  return s;
}

template <class AB, class CD, int OPA, int OPB, class Cfg>
struct gemm {
  static constexpr int kAlignAB = 16 / (int)sizeof(AB);
  static constexpr int kAlignCD = 16 / (int)sizeof(CD);
  /* act(alpha * acc + bias[row] + beta * C) */
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      act_node<cute::is_same_v<CD, float>>,
      fma_node<scalar_node, cutlass::epilogue::fusion::Sm90AccFetch,
               cutlass::epilogue::fusion::Sm90ColBroadcast<0, typename Cfg::Tile, CD, float,
                                                           Stride<_1, _0, int64_t>, kAlignCD>>>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, typename Cfg::Tile,
      typename Cfg::Cluster, typename Cfg::EpiTile, float, float, CD,
      cutlass::layout::ColumnMajor, kAlignCD, CD, cutlass::layout::ColumnMajor, kAlignCD,
      typename Cfg::Epi, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, AB, layout_a<OPA>, kAlignAB, AB,
      layout_b<OPB>, kAlignAB, float, typename Cfg::Tile, typename Cfg::Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      typename Cfg::Kernel>::CollectiveOp;
  /* CUTLASS's persistent tile scheduler (the default) */
  using Kernel =
      cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Arguments = typename Kernel::Arguments;

  /* The kernel's arguments; null pointers at plan time.  C NULL: D stands
   * in for it (beta is 0 then, and the epilogue does not read C). */
  static Arguments arguments(const gk_sm90_problem *p, float alpha, float beta, const void *a,
                             const void *b, const void *c, void *d, const void *bias) {
    const bool has_c = c != nullptr;
    Arguments args{};
    args.mode = p->batch > 1 ? cutlass::gemm::GemmUniversalMode::kBatched
                             : cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {(int)p->m, (int)p->n, (int)p->k, (int)p->batch};
    args.mainloop.ptr_A = static_cast<const AB *>(a);
    args.mainloop.dA = stride_of<typename Kernel::StrideA>(p->lda, p->stride_a);
    args.mainloop.ptr_B = static_cast<const AB *>(b);
    args.mainloop.dB = stride_of<typename Kernel::StrideB>(p->ldb, p->stride_b);
    args.epilogue.ptr_C = static_cast<const CD *>(has_c ? c : d);
    args.epilogue.dC = stride_of<typename Kernel::StrideC>(has_c ? p->ldc : p->ldd,
                                                           has_c ? p->stride_c : p->stride_d);
    args.epilogue.ptr_D = static_cast<CD *>(d);
    args.epilogue.dD = stride_of<typename Kernel::StrideD>(p->ldd, p->stride_d);
    /* the tree's arguments: op_0 alpha * acc + bias (alpha, acc, bias),
     * op_1 the root: beta * C and the activation */
    auto &lin = args.epilogue.thread.op_0;
    lin.op_0.scalars[0] = alpha;
    lin.op_2.ptr_col = static_cast<const CD *>(bias);
    cute::get<2>(lin.op_2.dCol) = p->stride_bias;
    args.epilogue.thread.op_1 = {p->act, has_c ? beta : 0.0f};
    args.hw_info.device_id = p->device;
    args.hw_info.sm_count = p->sm_count;
    return args;
  }

  static gko_status_t setup(const gk_sm90_problem *p, size_t *ws_bytes) {
    Arguments args = arguments(p, 1.0f, 0.0f, nullptr, nullptr, nullptr, nullptr, nullptr);
    cutlass::Status s = Device::can_implement(args);
    if (s != cutlass::Status::kSuccess)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "SM90: CUTLASS cannot run this problem (%s): TMA needs the leading "
                     "dimensions, batch strides and contiguous extents in multiples of 16 "
                     "bytes",
                     cutlass::cutlassGetStatusString(s));
    *ws_bytes = Device::get_workspace_size(args);
    return allow_smem<Kernel>("cudaFuncSetAttribute (SM90 GEMM)");
  }

  static gko_status_t launch(const gk_sm90_problem *p, float alpha, float beta, const void *a,
                             const void *b, const void *c, void *d, const void *bias, void *ws,
                             void *stream) {
    Arguments args = arguments(p, alpha, beta, a, b, c, d, bias);
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    cutlass::Status s = Kernel::initialize_workspace(args, ws, st, nullptr);
    if (s != cutlass::Status::kSuccess)
      return gk_fail(GKO_STATUS_INTERNAL, "SM90: CUTLASS workspace: %s",
                     cutlass::cutlassGetStatusString(s));
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, ws);
    return launch_kernel<Kernel>(params, st, "SM90 GEMM launch");
  }
};

template <class AB, class CD, int OPA, int OPB, class Cfg>
constexpr gk_sm90_entry entry_of() {
  return {&gemm<AB, CD, OPA, OPB, Cfg>::setup, &gemm<AB, CD, OPA, OPB, Cfg>::launch};
}

/* The four layouts of one type pair and configuration, in table order. */
#define GK_SM90_LAYOUTS(AB, CD, CFG)                                               \
  {                                                                                \
    gk::sm90::entry_of<AB, CD, 0, 0, CFG>(), gk::sm90::entry_of<AB, CD, 0, 1, CFG>(), \
        gk::sm90::entry_of<AB, CD, 1, 0, CFG>(), gk::sm90::entry_of<AB, CD, 1, 1, CFG>() \
  }
#define GK_SM90_NONE {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}}

}  // namespace sm90
}  // namespace gk

#endif /* GK_GEMM_SM90_CUH */
