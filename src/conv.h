/* conv.h -- the Conv2d area: the descriptor (src/conv_desc.c), the plan and
 * its lowering choice (src/conv_plan.c), execute (src/conv_execute.c).
 * docs/conv.md describes the lowering, the workspace and the chunking. */
#ifndef GK_CONV_H
#define GK_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "../kernels/conv_sm90.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GK_CONV_NATTR = 24, GK_CONV_WHY = 2048 };

struct gko_conv_desc_s {
  int64_t v[GK_CONV_NATTR];
};

/* The resolved problem (gk_conv_resolve). */
typedef struct gk_conv_problem {
  int dtype, layout, epilogue, compute, algo;
  int64_t es;
  int64_t n, c, h, w, k, r, s;
  int64_t sh, sw, ph, pw, ph_end, pw_end, dh, dw, groups;
  int64_t max_ws, max_chunk, alignment;
  int64_t oh, ow, cg, kg;
} gk_conv_problem;

/* What bounds the images per im2col pass. */
enum {
  GK_CONV_CHUNK_BATCH,     /* the whole batch fits */
  GK_CONV_CHUNK_MAX_CHUNK, /* GKO_CONV_ATTR_MAX_CHUNK */
  GK_CONV_CHUNK_ROWS,      /* the kernels' or the GEMM's rows per pass */
  GK_CONV_CHUNK_WORKSPACE  /* GKO_CONV_ATTR_MAX_WORKSPACE */
};

/* The plan's decisions, and what drove them: gko_conv_plan_create fills
 * it, gk_conv_explain renders it into the plan's description. */
typedef struct gk_conv_choice {
  int path;        /* gko_conv_path_t */
  int via_nhwc;    /* NCHW im2col lowered through NHWC */
  int lay;         /* the layout im2col and the GEMMs run in */
  int by_group;    /* NCHW: GEMM batched over groups, one call per image */
  int wpad;        /* filter copied to [K][kp] in the workspace */
  int chunk_bound; /* GK_CONV_CHUNK_*: what set chunk */
  int64_t chunk, nchunks, last; /* images per pass, passes, images in the last */
  int64_t gemm_calls;           /* per execute */
} gk_conv_choice;

struct gko_conv_plan_s {
  gko_handle_t handle;
  unsigned long handle_serial;
  gk_conv_problem p;
  gk_conv_choice c;
  int64_t l, kp, ohw_ld;
  size_t wpad_bytes, col_img_bytes, col_bytes;
  size_t xt_img_bytes, d_img_bytes; /* via_nhwc: one image of x and of D, transposed */
  size_t off_col, off_xt, off_d, off_gemm, gemm_ws, ws_bytes, ws_full, ws_min;
  gko_gemm_plan_t gemm[2];  /* full chunk, last partial chunk (or NULL) */
  int block_nhwc[4];        /* im2col threads per block, 2/4/8/16-byte vectors */
  int block_nchw;
  gk_conv_sm90_problem ip;  /* PATH_IMPLICIT: the kernel's problem */
  int icfg;                 /* and configuration (conv_sm90.h) */
  int fold;                 /* space-to-depth rewrite into the workspace (C % 8 != 0) */
  size_t fold_x_bytes;      /* its copy of x */
  char why[GK_CONV_WHY];
};

/* a * b into *out; 1 on overflow (or a negative result). */
static inline int gk_mul(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out) || *out < 0;
}

static inline int gk_mul4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *out) {
  int64_t t, u;
  return gk_mul(a, b, &t) || gk_mul(t, c, &u) || gk_mul(u, d, out);
}

/* The descriptor's values resolved and checked: shapes, groups, every size
 * and byte count against int64 overflow (src/conv_desc.c). */
gko_status_t gk_conv_resolve(const int64_t *v, gk_conv_problem *p);

/* Re-sets the detail of a failed GEMM call with the conv's context; call it
 * right after the failing gko_gemm_* call, since every public entry point
 * resets the detail (src/conv_plan.c). */
gko_status_t gk_conv_gemm_fail(gko_status_t s, const char *what);

/* The implicit-GEMM path (src/conv_implicit.c): whether it applies (else
 * 0 and the reason in why), the plan, its description and its execute. */
int gk_conv_implicit_applies(gko_handle_t h, const gk_conv_problem *p, char *why, size_t cap,
                             gk_conv_problem *kernel_problem);
gko_status_t gk_conv_plan_implicit(gko_conv_plan_t cp);
void gk_conv_explain_implicit(gko_conv_plan_t cp);
gko_status_t gk_conv_execute_implicit(const struct gko_conv_plan_s *plan, float alpha,
                                      const void *x, const void *w, const void *bias,
                                      float beta, const void *z, void *y, void *workspace,
                                      void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GK_CONV_H */
