/* diag.c -- what gko was built with, what the machine has, and whether the
 * two fit: the driver / runtime / architecture picture in one call. */
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "core.h"
#include "diag.h"
#include "../kernels/gemm_sm90.h"

#ifndef GK_SASS_LIST
#error "GK_SASS_LIST (comma-separated SASS architectures) comes from the Makefile"
#endif
#ifndef GK_PTX_ARCH
#error "GK_PTX_ARCH comes from the Makefile"
#endif

static const int gk_sass[] = {GK_SASS_LIST};

int gk_compiled_sass(const int **list) {
  *list = gk_sass;
  return (int)(sizeof gk_sass / sizeof gk_sass[0]);
}
int gk_compiled_ptx(void) { return GK_PTX_ARCH; }

/* SASS runs on the same major architecture with an equal or higher minor;
 * PTX is JIT-compiled by the driver for any architecture at or above it. */
int gk_code_path_for(int cc, const int *sass, int nsass, int ptx) {
  for (int i = 0; i < nsass; i++)
    if (sass[i] / 10 == cc / 10 && sass[i] % 10 <= cc % 10)
      return GKO_CODE_PATH_SASS;
  if (ptx > 0 && ptx <= cc) return GKO_CODE_PATH_PTX_JIT;
  return GKO_CODE_PATH_NONE;
}

/* Minimum Linux driver for a CUDA major version (NVIDIA's CUDA
 * compatibility guide, "minor version compatibility" table). */
static const char *gk_min_driver(int runtime_major) {
  switch (runtime_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
  }
  return "the one your CUDA toolkit's release notes name";
}

static void gk_arch_list(char *out, size_t n) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof gk_sass / sizeof gk_sass[0]; i++) {
    int w = snprintf(out + used, n - used, "%ssm_%d", i ? " " : "", gk_sass[i]);
    if (w < 0 || (size_t)w >= n - used) return;
    used += (size_t)w;
  }
  snprintf(out + used, n - used, " + compute_%d PTX", GK_PTX_ARCH);
}

gko_status_t gk_classify_environment(int driver_version, int runtime_version,
                                     int count_error, int device_count,
                                     int cc, char *buf, size_t buf_bytes) {
  char scratch[512];
  char archs[160];
  if (!buf || buf_bytes == 0) {
    buf = scratch;
    buf_bytes = sizeof scratch;
  }
  int rt_major = runtime_version / 1000, rt_minor = (runtime_version % 1000) / 10;
  int dr_major = driver_version / 1000, dr_minor = (driver_version % 1000) / 10;
  if (driver_version == 0) {
    snprintf(buf, buf_bytes,
             "no NVIDIA driver was found (libcuda.so.1 did not load): install "
             "an NVIDIA driver >= %s to run gko, which was built with CUDA "
             "runtime %d.%d",
             gk_min_driver(rt_major), rt_major, rt_minor);
    return GKO_STATUS_NO_DEVICE;
  }
  if (count_error == cudaErrorInsufficientDriver ||
      (count_error == 0 && dr_major < rt_major)) {
    snprintf(buf, buf_bytes,
             "the NVIDIA driver supports CUDA %d.%d but gko was built with "
             "CUDA runtime %d.%d: install a driver >= %s, or rebuild gko with "
             "a CUDA %d.x toolkit",
             dr_major, dr_minor, rt_major, rt_minor, gk_min_driver(rt_major),
             dr_major);
    return GKO_STATUS_DRIVER_TOO_OLD;
  }
  if (count_error == cudaErrorNoDevice ||
      (count_error == 0 && device_count <= 0)) {
    snprintf(buf, buf_bytes,
             "the NVIDIA driver (CUDA %d.%d) sees no GPU: check nvidia-smi and "
             "CUDA_VISIBLE_DEVICES",
             dr_major, dr_minor);
    return GKO_STATUS_NO_DEVICE;
  }
  if (count_error != 0) {
    snprintf(buf, buf_bytes, "cudaGetDeviceCount failed: %s: %s",
             cudaGetErrorName((cudaError_t)count_error),
             cudaGetErrorString((cudaError_t)count_error));
    return GKO_STATUS_CUDA_ERROR;
  }
  gk_arch_list(archs, sizeof archs);
  int path = gk_code_path_for(cc, gk_sass, (int)(sizeof gk_sass / sizeof gk_sass[0]),
                              GK_PTX_ARCH);
  if (path == GKO_CODE_PATH_NONE) {
    snprintf(buf, buf_bytes,
             "this GPU is sm_%d but gko holds code for %s only: rebuild gko "
             "with GKO_ARCHS=%d (or with a toolkit that supports sm_%d)",
             cc, archs, cc, cc);
    return GKO_STATUS_NO_KERNEL_IMAGE;
  }
  if (path == GKO_CODE_PATH_PTX_JIT && driver_version < runtime_version) {
    snprintf(buf, buf_bytes,
             "this GPU (sm_%d) needs gko's compute_%d PTX compiled by the "
             "driver, but the driver (CUDA %d.%d) is older than the PTX's "
             "toolkit (CUDA %d.%d): install a driver >= %s or rebuild gko "
             "with GKO_ARCHS=%d",
             cc, GK_PTX_ARCH, dr_major, dr_minor, rt_major, rt_minor,
             gk_min_driver(rt_major), cc);
    return GKO_STATUS_DRIVER_TOO_OLD;
  }
  snprintf(buf, buf_bytes, "ready: runs %s",
           path == GKO_CODE_PATH_SASS ? "native SASS" : "PTX compiled by the driver (JIT)");
  return GKO_STATUS_SUCCESS;
}

/* Raw environment facts for device `device` (-1: none needed). */
static gko_status_t gk_environment(int device, int *cc_out, char *why,
                                   size_t why_bytes) {
  int drv = 0, count = 0, cc = 0;
  cudaDriverGetVersion(&drv);
  cudaError_t ce = cudaSuccess;
  if (drv != 0) ce = cudaGetDeviceCount(&count);
  if (drv != 0 && ce == cudaSuccess && count > 0 && device >= 0 && device < count) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cc = major * 10 + minor;
  }
  if (cc_out) *cc_out = cc;
  return gk_classify_environment(drv, CUDART_VERSION, (int)ce, count, cc, why,
                                 why_bytes);
}

GKO_API gko_status_t gko_query(gko_query_t what, int device, int64_t *value) {
  gk_clear_error();
  if (!value) return gk_fail(GKO_STATUS_INVALID_VALUE, "value is NULL");
  int drv = 0, count = 0;
  switch (what) {
    case GKO_QUERY_DEVICE_COUNT:
      cudaDriverGetVersion(&drv);
      if (drv == 0 || cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
      *value = count;
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_DRIVER_VERSION:
      cudaDriverGetVersion(&drv);
      *value = drv;
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_RUNTIME_VERSION:
      *value = CUDART_VERSION;
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_CUBLASLT_VERSION:
      *value = (int64_t)cublasLtGetVersion();
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_CUBLASLT_BUILD_VERSION:
      *value = CUBLAS_VERSION;
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_PTX_ARCH:
      *value = GK_PTX_ARCH;
      return GKO_STATUS_SUCCESS;
    case GKO_QUERY_COMPUTE_CAPABILITY:
    case GKO_QUERY_CODE_PATH:
    case GKO_QUERY_SM_COUNT:
      break;
    default:
      return gk_fail(GKO_STATUS_INVALID_VALUE, "what = %d is not a gko_query_t",
                     (int)what);
  }
  cudaDriverGetVersion(&drv);
  if (drv != 0 && cudaGetDeviceCount(&count) == cudaSuccess && count > 0 &&
      (device < 0 || device >= count))
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "device = %d is out of range [0, %d)", device, count);
  int cc = 0;
  char why[512];
  gko_status_t env = gk_environment(device, &cc, why, sizeof why);
  if (what == GKO_QUERY_COMPUTE_CAPABILITY && cc > 0) {
    *value = cc;
    return GKO_STATUS_SUCCESS;
  }
  if (what == GKO_QUERY_CODE_PATH && cc > 0) {
    const int *sass;
    int ns = gk_compiled_sass(&sass);
    *value = gk_code_path_for(cc, sass, ns, GK_PTX_ARCH);
    return GKO_STATUS_SUCCESS;
  }
  if (what == GKO_QUERY_SM_COUNT && cc > 0) {
    int sms = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess) return gk_cuda_fail(e, "cudaDeviceGetAttribute");
    *value = sms;
    return GKO_STATUS_SUCCESS;
  }
  if (env == GKO_STATUS_SUCCESS) env = GKO_STATUS_INTERNAL;
  return gk_fail(env, "%s", why);
}

/* Appends to a bounded buffer, tracking the size a full report needs. */
typedef struct gk_text {
  char *buf;
  size_t cap;
  size_t len; /* length the full text has so far, terminator excluded */
} gk_text;

static void gk_put(gk_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void gk_put(gk_text *t, const char *fmt, ...) {
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (w < 0) return;
  size_t n = strlen(line);
  if (t->cap > 0 && t->len < t->cap - 1) {
    size_t room = t->cap - 1 - t->len;
    size_t k = n < room ? n : room;
    memcpy(t->buf + t->len, line, k);
    t->buf[t->len + k] = '\0';
  }
  t->len += n;
}

static void gk_version_text(int v, char *out, size_t n) {
  snprintf(out, n, "%d.%d", v / 1000, (v % 1000) / 10);
}

GKO_API gko_status_t gko_diagnostics(int device, char *buf, size_t buf_bytes,
                                     size_t *required_bytes) {
  gk_clear_error();
  if (!buf && buf_bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "buf is NULL but buf_bytes = %zu",
                   buf_bytes);
  gk_text t = {buf, buf_bytes, 0};
  if (buf_bytes > 0) buf[0] = '\0';
  char archs[160], v1[32], v2[32];
  gk_arch_list(archs, sizeof archs);
  int drv = 0, count = 0;
  cudaDriverGetVersion(&drv);
  cudaError_t ce = drv ? cudaGetDeviceCount(&count) : cudaErrorNoDevice;
  size_t lt = cublasLtGetVersion();
  gk_version_text(CUDART_VERSION, v1, sizeof v1);
  gk_put(&t, "gko %s\n", gko_version_string());
  gk_put(&t, "  built with:   CUDA runtime %s (linked statically), cuBLASLt %d.%d.%d\n",
         v1, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
  gk_put(&t, "  compiled for: %s\n", archs);
  if (gk_sm90_built())
    gk_put(&t, "  SM90 GEMM:    sm_90a kernels on CUTLASS %s\n", gk_sm90_cutlass_version());
  else
    gk_put(&t, "  SM90 GEMM:    not built (GKO_ARCHS without 90, GKO_SM90=0, or an nvcc "
           "without sm_90a)\n");
  gk_put(&t, "  cuBLASLt loaded: %d.%d.%d\n", (int)(lt / 10000),
         (int)(lt / 100 % 100), (int)(lt % 100));
  if (drv) {
    gk_version_text(drv, v2, sizeof v2);
    gk_put(&t, "  driver:       supports CUDA %s\n", v2);
  } else {
    gk_put(&t, "  driver:       none found (libcuda.so.1 did not load)\n");
  }
  char why[512];
  if (drv == 0 || ce != cudaSuccess || count == 0) {
    gk_classify_environment(drv, CUDART_VERSION, drv ? (int)ce : 0, count, 0,
                            why, sizeof why);
    gk_put(&t, "  devices:      0\n  status:       %s\n", why);
  } else {
    gk_put(&t, "  devices:      %d\n", count);
    int first = device < 0 ? 0 : device, last = device < 0 ? count - 1 : device;
    if (device >= count) {
      gk_put(&t, "  device %d:     out of range [0, %d)\n", device, count);
    } else {
      for (int d = first; d <= last; d++) {
        struct cudaDeviceProp p;
        cudaError_t pe = cudaGetDeviceProperties(&p, d);
        if (pe != cudaSuccess) {
          gk_put(&t, "  device %d:     cudaGetDeviceProperties failed: %s\n", d,
                 cudaGetErrorString(pe));
          continue;
        }
        int cc = p.major * 10 + p.minor;
        gko_status_t s = gk_classify_environment(drv, CUDART_VERSION, 0, count, cc,
                                                 why, sizeof why);
        gk_put(&t, "  device %d:     %s, compute capability %d.%d (sm_%d), %d SMs, "
               "%.1f GiB, L2 %.0f MiB\n",
               d, p.name, p.major, p.minor, cc, p.multiProcessorCount,
               (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
               (double)p.l2CacheSize / (1024.0 * 1024.0));
        gk_put(&t, "    status:     %s%s\n", s == GKO_STATUS_SUCCESS ? "" : "cannot run: ",
               why);
      }
    }
  }
  if (required_bytes) *required_bytes = t.len + 1;
  return GKO_STATUS_SUCCESS;
}
