/* mma.cuh -- the PTX wrappers of the GEMM kernels (gemm_wmma_*.cu,
 * gemm_w8.cu): cp.async, ldmatrix and mma.sync m16n8k16 (emitted for
 * sm_80+), griddepcontrol, bulk copies and mbarriers (sm_90+).  Each
 * compiles to nothing below that architecture: the kernels that need them
 * are traps there (gemm_wmma.cuh, gemm_w8.cu), and a kernel without
 * griddepcontrol simply waits for the one ahead of it. */
#ifndef GK_MMA_CUH
#define GK_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

namespace gk {

/* ---- cp.async ---------------------------------------------------------- */

/* L2LINE: with the hint to fetch the whole 128-byte L2 line around gmem
 * (PTX ISA, cp.async's .L2::128B prefetch size) */
template <bool L2LINE = false>
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  if constexpr (L2LINE)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(src_bytes));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(src_bytes));
#endif
}
/* the same through L1 (.ca): for data that other warps of the SM read too */
__device__ __forceinline__ void cp_async16_l1(void *smem, const void *gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
/* the same for a run-time count (the instruction takes an immediate) */
__device__ __forceinline__ void cp_async_wait_dyn(int n) {
  switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    default: cp_async_wait<6>(); break;
  }
}

/* ---- mma.sync and ldmatrix ---------------------------------------------- */

/* D += A B, m16n8k16 (PTX ISA, mma.sync), f32 accumulate: lane (g = lane / 4,
 * t = lane % 4) holds a0..a3 = A(g, 2t..), A(g + 8, 2t..), A(g, 2t + 8..),
 * A(g + 8, 2t + 8..), b0, b1 = B(2t.., g), B(2t + 8.., g) and d = D(g, 2t),
 * D(g, 2t + 1), D(g + 8, 2t), D(g + 8, 2t + 1). */
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

/* ldmatrix.x4 (sm_75+; PTX ISA "ldmatrix"): four 8 x 8 matrices of 16-bit
 * elements, lanes 8 i .. 8 i + 7 giving the shared addresses of matrix i's
 * 16-byte rows; lane (g, t) receives of matrix i the elements (row g,
 * columns 2t and 2t + 1), or with TRANS (.trans) the elements (row 2t,
 * column g) and (row 2t + 1, column g) -- the transposed matrix's
 * A-fragment pair. */
template <bool TRANS = false>
__device__ __forceinline__ void ldsm_x4(unsigned addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                        uint32_t &r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned addr, uint32_t &r0, uint32_t &r1,
                                              uint32_t &r2, uint32_t &r3) {
  ldsm_x4<true>(addr, r0, r1, r2, r3);
}

/* ---- griddepcontrol ----------------------------------------------------- */

/* Programmatic dependent launch (sm_90+; PTX ISA "griddepcontrol"):
 * launch_dependents lets the next kernel of the stream, if it was launched
 * with programmatic stream serialization, start before this one ends; wait
 * blocks until the kernels this one depends on have completed and their
 * writes are visible (at once when it was launched the ordinary way). */
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* ---- bulk copies and transaction barriers (sm_90+) ---------------------- */

/* cp.async.bulk: `bytes` (a multiple of 16) from 16-byte-aligned global
 * memory into shared memory by the copy engine, counted against the
 * transaction count of the mbarrier at bar (PTX ISA, "cp.async.bulk" and
 * "mbarrier"; shared addresses as from __cvta_generic_to_shared). */
__device__ __forceinline__ void bulk_g2s(unsigned dst, const void *src, unsigned bytes,
                                         unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
/* orders this thread's generic-proxy accesses to shared memory (and those
 * it has acquired through a barrier) before its later bulk copies */
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
/* makes the initialized barriers visible to the copy engine */
__device__ __forceinline__ void mbar_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/* one arrival that also expects `bytes` more of transactions this phase */
__device__ __forceinline__ void mbar_arrive_tx(unsigned bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
/* until the phase of parity `parity` has completed */
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n"
               ".reg .pred p;\n"
               "GK_MBAR_WAIT_%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra GK_MBAR_WAIT_%=;\n"
               "}\n" ::"r"(bar), "r"(parity)
               : "memory");
#endif
}

} // namespace gk

#endif /* GK_MMA_CUH */
