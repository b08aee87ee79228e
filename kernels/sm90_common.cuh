/* sm90_common.cuh -- what gko's CUTLASS kernels (kernels/gemm_sm90.cuh,
 * kernels/conv_sm90.cuh) share: the epilogue's activation node, applied to
 * CUTLASS's linear-combination tree at run time, and the launch of a
 * CUTLASS kernel with its cluster shape. */
#ifndef GK_SM90_COMMON_CUH
#define GK_SM90_COMMON_CUH

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>
#include <cutlass/device_kernel.h>

#include "activation.cuh"
#include "status.h"

namespace gk {
namespace sm90 {

/* gko's GELU (act 2 or 3) over one fragment of the epilogue's registers,
 * kept out of line: CUTLASS unrolls the epilogue's subtile loop, and both
 * GELUs inlined into every subtile made the kernel outgrow the
 * instruction cache (docs/gemm.md, "The SM90 backend"). */
template <int N>
struct act_frag {
  float v[N];
};
template <bool ACC, int N>
__device__ __noinline__ act_frag<N> activate_frag(act_frag<N> x, int act) {
  switch (act) {
    case 2:
      for (int i = 0; i < N; i++) x.v[i] = gk::activate(x.v[i], 2, ACC);
      break;
    case 3:
      for (int i = 0; i < N; i++) x.v[i] = gk::activate(x.v[i], 3, ACC);
      break;
  }
  return x;
}

/* The pieces of the child alpha * acc + bias: an FMA node over its
 * children, and a run-time f32 scalar (alpha). */
template <class... Ch>
using fma_node = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<cutlass::homogeneous_multiply_add, float, float,
                                           cutlass::FloatRoundStyle::round_to_nearest>,
    Ch...>;
using scalar_node = cutlass::epilogue::fusion::Sm90ScalarBroadcast<
    float, cute::Stride<cute::_0, cute::_0, int64_t>>;

/* The epilogue's root node, over one child x = alpha * acc + bias:
 * act(x + beta * C), with gko's activation chosen at run time (ACC: the
 * accurate GELU, for f32 D) applied to each register subtile in reduce().
 * C is loaded and converted only where beta != 0: CUTLASS's own
 * beta * C node converts and multiplies the cleared C even at beta = 0. */
template <bool ACC>
struct act_node : cutlass::epilogue::fusion::Sm90VisitorImpl<> {
  struct SharedStorage {};
  struct Arguments {
    int act;    /* gemm_sm90.h's act */
    float beta; /* 0: C is not read */
  };
  using Params = Arguments;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const &, Arguments const &a,
                                                  void *) {
    return a;
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const &, Arguments const &) {
    return true;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const &, Arguments const &) {
    return 0;
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const &, Arguments const &, void *,
                                              cudaStream_t,
                                              cutlass::CudaHostAdapter * = nullptr) {
    return cutlass::Status::kSuccess;
  }

  CUTLASS_HOST_DEVICE act_node() : params() {}
  CUTLASS_HOST_DEVICE act_node(Params const &p, SharedStorage const &) : params(p) {}
  Params const params;

  CUTLASS_DEVICE bool is_C_load_needed() const { return params.beta != 0.0f; }
  CUTLASS_DEVICE bool is_producer_load_needed() const { return is_C_load_needed(); }

  template <class SrcTensor>
  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks {
    CUTLASS_DEVICE ConsumerStoreCallbacks(SrcTensor const &c, int a, float b)
        : tCrC(c), act(a), beta(b) {}
    SrcTensor const &tCrC; /* this thread's C subtile, (CPY, CPY_M, CPY_N) */
    int act;
    float beta;

    template <typename ElementAccumulator, typename ElementInput, int FragmentSize>
    CUTLASS_DEVICE cutlass::Array<float, FragmentSize> visit(
        cutlass::Array<ElementAccumulator, FragmentSize> const &, int epi_v, int, int,
        cutlass::Array<ElementInput, FragmentSize> const &x) {
      auto r = cutlass::NumericArrayConverter<float, ElementInput, FragmentSize>{}(x);
      if (beta != 0.0f) {
        using C = typename SrcTensor::value_type;
        auto c = cutlass::NumericArrayConverter<float, C, FragmentSize>{}(
            cute::recast<cutlass::Array<C, FragmentSize>>(tCrC)(epi_v));
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < FragmentSize; j++) r[j] = fmaf(beta, c[j], r[j]);
      }
      return r;
    }

    template <class STensor, class SyncFn, class VTensor>
    CUTLASS_DEVICE void reduce(STensor &&, SyncFn const &, int, int, bool,
                               VTensor visit_results) {
      if (act == 0) return;
      if (act == 1) { /* ReLU: two instructions, inline */
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < cute::size(visit_results); i++) {
          auto &f = visit_results(i);
          CUTLASS_PRAGMA_UNROLL
          for (int j = 0; j < f.size(); j++) f[j] = gk::activate(f[j], 1, ACC);
        }
        return;
      }
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < cute::size(visit_results); i++) {
        auto &f = visit_results(i);
        constexpr int N = cute::remove_cvref_t<decltype(f)>::kElements;
        act_frag<N> t;
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < N; j++) t.v[j] = f[j];
        t = activate_frag<ACC, N>(t, act);
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < N; j++) f[j] = t.v[j];
      }
    }
  };

  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(
      cutlass::epilogue::fusion::ConsumerStoreArgs<Args...> const &args) {
    using SrcTensor = cute::remove_cvref_t<decltype(args.tCrC)>;
    return ConsumerStoreCallbacks<SrcTensor>(args.tCrC, params.act, params.beta);
  }
};

/* Enqueues CUTLASS kernel K with its parameters, cluster shape and shared
 * memory on stream.  Launched here rather than by CUTLASS's adapters,
 * which read (and so clear) the caller's last CUDA error. */
template <class K>
gko_status_t launch_kernel(typename K::Params &params, cudaStream_t stream, const char *what) {
  using Cluster = typename K::DispatchPolicy::ClusterShape;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cute::size<0>(Cluster{});
  attr.val.clusterDim.y = cute::size<1>(Cluster{});
  attr.val.clusterDim.z = cute::size<2>(Cluster{});
  cudaLaunchConfig_t lc = {};
  lc.gridDim = K::get_grid_shape(params);
  lc.blockDim = K::get_block_shape();
  lc.dynamicSmemBytes = K::SharedStorageSize;
  lc.stream = stream;
  lc.attrs = &attr;
  lc.numAttrs = 1;
  void *kargs[] = {&params};
  cudaError_t e = cudaLaunchKernelExC(&lc, (const void *)cutlass::device_kernel<K>, kargs);
  if (e != cudaSuccess) return gk_cuda_fail(e, what);
  return GKO_STATUS_SUCCESS;
}

/* Plan time: lets kernel K use its shared memory on the current device. */
template <class K>
gko_status_t allow_smem(const char *what) {
  cudaError_t e = cudaFuncSetAttribute(cutlass::device_kernel<K>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)K::SharedStorageSize);
  if (e != cudaSuccess) return gk_cuda_fail(e, what);
  return GKO_STATUS_SUCCESS;
}

}  // namespace sm90
}  // namespace gk

#endif /* GK_SM90_COMMON_CUH */
