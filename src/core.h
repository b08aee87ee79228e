/*
 * core.h -- what every file in src/ shares: the detail message, the handle,
 * the checks every entry point makes, and small host helpers.  Never
 * installed.  Each area adds its own header (gemm.h, conv.h, spmm.h); the
 * kernels' interfaces live in kernels/<family>.h.
 *
 * Internal names start with gk_ (not gko_): the linker version script exports
 * gko_* only, and everything is compiled with -fvisibility=hidden.
 */
#ifndef GK_CORE_H
#define GK_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gko.h"
#include "../kernels/gelu.h"
#include "../kernels/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends printf-style text to the NUL-terminated string in buf[cap]
 * (truncating; nothing when it is full).  The plans' "why" accounts. */
void gk_strappendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Resets the calling thread's detail message (start of every entry point). */
void gk_clear_error(void);

/* ---- the handle and the entry-point checks (src/handle.c) --------------- */

struct gko_handle_s {
  unsigned long serial;   /* distinct for every handle ever made (plans keep it) */
  int device;
  int cc;                 /* 10*major + minor */
  int sm_count;
  int code_path;          /* gko_code_path_t */
  int pageable_access;    /* device can read pageable host memory */
  gk_occupancy gelu_occ[GK_GELU_NKERNELS];
  struct gk_gemm_state *gemm; /* src/gemm_state.c: cuBLASLt handle, algorithm cache */
};

/* Entry-point check before enqueueing work: the handle is live, its
 * device is current, the stream (unless NULL, legacy or per-thread, or being
 * captured) is on that device, and each non-NULL pointer in ptrs[0..nptr) is
 * accessible by that device (names[i] names it in the detail message).
 * Capture-safe. */
gko_status_t gk_check_call(gko_handle_t h, void *stream, int nptr,
                           const void *const *ptrs, const char *const *names);
/* gk_check_call, and *unchecked = 1 when the stream is being captured (then
 * an address the driver reports as unregistered passes unchecked: memory the
 * graph allocates), so a caller that remembers checked pointers must not
 * remember these. */
gko_status_t gk_check_call_ex(gko_handle_t h, void *stream, int nptr, const void *const *ptrs,
                              const char *const *names, int *unchecked);
/* GKO_STATUS_NOT_SUPPORTED (detail: `what` waits for the GPU and cannot run
 * during capture) when stream is being captured, else SUCCESS; the query
 * itself runs in relaxed capture mode, so it never breaks the capture. */
gko_status_t gk_refuse_capture(void *stream, const char *what);
/* [p, p + pb) and [q, q + qb) share a byte (NULL or empty ranges never do). */
int gk_overlap(const void *p, size_t pb, const void *q, size_t qb);
/* [p, p+bytes) and [q, q+bytes2) overlap without being identical starts. */
int gk_partial_overlap(const void *p, size_t bytes, const void *q,
                       size_t bytes2);

/* ---- shared host helpers ------------------------------------------------ */

/* The plans' "why" account: printf-style text appended to obj->why. */
#define GK_WHY(obj, ...) gk_strappendf((obj)->why, sizeof (obj)->why, __VA_ARGS__)

/* Copies text out to the caller's buf[bytes] (truncated, always
 * NUL-terminated when bytes > 0) and sets *required (if not NULL) to the
 * bytes the whole text needs; INVALID_VALUE when buf is NULL but bytes > 0.
 * What every *_describe entry point does. */
gko_status_t gk_text_out(const char *text, char *buf, size_t bytes, size_t *required);

/* The start of every getter entry point: clears the detail message, then
 * gk_live_check(obj, kind, obj_name), then INVALID_VALUE ("<out_name> is
 * NULL") when out is NULL, else SUCCESS. */
gko_status_t gk_getter(const void *obj, int kind, const char *obj_name, const void *out,
                       const char *out_name);

/* INVALID_VALUE (detail names the pointer) when p is not aligned to its
 * element size es; NULL passes (callers check NULL in their own words). */
gko_status_t gk_check_elem_align(const void *p, const char *name, size_t es);

/* Entry points taking a handle, an object and an output: clears the
 * detail, INVALID_VALUE ("handle is NULL"), then as gk_getter.  The
 * handle's liveness is the caller's to check (gk_check_call, or
 * gk_live_check before an early success). */
gko_status_t gk_entry_check(gko_handle_t h, const void *obj, int kind, const char *obj_name,
                            const void *out, const char *out_name);

/* The live objects (src/live.c): each create registers what it hands out,
 * every entry point checks its object arguments with gk_live_check before
 * reading them, and each destroy goes through gk_live_destroy, which frees
 * (release) only an object registered with that kind and answers anything
 * else -- a second destroy, a pointer gko never made -- with
 * INVALID_HANDLE. */
enum {
  GK_LIVE_HANDLE = 1, GK_LIVE_GEMM_DESC, GK_LIVE_GEMM_PLAN, GK_LIVE_CONV_DESC, GK_LIVE_CONV_PLAN,
  GK_LIVE_POOL_DESC, GK_LIVE_CSR, GK_LIVE_SPMM_PLAN
};
gko_status_t gk_live_add(const void *p, int kind); /* ALLOC_FAILED (detail set) */
int gk_live_remove(const void *p, int kind);      /* 1 when it was registered */
gko_status_t gk_live_destroy(void *p, int kind, const char *name, void (*release)(void *));
/* INVALID_VALUE ("<name> is NULL") for NULL, INVALID_HANDLE (the detail
 * names the argument, its address and its type) unless p is a live object
 * of that kind; reads nothing through p.  Leaves the detail alone on
 * success. */
gko_status_t gk_live_check(const void *p, int kind, const char *name);
/* An execute's check of its plan's handle h: live, and the handle the plan
 * was made with (serial), not a newer one at a reused address;
 * INVALID_HANDLE ("the plan's handle ...") otherwise. */
gko_status_t gk_live_plan_handle(gko_handle_t h, unsigned long serial);

/* A describe entry point: clears the detail, gk_live_check(obj, ...), then
 * gk_text_out(text, ...); text may point into obj (it is read only after
 * the check). */
gko_status_t gk_describe(const void *obj, int kind, const char *obj_name, const char *text,
                         char *buf, size_t bytes, size_t *required);

/* An execute's workspace: INVALID_VALUE when it is NULL but bytes > 0,
 * INSUFFICIENT_WORKSPACE when bytes < need (the detail names `sizer`, the
 * query that tells the size). */
gko_status_t gk_check_workspace(const void *ws, size_t bytes, size_t need, const char *sizer);

/* A 16- or 32-bit operand dtype (what every operator but GEMM and the FP8
 * conversions takes): INVALID_VALUE ("<name> = <dtype> is not a
 * gko_dtype_t") for an unknown value, NOT_SUPPORTED for an 8-bit one; else
 * *es (if not NULL) = its size in bytes. */
gko_status_t gk_check_dtype(int dtype, const char *name, size_t *es);

/* Nonzero for GKO_DTYPE_F8E4M3 and GKO_DTYPE_F8E5M2. */
static inline int gk_is_fp8(int64_t dtype) {
  return dtype == GKO_DTYPE_F8E4M3 || dtype == GKO_DTYPE_F8E5M2;
}
/* "GKO_DTYPE_F8E4M3", ... ; "?" for an unknown value. */
const char *gk_dtype_name(int64_t dtype);

/* The valid values of an attribute or argument: [lo, hi] (powers of two
 * only where pow2); otherwise the detail is "<name> = <value> <bad>".
 * def: a new descriptor's value (attributes). */
typedef struct gk_rule {
  const char *name;
  int64_t lo, hi;
  int pow2;
  const char *bad;
  int64_t def;
  int dtype; /* a 16/32-bit dtype: an 8-bit one is NOT_SUPPORTED (gk_check_dtype) */
} gk_rule;

/* INVALID_VALUE (the rule's detail) when v breaks r. */
gko_status_t gk_rule_check(const gk_rule *r, int64_t v);
/* Attribute descriptors (conv, GEMM): INVALID_VALUE ("attr = <attr> is not
 * a <type>") unless 0 <= attr < nattr. */
gko_status_t gk_attr_in_range(int attr, int nattr, const char *type);
/* v[attr] = value once attr is in range and value meets rules[attr]. */
gko_status_t gk_attr_store(int64_t *v, const gk_rule *rules, int nattr, const char *type,
                           int attr, int64_t value);
/* A descriptor's create entry point (conv, pool): a heap array of nattr
 * values, each its rule's default, the first ngiven replaced by given[]
 * (the create arguments, in attribute order) after their rules' checks.
 * *out untouched on failure (INVALID_VALUE naming the attribute, or
 * ALLOC_FAILED); the caller frees it. */
gko_status_t gk_attr_new(int64_t **out, const gk_rule *rules, int nattr, const char *type,
                         const int64_t *given, int ngiven);

static inline int64_t gk_round_up(int64_t v, int64_t g) { return (v + g - 1) / g * g; }
static inline size_t gk_round256(size_t v) { return (v + 255) & ~(size_t)255; }
/* The largest power of two dividing v (v > 0). */
static inline int64_t gk_lowbit(int64_t v) { return v & -v; }

#ifdef __cplusplus
}
#endif

#endif /* GK_CORE_H */
