/* handle.c -- gko_create / gko_destroy and the checks every entry point
 * shares (current device, stream device, pointer accessibility). */
#include <stdint.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "core.h"
#include "diag.h"
#include "gemm_state.h"

GKO_API gko_status_t gko_create(gko_handle_t *handle) {
  gk_clear_error();
  if (!handle) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");

  int drv = 0, count = 0, dev = 0, cc = 0;
  cudaDriverGetVersion(&drv);
  cudaError_t ce = drv ? cudaGetDeviceCount(&count) : cudaErrorNoDevice;
  if (drv && ce == cudaSuccess && count > 0) {
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaGetDevice");
    int major = 0, minor = 0;
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess)
      e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaDeviceGetAttribute");
    cc = major * 10 + minor;
  }
  char why[512];
  gko_status_t s = gk_classify_environment(drv, CUDART_VERSION, drv ? (int)ce : 0,
                                           count, cc, why, sizeof why);
  if (s != GKO_STATUS_SUCCESS) return gk_fail(s, "%s", why);

  struct gko_handle_s *h = calloc(1, sizeof *h);
  if (!h) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the handle failed");
  static unsigned long serials;
  h->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
  h->device = dev;
  h->cc = cc;
  const int *sass;
  int ns = gk_compiled_sass(&sass);
  h->code_path = gk_code_path_for(cc, sass, ns, gk_compiled_ptx());
  cudaError_t e = cudaDeviceGetAttribute(&h->sm_count, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&h->pageable_access, cudaDevAttrPageableMemoryAccess, dev);
  if (e != cudaSuccess) {
    free(h);
    return gk_cuda_fail(e, "cudaDeviceGetAttribute");
  }
  /* Loads the module: a missing kernel image shows up here, not at the
   * first launch. */
  s = gk_gelu_occupancy(h->gelu_occ);
  if (s != GKO_STATUS_SUCCESS) {
    free(h);
    return s;
  }
  /* GEMM: the device's shared cuBLASLt handle and this handle's cache. */
  s = gk_gemm_state_create(h->device, &h->gemm);
  if (s != GKO_STATUS_SUCCESS) {
    free(h);
    return s;
  }
  if ((s = gk_live_add(h, GK_LIVE_HANDLE))) {
    gk_gemm_state_destroy(h->gemm);
    free(h);
    return s;
  }
  *handle = h;
  return GKO_STATUS_SUCCESS;
}

static void gk_handle_release(void *p) {
  gko_handle_t h = p;
  gk_gemm_state_destroy(h->gemm);
  free(h);
}

GKO_API gko_status_t gko_destroy(gko_handle_t handle) {
  return gk_live_destroy(handle, GK_LIVE_HANDLE, "handle", gk_handle_release);
}

GKO_API gko_status_t gko_handle_device(gko_handle_t handle, int *device) {
  gko_status_t s = gk_getter(handle, GK_LIVE_HANDLE, "handle", device, "device");
  if (!s) *device = handle->device;
  return s;
}

/* *capturing: whether st is being captured (the legacy stream never is). */
static gko_status_t gk_check_device_and_stream(gko_handle_t h, cudaStream_t st, int *capturing) {
  *capturing = 0;
  int cur = -1;
  cudaError_t e = cudaGetDevice(&cur);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaGetDevice");
  if (cur != h->device)
    return gk_fail(GKO_STATUS_DEVICE_MISMATCH,
                   "the current device is %d but the handle was created on "
                   "device %d: call cudaSetDevice(%d) first, or use a handle "
                   "created on device %d",
                   cur, h->device, h->device, cur);
  if (st == NULL || st == cudaStreamLegacy) return GKO_STATUS_SUCCESS;
  /* A capturing stream cannot be asked for its device; its kernels would
   * fail at launch on a wrong device anyway. */
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  e = cudaStreamIsCapturing(st, &cs);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaStreamIsCapturing(stream)");
  *capturing = cs != cudaStreamCaptureStatusNone;
  if (*capturing || st == cudaStreamPerThread) return GKO_STATUS_SUCCESS;
  int sd = -1;
  e = cudaStreamGetDevice(st, &sd);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaStreamGetDevice(stream)");
  if (sd != h->device)
    return gk_fail(GKO_STATUS_DEVICE_MISMATCH,
                   "stream belongs to device %d but the handle to device %d", sd,
                   h->device);
  return GKO_STATUS_SUCCESS;
}

static gko_status_t gk_check_device_ptr(gko_handle_t h, const void *p, const char *name,
                                        int capturing) {
  struct cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaPointerGetAttributes");
  switch (a.type) {
    case cudaMemoryTypeDevice:
      if (a.device != h->device)
        return gk_fail(GKO_STATUS_DEVICE_MISMATCH,
                       "%s is memory of device %d but the handle is bound to "
                       "device %d",
                       name, a.device, h->device);
      return GKO_STATUS_SUCCESS;
    case cudaMemoryTypeManaged:
      return GKO_STATUS_SUCCESS;
    case cudaMemoryTypeHost:
      if (a.devicePointer) return GKO_STATUS_SUCCESS;
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "%s is pinned host memory that is not mapped into the "
                     "device's address space",
                     name);
    case cudaMemoryTypeUnregistered:
    default:
      /* While the stream is captured, memory the graph itself allocates
       * (cudaMallocAsync on the capturing stream: a graph memory node) has
       * its address but no mapping until the graph runs, and the driver
       * reports it as unregistered: accepted unchecked then (gko.h). */
      if (h->pageable_access || capturing) return GKO_STATUS_SUCCESS;
      return gk_fail(GKO_STATUS_INVALID_VALUE,
                     "%s is a host pointer (pageable memory) that device %d "
                     "cannot access: pass device memory (cudaMalloc), managed "
                     "or pinned host memory",
                     name, h->device);
  }
}

gko_status_t gk_check_call_ex(gko_handle_t h, void *stream, int nptr, const void *const *ptrs,
                              const char *const *names, int *unchecked) {
  if (unchecked) *unchecked = 0;
  gko_status_t s = gk_live_check(h, GK_LIVE_HANDLE, "handle");
  if (s) return s;
  /* These queries enqueue nothing; relaxed mode keeps them from
   * invalidating a capture in progress on this or another thread. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  int capturing = 0;
  s = gk_check_device_and_stream(h, (cudaStream_t)stream, &capturing);
  for (int i = 0; s == GKO_STATUS_SUCCESS && i < nptr; i++)
    if (ptrs[i]) s = gk_check_device_ptr(h, ptrs[i], names[i], capturing);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (unchecked) *unchecked = capturing;
  return s;
}

gko_status_t gk_check_call(gko_handle_t h, void *stream, int nptr,
                           const void *const *ptrs, const char *const *names) {
  return gk_check_call_ex(h, stream, nptr, ptrs, names, NULL);
}

int gk_overlap(const void *p, size_t pb, const void *q, size_t qb) {
  if (!p || !q || pb == 0 || qb == 0) return 0;
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  return a < b + qb && b < a + pb;
}

int gk_partial_overlap(const void *p, size_t bytes, const void *q, size_t bytes2) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  if (a == b) return 0;
  return a < b + bytes2 && b < a + bytes;
}

gko_status_t gk_refuse_capture(void *stream, const char *what) {
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing((cudaStream_t)stream, &cs);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) return gk_cuda_fail(e, "cudaStreamIsCapturing(stream)");
  if (cs != cudaStreamCaptureStatusNone)
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "%s waits for the GPU and cannot run while the stream is being "
                   "captured into a CUDA graph: call it before the capture",
                   what);
  return GKO_STATUS_SUCCESS;
}
