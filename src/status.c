/* status.c -- status names, descriptions and the thread-local detail. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core.h"

#define GK_DETAIL_BYTES 512

static _Thread_local char gk_detail[GK_DETAIL_BYTES];

/* Each status's name and sentence, indexed by its value. */
static const struct {
  const char *name, *text;
} kStatus[] = {
    [GKO_STATUS_SUCCESS] = {"GKO_STATUS_SUCCESS", "success"},
    [GKO_STATUS_INVALID_VALUE] = {"GKO_STATUS_INVALID_VALUE",
                                  "an argument is out of its documented range"},
    [GKO_STATUS_NOT_SUPPORTED] = {"GKO_STATUS_NOT_SUPPORTED",
                                  "the request is valid but not supported by this build, "
                                  "backend or GPU"},
    [GKO_STATUS_NO_DEVICE] = {"GKO_STATUS_NO_DEVICE",
                              "no CUDA-capable device is available (no NVIDIA driver, or "
                              "the driver sees no GPU)"},
    [GKO_STATUS_DRIVER_TOO_OLD] = {"GKO_STATUS_DRIVER_TOO_OLD",
                                   "the NVIDIA driver is too old for the CUDA runtime gko "
                                   "was built with"},
    [GKO_STATUS_NO_KERNEL_IMAGE] = {"GKO_STATUS_NO_KERNEL_IMAGE",
                                    "gko was not compiled for this GPU's architecture (no "
                                    "SASS or compatible PTX)"},
    [GKO_STATUS_ALLOC_FAILED] = {"GKO_STATUS_ALLOC_FAILED", "a memory allocation failed"},
    [GKO_STATUS_INSUFFICIENT_WORKSPACE] = {"GKO_STATUS_INSUFFICIENT_WORKSPACE",
                                           "the workspace is smaller than the plan requires"},
    [GKO_STATUS_CUDA_ERROR] = {"GKO_STATUS_CUDA_ERROR", "a CUDA call failed"},
    [GKO_STATUS_EXECUTION_FAILED] = {"GKO_STATUS_EXECUTION_FAILED",
                                     "the CUDA context is in a sticky error state after a "
                                     "kernel fault"},
    [GKO_STATUS_INTERNAL] = {"GKO_STATUS_INTERNAL", "internal error in gko"},
    [GKO_STATUS_DEVICE_MISMATCH] = {"GKO_STATUS_DEVICE_MISMATCH",
                                    "the handle, the current device, the stream or a "
                                    "pointer belong to different devices"},
    [GKO_STATUS_INVALID_HANDLE] = {"GKO_STATUS_INVALID_HANDLE",
                                   "an object argument is not a live object of its kind "
                                   "(destroyed, or not made by gko)"},
};
enum { GK_NSTATUS = sizeof kStatus / sizeof kStatus[0] };

GKO_API const char *gko_status_name(gko_status_t status) {
  return (unsigned)status < GK_NSTATUS ? kStatus[status].name : "GKO_STATUS_UNKNOWN";
}

GKO_API const char *gko_status_string(gko_status_t status) {
  return (unsigned)status < GK_NSTATUS ? kStatus[status].text : "unknown status value";
}

GKO_API const char *gko_last_error_detail(void) { return gk_detail; }

void gk_clear_error(void) { gk_detail[0] = '\0'; }

gko_status_t gk_fail(gko_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(gk_detail, sizeof gk_detail, fmt, ap);
  va_end(ap);
  return status;
}

static int gk_is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
      return 1;
    default:
      return 0;
  }
}

gko_status_t gk_cuda_fail(int cuda_error, const char *what) {
  cudaError_t e = (cudaError_t)cuda_error;
  gko_status_t s = GKO_STATUS_CUDA_ERROR;
  const char *hint = "";
  if (e == cudaErrorMemoryAllocation) {
    s = GKO_STATUS_ALLOC_FAILED;
  } else if (e == cudaErrorNoKernelImageForDevice ||
             e == cudaErrorInvalidDeviceFunction ||
             e == cudaErrorUnsupportedPtxVersion ||
             e == cudaErrorInvalidKernelImage) {
    s = e == cudaErrorUnsupportedPtxVersion ? GKO_STATUS_DRIVER_TOO_OLD
                                            : GKO_STATUS_NO_KERNEL_IMAGE;
    hint = " (see gko_diagnostics for the compiled architectures)";
  } else if (e == cudaErrorInsufficientDriver) {
    s = GKO_STATUS_DRIVER_TOO_OLD;
  } else if (e == cudaErrorNoDevice) {
    s = GKO_STATUS_NO_DEVICE;
  } else if (gk_is_sticky(e)) {
    s = GKO_STATUS_EXECUTION_FAILED;
    hint = " (the context holds a sticky error from an earlier kernel; the "
           "process must reset the device)";
  }
  return gk_fail(s, "%s failed: %s: %s%s", what, cudaGetErrorName(e),
                 cudaGetErrorString(e), hint);
}

GKO_API size_t gko_dtype_size(gko_dtype_t dtype) {
  switch (dtype) {
    case GKO_DTYPE_F32: return 4;
    case GKO_DTYPE_F16: return 2;
    case GKO_DTYPE_BF16: return 2;
    case GKO_DTYPE_F8E4M3: return 1;
    case GKO_DTYPE_F8E5M2: return 1;
  }
  return 0;
}

const char *gk_dtype_name(int64_t dtype) {
  static const char *const n[] = {"GKO_DTYPE_F32", "GKO_DTYPE_F16", "GKO_DTYPE_BF16",
                                  "GKO_DTYPE_F8E4M3", "GKO_DTYPE_F8E5M2"};
  return dtype >= 0 && dtype < (int64_t)(sizeof n / sizeof n[0]) ? n[dtype] : "?";
}

GKO_API unsigned gko_version_number(void) { return GKO_VERSION_NUMBER; }

#define GK_STR2(x) #x
#define GK_STR(x) GK_STR2(x)
GKO_API const char *gko_version_string(void) {
  return GK_STR(GKO_VERSION_MAJOR) "." GK_STR(GKO_VERSION_MINOR) "." GK_STR(
      GKO_VERSION_PATCH);
}

void gk_strappendf(char *buf, size_t cap, const char *fmt, ...) {
  const size_t used = strlen(buf);
  if (used + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, cap - used, fmt, ap);
  va_end(ap);
}

gko_status_t gk_text_out(const char *text, char *buf, size_t bytes, size_t *required) {
  if (!buf && bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "buf is NULL but bytes = %zu", bytes);
  const size_t need = strlen(text) + 1;
  if (bytes > 0) {
    const size_t n = need <= bytes ? need - 1 : bytes - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
  }
  if (required) *required = need;
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_check_elem_align(const void *p, const char *name, size_t es) {
  if (p && (uintptr_t)p % es != 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE,
                   "%s = %p is not aligned to its element size (%zu bytes)", name, p, es);
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_getter(const void *obj, int kind, const char *obj_name, const void *out,
                       const char *out_name) {
  gk_clear_error();
  gko_status_t s = gk_live_check(obj, kind, obj_name);
  if (!s && !out) s = gk_fail(GKO_STATUS_INVALID_VALUE, "%s is NULL", out_name);
  return s;
}

gko_status_t gk_check_dtype(int dtype, const char *name, size_t *es) {
  const size_t e = gko_dtype_size((gko_dtype_t)dtype);
  if (e == 0) return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %d is not a gko_dtype_t", name, dtype);
  if (gk_is_fp8(dtype))
    return gk_fail(GKO_STATUS_NOT_SUPPORTED,
                   "%s = %s: 8-bit types are taken by GEMM and gko_quantize/gko_dequantize "
                   "only",
                   name, gk_dtype_name(dtype));
  if (es) *es = e;
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_rule_check(const gk_rule *r, int64_t v) {
  if (r->dtype && gk_is_fp8(v)) return gk_check_dtype((int)v, r->name, NULL);
  if (v < r->lo || v > r->hi || (r->pow2 && (v & (v - 1)) != 0))
    return gk_fail(GKO_STATUS_INVALID_VALUE, "%s = %lld %s", r->name, (long long)v, r->bad);
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_attr_in_range(int attr, int nattr, const char *type) {
  if (attr < 0 || attr >= nattr)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "attr = %d is not a %s", attr, type);
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_attr_store(int64_t *v, const gk_rule *rules, int nattr, const char *type,
                           int attr, int64_t value) {
  gko_status_t s = gk_attr_in_range(attr, nattr, type);
  if (!s) s = gk_rule_check(&rules[attr], value);
  if (!s) v[attr] = value;
  return s;
}

gko_status_t gk_attr_new(int64_t **out, const gk_rule *rules, int nattr, const char *type,
                         const int64_t *given, int ngiven) {
  int64_t tmp[64];
  if (nattr > (int)(sizeof tmp / sizeof tmp[0]))
    return gk_fail(GKO_STATUS_INTERNAL, "%s: %d attributes, more than gk_attr_new holds", type,
                   nattr);
  for (int i = 0; i < nattr; i++) tmp[i] = rules[i].def;
  for (int i = 0; i < ngiven; i++) {
    gko_status_t s = gk_attr_store(tmp, rules, nattr, type, i, given[i]);
    if (s) return s;
  }
  int64_t *v = malloc(sizeof *v * (size_t)nattr);
  if (!v) return gk_fail(GKO_STATUS_ALLOC_FAILED, "host allocation of the descriptor failed");
  memcpy(v, tmp, sizeof *v * (size_t)nattr);
  *out = v;
  return GKO_STATUS_SUCCESS;
}

gko_status_t gk_entry_check(gko_handle_t h, const void *obj, int kind, const char *obj_name,
                            const void *out, const char *out_name) {
  gk_clear_error();
  if (!h) return gk_fail(GKO_STATUS_INVALID_VALUE, "handle is NULL");
  return gk_getter(obj, kind, obj_name, out, out_name);
}

gko_status_t gk_describe(const void *obj, int kind, const char *obj_name, const char *text,
                         char *buf, size_t bytes, size_t *required) {
  gk_clear_error();
  gko_status_t s = gk_live_check(obj, kind, obj_name);
  return s ? s : gk_text_out(text, buf, bytes, required);
}

gko_status_t gk_check_workspace(const void *ws, size_t bytes, size_t need, const char *sizer) {
  if (!ws && bytes > 0)
    return gk_fail(GKO_STATUS_INVALID_VALUE, "workspace is NULL but workspace_bytes = %zu",
                   bytes);
  if (bytes < need)
    return gk_fail(GKO_STATUS_INSUFFICIENT_WORKSPACE,
                   "workspace_bytes = %zu but the plan needs %zu (%s)", bytes, need, sizer);
  return GKO_STATUS_SUCCESS;
}
