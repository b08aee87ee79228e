/* gemm_wmma_launch.cu -- the host side of gko's WMMA GEMM (the interface of
 * kernels/gemm_wmma.h): plan-time setup (shared-memory limits, occupancy,
 * the DECODE configuration) and the launch of the kernel a plan takes --
 * TILED (gemm_wmma_tiled.cu), SKINNY or DECODE (gemm_wmma_skinny.cu,
 * gemm_wmma_decode.cu) and, when k is split, the split-k sum.  No device
 * code. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "gemm_wmma.h"
#include "common.cuh"
#include "gemm_wmma.cuh"

namespace {

size_t skinny_smem(int wk, int bnw, int stages) {
  const int bk = kSkinnyTile / bnw;
  const int stage = wk ? SkinnyLayout<1>::stage(bnw, bk) : SkinnyLayout<0>::stage(bnw, bk);
  return (size_t)stages * stage * 2 + 8 * 256 * 4; /* stages + the k-group sums */
}

/* The skinny mapping of a lt-view problem: W the big operand, X the small. */
struct SkinnyMap {
  int small_n; /* 1: n <= 16 (X = op(B)), 0: m <= 16 (X = op(A)^T) */
  int wk;      /* W's k is contiguous */
  int64_t nb, ns, swj, swp, sxi, sxp, sdj, sdi, scj, sci, bw, bx;
  int bias_on_j;
};

SkinnyMap skinny_map(const gk_wmma_problem *p) {
  SkinnyMap s;
  s.small_n = gk_wmma_small_n(p);
  if (s.small_n) { /* W = op(A) (m x k), X = op(B)^T (n x k), D(j = row, i = col) */
    s.nb = p->m;
    s.ns = p->n;
    s.swj = p->opa ? p->lda : 1;
    s.swp = p->opa ? 1 : p->lda;
    s.sxi = p->opb ? 1 : p->ldb;
    s.sxp = p->opb ? p->ldb : 1;
    s.sdj = 1, s.sdi = p->ldd;
    s.scj = 1, s.sci = p->ldc;
    s.bw = p->stride_a, s.bx = p->stride_b;
    s.bias_on_j = p->bias_on_rows;
  } else { /* W = op(B)^T (n x k), X = op(A) (m x k), D(j = col, i = row) */
    s.nb = p->n;
    s.ns = p->m;
    s.swj = p->opb ? 1 : p->ldb;
    s.swp = p->opb ? p->ldb : 1;
    s.sxi = p->opa ? p->lda : 1;
    s.sxp = p->opa ? 1 : p->lda;
    s.sdj = p->ldd, s.sdi = 1;
    s.scj = p->ldc, s.sci = 1;
    s.bw = p->stride_b, s.bx = p->stride_a;
    s.bias_on_j = !p->bias_on_rows;
  }
  s.wk = s.swp == 1;
  return s;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
/* a 16-bit operand whose vectors along the contiguous dimension are
 * 16-byte aligned in every line and batch */
bool vec16(const void *p, int64_t ld, int64_t stride, int64_t batch) {
  return aligned16(p) && ld % 8 == 0 && (batch <= 1 || stride % 8 == 0);
}
bool vec_cd(const void *p, int cd, int64_t ld, int64_t stride, int64_t batch) {
  const int64_t g = cd == GKO_DTYPE_F32 ? 4 : 8;
  return p && aligned16(p) && ld % g == 0 && (batch <= 1 || stride % g == 0);
}

gko_status_t set_smem(const void *fn, size_t bytes, const char *what) {
  cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)bytes);
  if (e != cudaSuccess) return gk_cuda_fail(e, what);
  return GKO_STATUS_SUCCESS;
}

/* A DECODE kernel's attributes and resident blocks per SM with its ring
 * (*occ = 0 when the ring and the reduction buffer exceed the block limit
 * optin: checked before any attribute is set, so that a CUDA call that
 * fails is a real error). */
gko_status_t decode_fit(const void *fn, int optin, cudaFuncAttributes *fa, int *occ) {
  *occ = 0;
  cudaError_t e = cudaFuncGetAttributes(fa, fn);
  if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel: cudaFuncGetAttributes");
  if (fa->sharedSizeBytes + kDecodeSmem > (size_t)optin) return GKO_STATUS_SUCCESS;
  gko_status_t st = set_smem(fn, kDecodeSmem, "WMMA decode kernel: cudaFuncSetAttribute");
  if (st) return st;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, fn, kThreads, kDecodeSmem);
  if (e != cudaSuccess)
    return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (WMMA decode kernel)");
  return GKO_STATUS_SUCCESS;
}

/* DECODE: warps per tile, tiles per block and k splits for `tiles` tiles
 * on `sms` SMs holding `occ` blocks each. */
struct DecodeShape {
  int kw, per;
  int64_t splits;
};
DecodeShape decode_shape(int64_t tiles, int occ, int sms, int64_t k) {
  /* Warps per tile (kw, taking its k spans in turn): the most, up
   * to 8, with which all the tiles' warps are resident at once (one wave:
   * every warp streams the same amount at the same rate, no tail); when
   * even 8 warps per tile fill at most half the GPU's warp slots, k is
   * split across blocks too: as many splits as still fit one wave (each
   * at least 8 spans long).  Rounding the split count up instead left a
   * second, partial wave (measured: docs/performance.md). */
  const int64_t slots = (int64_t)occ * sms * kDecodeWarps;
  int kw = kDecodeWarps;
  while (kw > 1 && tiles * kw > slots) kw /= 2;
  int64_t splits = 1;
  if (kw == kDecodeWarps && 2 * tiles * kDecodeWarps <= slots) {
    splits = slots / (tiles * kDecodeWarps);
    const int64_t most = k / (kDecodeWarps * kDecodeSpan);
    if (splits > most) splits = most;
    if (splits > 64) splits = 64;
    if (splits < 1) splits = 1;
  }
  /* Tiles per block: 8 / kw, unless that leaves SMs without a block
   * (16 x 11008 at ns > 8: 688 tiles, kw = 1, one block per SM: 86 blocks
   * of 8 tiles on 132 SMs); then the fewest per block that still fit one
   * wave (6: 115 blocks), the block's other warps idle. */
  int per = kDecodeWarps / kw;
  if (splits == 1) {
    const int64_t room = (int64_t)occ * sms;
    if ((tiles + per - 1) / per < room) {
      const int64_t even = (tiles + room - 1) / room;
      if (even < per) per = (int)even;
    }
  }
  return DecodeShape{kw, per, splits};
}

} // namespace

extern "C" gko_status_t gk_wmma_setup(const gk_wmma_problem *p, gk_wmma_config *cfg, int cc) {
  if (p->ab_dtype != GKO_DTYPE_F16 && p->ab_dtype != GKO_DTYPE_BF16)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: f16 or bf16 inputs only");
  if (p->ab_dtype == GKO_DTYPE_BF16 && cc < 80)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "WMMA: bf16 Tensor-Core instructions need sm_80 or newer; this GPU is sm_%d",
                   cc);
  int dev = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaDeviceGetAttribute");
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  const void *fn_sync, *fn_async;
  size_t smem_sync, smem_async;
  if (cfg->kind == GK_WMMA_TILED) {
    fn_sync = gk_wmma::tiled_kernel(dt, p->opa, p->opb, 0);
    fn_async = gk_wmma::tiled_kernel(dt, p->opa, p->opb, 1);
    smem_sync = gk_wmma::tiled_smem_bytes(p->opa, p->opb, 0);
    smem_async = gk_wmma::tiled_smem_bytes(p->opa, p->opb, 1);
  } else {
    const SkinnyMap s = skinny_map(p);
    fn_sync = gk_wmma::skinny_kernel(dt, s.wk, 0);
    fn_async = gk_wmma::skinny_kernel(dt, s.wk, 1);
    smem_sync = skinny_smem(s.wk, cfg->bnw, kSkinnySyncStages);
    /* every bnw of the autotuner may use the same kernel: the largest */
    size_t mx_sync = 0, mx_async = 0, min_async = 0;
    for (int b = 16; b <= 64; b *= 2) {
      const size_t sy = skinny_smem(s.wk, b, kSkinnySyncStages);
      const size_t lo = skinny_smem(s.wk, b, kSkinnyMinStages);
      const size_t hi = skinny_smem(s.wk, b, kSkinnyMaxStages);
      if (sy > mx_sync) mx_sync = sy;
      if (lo > min_async) min_async = lo;
      if (hi > mx_async) mx_async = hi;
    }
    if ((int)mx_sync > optin)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                     "WMMA: the skinny kernel needs %zu bytes of shared memory per block, this "
                     "GPU allows %d",
                     mx_sync, optin);
    gko_status_t st = set_smem(fn_sync, mx_sync, "WMMA skinny kernel: cudaFuncSetAttribute");
    if (st) return st;
    /* cp.async: usable when the shallowest pipeline fits for every bnw; the
     * plan picks the depth (<= max_stages) from the occupancy it gives */
    if (mx_async > (size_t)optin) mx_async = (size_t)optin;
    cfg->async_ok = cc >= 80 && min_async <= (size_t)optin;
    if (cfg->async_ok &&
        (st = set_smem(fn_async, mx_async, "WMMA skinny kernel: cudaFuncSetAttribute")))
      return st;
    cfg->max_stages = kSkinnyMinStages;
    for (int S = kSkinnyMaxStages; S > kSkinnyMinStages; S--) {
      int fits = 1;
      for (int b = 16; b <= 64; b *= 2) fits &= skinny_smem(s.wk, b, S) <= mx_async;
      if (fits) {
        cfg->max_stages = S;
        break;
      }
    }
    cfg->stages = cfg->async_ok ? kSkinnyMinStages : kSkinnySyncStages;
    const int occ = gk_wmma_skinny_occupancy(p, cfg);
    if (occ < 0) return GKO_STATUS_CUDA_ERROR; /* detail set */
    if (occ == 0)
      return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: the skinny kernel does not fit on this GPU");
    cfg->blocks_per_sm = occ;
    return GKO_STATUS_SUCCESS;
  }
  if ((int)smem_sync > optin)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "WMMA: the kernel needs %zu bytes of shared memory per block, this GPU "
                   "allows %d",
                   smem_sync, optin);
  gko_status_t st = GKO_STATUS_SUCCESS;
  if (cfg->kind == GK_WMMA_TILED) st = set_smem(fn_sync, smem_sync, "WMMA kernel: cudaFuncSetAttribute");
  if (st) return st;
  cfg->async_ok = cc >= 80 && (int)smem_async <= optin;
  if (cfg->async_ok && cfg->kind == GK_WMMA_TILED &&
      (st = set_smem(fn_async, smem_async, "WMMA kernel: cudaFuncSetAttribute")))
    return st;
  int blocks = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, cfg->async_ok ? fn_async : fn_sync,
                                                    kThreads,
                                                    cfg->async_ok ? smem_async : smem_sync);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  cfg->blocks_per_sm = blocks;
  if (blocks == 0)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED, "WMMA: the kernel does not fit on this GPU");
  return GKO_STATUS_SUCCESS;
}

extern "C" int gk_wmma_skinny_occupancy(const gk_wmma_problem *p, const gk_wmma_config *cfg) {
  const SkinnyMap s = skinny_map(p);
  const int dt = p->ab_dtype == GKO_DTYPE_BF16, async = cfg->async_ok;
  const size_t smem = skinny_smem(s.wk, cfg->bnw, async ? cfg->stages : kSkinnySyncStages);
  int blocks = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, gk_wmma::skinny_kernel(dt, s.wk, async), kThreads, smem);
  if (e != cudaSuccess) {
    gk_cuda_fail(e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor (WMMA skinny kernel)");
    return -1;
  }
  return blocks;
}

extern "C" size_t gk_wmma_partials_bytes(const gk_wmma_problem *p, const gk_wmma_config *cfg) {
  if (cfg->kind != GK_WMMA_SKINNY) return 0;
  int splits = cfg->splits;
  if (cfg->decode && cfg->dsplits > splits) splits = cfg->dsplits;
  if (splits <= 1) return 0;
  const SkinnyMap s = skinny_map(p);
  return (size_t)p->batch * (size_t)splits * (size_t)s.ns * (size_t)s.nb * sizeof(float);
}

extern "C" int gk_wmma_w_k_contiguous(const gk_wmma_problem *p) { return skinny_map(p).wk; }

extern "C" int gk_wmma_decode_layout_ok(const gk_wmma_problem *p) {
  const SkinnyMap s = skinny_map(p);
  /* k contiguous in X; in W either k (x W^T) or the rows (x B); 16-byte
   * vectors along each one's contiguous dimension in every line and batch
   * (the pointers are checked at execute) */
  if (s.sxp != 1 || (!s.wk && s.swj != 1)) return 0;
  const int64_t wld = s.wk ? s.swj : s.swp;
  return !(wld % 8 || (s.ns > 1 && s.sxi % 8) || (p->batch > 1 && (s.bw % 8 || s.bx % 8)));
}

extern "C" gko_status_t gk_wmma_decode_config(const gk_wmma_problem *p, gk_wmma_config *cfg,
                                              int cc, int sms) {
  cfg->decode = 0;
  cfg->dpdl_ok = 0;
  cfg->dsplits = 1;
  cfg->drows = kDecodeRows;
  cfg->dkchunk = p->k;
  if (cfg->kind != GK_WMMA_SKINNY || cc < 80 || p->k <= 0 || !gk_wmma_decode_layout_ok(p))
    return GKO_STATUS_SUCCESS;
  const SkinnyMap s = skinny_map(p);
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  int var = s.ns > 8;
  const void *fn = s.wk ? gk_wmma::decode_kernel(dt, var) : gk_wmma::decode_kn_kernel(dt, var);
  /* the ring and the reduction buffer must fit a block's shared memory
   * (not on sm_86 / sm_89, 99 KB: the SKINNY configuration stays) */
  int dev = 0, optin = 0, occ = 0;
  cudaFuncAttributes fa;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel: device attributes");
  gko_status_t st = decode_fit(fn, optin, &fa, &occ);
  if (st) return st;
  if (occ <= 0) return GKO_STATUS_SUCCESS; /* does not fit: SKINNY stays */
  if (sms < 1) sms = 1;
  int rows = kDecodeRows;
  int64_t tiles = (s.nb + rows - 1) / rows * p->batch;
  /* ns > 8 with more than half as many tiles as warp slots (each tile
   * would get one warp): the variant with two blocks per SM, if it has
   * them.  Two blocks per SM were faster at 11008 and 14336 rows, slower
   * at 4096 rows and below and even at 8192, which therefore keep one
   * (measured: docs/performance.md). */
  if (s.wk && var == 1 && 2 * tiles > (int64_t)occ * sms * kDecodeWarps) {
    const void *fn2 = gk_wmma::decode_kernel(dt, 2);
    cudaFuncAttributes fa2;
    int occ2 = 0;
    if ((st = decode_fit(fn2, optin, &fa2, &occ2))) return st;
    if (occ2 > occ) {
      var = 2;
      fn = fn2;
      fa = fa2;
      occ = occ2;
    }
  }
  DecodeShape ds = decode_shape(tiles, occ, sms, p->k);
  /* x B: the kernel with 64-row tiles (128-byte k lines) where it needs no
   * k split, or where both need one and ns <= 8; else 16-row tiles.  The
   * 64-row tiles were faster at m <= 8 with many rows, where both split k
   * and at m = 16 with 8192 rows; slower where only they would split k and
   * at 16 x 1024; and at m <= 8 with 8192 rows (64-row tiles: 2 splits)
   * slower with W static, so the 16-row tiles stay there (measured:
   * docs/performance.md). */
  if (!s.wk) {
    const void *fnw = gk_wmma::decode_knw_kernel(dt, var);
    cudaFuncAttributes faw;
    int occw = 0;
    if ((st = decode_fit(fnw, optin, &faw, &occw))) return st;
    if (occw > 0) {
      const int64_t tw = (s.nb + kDecodeKnRows - 1) / kDecodeKnRows * p->batch;
      const DecodeShape dw = decode_shape(tw, occw, sms, p->k);
      if (dw.splits == 1 || (s.ns <= 8 && ds.splits > 1)) {
        rows = kDecodeKnRows;
        tiles = tw;
        ds = dw;
        fa = faw;
        occ = occw;
      }
    }
  }
  int64_t chunk = (p->k + ds.splits - 1) / ds.splits;
  chunk = (chunk + kDecodeSpan - 1) / kDecodeSpan * kDecodeSpan;
  cfg->decode = 1;
  /* griddepcontrol exists in the sm_90+ code only: a build without it
   * (GKO_ARCHS below 90, the PTX compiled for this GPU at load time) must
   * not be launched with programmatic stream serialization */
  cfg->dpdl_ok = cc >= 90 && fa.ptxVersion >= 90;
  cfg->dvar = var;
  cfg->drows = rows;
  cfg->dkw = ds.kw;
  cfg->dper = ds.per;
  cfg->dkchunk = chunk;
  cfg->dsplits = (int)((p->k + chunk - 1) / chunk);
  cfg->dblocks_per_sm = occ;
  return GKO_STATUS_SUCCESS;
}

extern "C" gko_status_t gk_wmma_launch(const gk_wmma_problem *p, const gk_wmma_config *cfg,
                                       float alpha, float beta, const void *a, const void *b,
                                       const void *c, void *d, const void *bias, void *ws,
                                       void *stream) {
  const int dt = p->ab_dtype == GKO_DTYPE_BF16;
  const int64_t gy = gk::grid_y(p->batch);
  cudaError_t e;
  if (cfg->kind == GK_WMMA_TILED) {
    TiledParams P;
    P.a = static_cast<const uint16_t *>(a);
    P.b = static_cast<const uint16_t *>(b);
    P.c = c;
    P.d = d;
    P.bias = bias;
    P.m = p->m, P.n = p->n, P.k = p->k, P.batch = p->batch;
    P.lda = p->lda, P.ldb = p->ldb, P.ldc = p->ldc, P.ldd = p->ldd;
    P.sa = p->stride_a, P.sb = p->stride_b, P.sc = p->stride_c, P.sd = p->stride_d;
    P.sbias = p->stride_bias;
    P.vec_a = vec16(a, p->lda, p->stride_a, p->batch);
    P.vec_b = vec16(b, p->ldb, p->stride_b, p->batch);
    const int async = cfg->async_ok && P.vec_a && P.vec_b;
    const int bm = async ? AsyncCfg::BM : SyncCfg::BM, bn = async ? AsyncCfg::BN : SyncCfg::BN;
    P.tiles_m = (p->m + bm - 1) / bm;
    P.tiles_n = (p->n + bn - 1) / bn;
    P.alpha = alpha;
    P.beta = beta;
    P.act = p->act;
    P.cd = p->cd_dtype;
    P.bias_mode = bias ? (p->bias_on_rows ? 1 : 2) : 0;
    P.vec_c = vec_cd(c, p->cd_dtype, p->ldc, p->stride_c, p->batch);
    P.vec_d = vec_cd(d, p->cd_dtype, p->ldd, p->stride_d, p->batch);
    const int64_t gx = gk::grid_x(P.tiles_m * P.tiles_n);
    void *args[] = {&P};
    e = cudaLaunchKernel(gk_wmma::tiled_kernel(dt, p->opa, p->opb, async),
                         dim3((unsigned)gx, (unsigned)gy), dim3(kThreads), args,
                         gk_wmma::tiled_smem_bytes(p->opa, p->opb, async), (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA GEMM kernel launch");
    return GKO_STATUS_SUCCESS;
  }
  const SkinnyMap s = skinny_map(p);
  SkinnyParams P;
  P.w = static_cast<const uint16_t *>(s.small_n ? a : b);
  P.x = static_cast<const uint16_t *>(s.small_n ? b : a);
  P.c = c;
  P.d = d;
  P.bias = bias;
  P.partials = static_cast<float *>(ws);
  P.nb = s.nb, P.ns = s.ns, P.k = p->k, P.batch = p->batch;
  P.swj = s.swj, P.swp = s.swp, P.sxi = s.sxi, P.sxp = s.sxp;
  P.sdj = s.sdj, P.sdi = s.sdi, P.scj = s.scj, P.sci = s.sci;
  P.bw = s.bw, P.bx = s.bx, P.bc = p->stride_c, P.bd = p->stride_d, P.bbias = p->stride_bias;
  P.bnw = cfg->bnw;
  P.bk = kSkinnyTile / cfg->bnw;
  P.stages = kSkinnySyncStages;
  P.tiles = (s.nb + P.bnw - 1) / P.bnw;
  P.splits = cfg->splits;
  P.kchunk = cfg->kchunk;
  P.alpha = alpha;
  P.beta = beta;
  P.act = p->act;
  P.cd = p->cd_dtype;
  P.has_bias = bias != nullptr;
  P.bias_on_j = s.bias_on_j;
  /* cp.async: W vectorizable along its contiguous dimension, X along k */
  const void *w = P.w, *x = P.x;
  const bool w_vec = vec16(w, s.wk ? s.swj : s.swp, s.bw, p->batch);
  const bool x_vec = s.sxp == 1 && vec16(x, s.ns > 1 ? s.sxi : 8, s.bx, p->batch);
  const int async = cfg->async_ok && w_vec && x_vec;
  if (async) P.stages = cfg->stages;
  P.vec_w = w_vec;
  P.vec_x = x_vec;
  void *args[] = {&P};
  if (cfg->decode && w_vec && x_vec) {
    P.tiles = (s.nb + cfg->drows - 1) / cfg->drows;
    P.splits = cfg->dsplits;
    P.kchunk = cfg->dkchunk;
    P.kw = cfg->dkw;
    P.per = cfg->dper;
    const int64_t gx = gk::grid_x((P.tiles + P.per - 1) / P.per * P.splits);
    cudaLaunchConfig_t lc = {};
    cudaLaunchAttribute at[1] = {};
    lc.gridDim = dim3((unsigned)gx, (unsigned)gy);
    lc.blockDim = dim3(kThreads);
    lc.dynamicSmemBytes = kDecodeSmem;
    lc.stream = (cudaStream_t)stream;
    if (cfg->dpdl) { /* W promised static (GKO_GEMM_ATTR_STATIC_OPERANDS) */
      at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      at[0].val.programmaticStreamSerializationAllowed = 1;
      lc.attrs = at;
      lc.numAttrs = 1;
    }
    e = cudaLaunchKernelExC(
        &lc,
        s.wk ? gk_wmma::decode_kernel(dt, cfg->dvar)
        : cfg->drows == kDecodeKnRows ? gk_wmma::decode_knw_kernel(dt, cfg->dvar)
                                      : gk_wmma::decode_kn_kernel(dt, cfg->dvar),
        args);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA decode kernel launch");
  } else {
    const int64_t gx = gk::grid_x(P.tiles * P.splits);
    e = cudaLaunchKernel(gk_wmma::skinny_kernel(dt, s.wk, async), dim3((unsigned)gx, (unsigned)gy),
                         dim3(kThreads), args, skinny_smem(s.wk, P.bnw, P.stages),
                         (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA skinny kernel launch");
  }
  if (P.splits > 1) {
    const int64_t total = s.ns * s.nb * p->batch;
    const int64_t grid = gk::grid_x((total + kThreads - 1) / kThreads);
    e = cudaLaunchKernel(gk_wmma::skinny_reduce_kernel(), dim3((unsigned)grid), dim3(kThreads),
                         args, 0, (cudaStream_t)stream);
    if (e != cudaSuccess) return gk_cuda_fail(e, "WMMA split-K reduction kernel launch");
  }
  return GKO_STATUS_SUCCESS;
}

