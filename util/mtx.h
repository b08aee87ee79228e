/* mtx.h -- a small header-only Matrix Market reader for gko's tests,
 * benchmark and examples.  Reads "coordinate" files with field pattern,
 * real or integer and symmetry general, symmetric or skew-symmetric
 * (1-based indices), mirrors the off-diagonal entries of (skew-)symmetric
 * files, and returns CSR on the host: int64 row_ptr/col_ind, double values
 * (1.0 for pattern files), columns sorted within each row (stable, so kept
 * duplicates stay in file order), duplicates summed or kept as asked.
 *
 *   mtx_csr a;
 *   char err[256];
 *   if (mtx_read("data/cora.mtx", MTX_SUM_DUPLICATES, &a, err, sizeof err))
 *     fprintf(stderr, "%s\n", err);
 *   ... a.m, a.k, a.nnz, a.row_ptr, a.col_ind, a.values ...
 *   mtx_free(&a);
 *
 * mtx_find("cora.mtx", path, sizeof path) looks for a data file in
 * $GKO_DATA_DIR, ./data, ../data, ../../data and <executable's dir>/../../data
 * (build/tests/x -> data/), and returns 0 when found.
 *
 * Not supported (an error, never a crash): array (dense) files, complex and
 * hermitian matrices. */
#ifndef GKO_MTX_H
#define GKO_MTX_H

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MTX_KEEP_DUPLICATES = 0, MTX_SUM_DUPLICATES = 1 };

typedef struct mtx_csr {
  int64_t m, k, nnz;
  int64_t *row_ptr; /* m + 1 */
  int64_t *col_ind; /* nnz */
  double *values;   /* nnz */
  int pattern;      /* the file had no values */
  int symmetric;    /* 1 symmetric, 2 skew-symmetric (expanded) */
} mtx_csr;

static inline void mtx_free(mtx_csr *a) {
  free(a->row_ptr);
  free(a->col_ind);
  free(a->values);
  memset(a, 0, sizeof *a);
}

typedef struct mtx_entry_ {
  int64_t col;
  double val;
  int64_t seq; /* file order, for a stable sort */
} mtx_entry_;

static inline int mtx_cmp_(const void *x, const void *y) {
  const mtx_entry_ *a = (const mtx_entry_ *)x, *b = (const mtx_entry_ *)y;
  if (a->col != b->col) return a->col < b->col ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* snprintf through vsnprintf: truncation is fine here, and gcc's
 * -Wformat-truncation does not second-guess it. */
static inline void mtx_fmt_(char *buf, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

static inline int mtx_fail_(char *err, size_t len, FILE *f, const char *fmt, const char *what,
                            long long line) {
  if (err && len) mtx_fmt_(err, len, fmt, what, line);
  if (f) fclose(f);
  return 1;
}

/* Returns 0 on success (out filled), 1 on error (err says why, out zeroed). */
static inline int mtx_read(const char *path, int flags, mtx_csr *out, char *err,
                           size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f) return mtx_fail_(err, errlen, NULL, "%s: cannot open (line %lld)", path, 0);
  char line[1024];
  long long ln = 1;
  if (!fgets(line, sizeof line, f))
    return mtx_fail_(err, errlen, f, "%s: empty file (line %lld)", path, ln);
  for (char *c = line; *c; c++) *c = (char)tolower((unsigned char)*c);
  char obj[64], fmt[64], field[64], sym[64];
  if (sscanf(line, "%%%%matrixmarket %63s %63s %63s %63s", obj, fmt, field, sym) != 4 ||
      strcmp(obj, "matrix") != 0)
    return mtx_fail_(err, errlen, f, "%s: not a Matrix Market matrix header (line %lld)", path,
                     ln);
  if (strcmp(fmt, "coordinate") != 0)
    return mtx_fail_(err, errlen, f, "%s: only coordinate files are supported (line %lld)", path,
                     ln);
  int pattern = !strcmp(field, "pattern");
  if (!pattern && strcmp(field, "real") != 0 && strcmp(field, "integer") != 0 &&
      strcmp(field, "double") != 0)
    return mtx_fail_(err, errlen, f, "%s: field must be pattern, real or integer (line %lld)",
                     path, ln);
  int symmetric = !strcmp(sym, "symmetric") ? 1 : !strcmp(sym, "skew-symmetric") ? 2 : 0;
  if (!symmetric && strcmp(sym, "general") != 0)
    return mtx_fail_(err, errlen, f,
                     "%s: symmetry must be general, symmetric or skew-symmetric (line %lld)",
                     path, ln);
  long long m = -1, k = -1, stored = -1;
  while (fgets(line, sizeof line, f)) {
    ln++;
    if (line[0] == '%' || line[strspn(line, " \t\r\n")] == '\0') continue;
    if (sscanf(line, "%lld %lld %lld", &m, &k, &stored) != 3 || m < 0 || k < 0 || stored < 0)
      return mtx_fail_(err, errlen, f, "%s: bad size line (line %lld)", path, ln);
    break;
  }
  if (stored < 0) return mtx_fail_(err, errlen, f, "%s: no size line (line %lld)", path, ln);
  const long long cap = symmetric ? 2 * stored : stored;
  int64_t *ri = (int64_t *)malloc(sizeof(int64_t) * (size_t)(cap + 1));
  mtx_entry_ *e = (mtx_entry_ *)malloc(sizeof(mtx_entry_) * (size_t)(cap + 1));
  if (!ri || !e) {
    free(ri);
    free(e);
    return mtx_fail_(err, errlen, f, "%s: out of memory (line %lld)", path, ln);
  }
  long long cnt = 0, got = 0;
  while (got < stored && fgets(line, sizeof line, f)) {
    ln++;
    if (line[0] == '%' || line[strspn(line, " \t\r\n")] == '\0') continue;
    char *p = line, *q;
    long long i = strtoll(p, &q, 10), j;
    int bad = q == p;
    p = q;
    j = strtoll(p, &q, 10);
    bad |= q == p;
    p = q;
    double v = 1.0;
    if (!pattern) {
      v = strtod(p, &q);
      bad |= q == p;
    }
    if (bad || i < 1 || i > m || j < 1 || j > k) {
      free(ri);
      free(e);
      return mtx_fail_(err, errlen, f, "%s: bad or out-of-range entry (line %lld)", path, ln);
    }
    ri[cnt] = i - 1;
    e[cnt].col = j - 1;
    e[cnt].val = v;
    e[cnt].seq = cnt;
    cnt++;
    if (symmetric && i != j) {
      ri[cnt] = j - 1;
      e[cnt].col = i - 1;
      e[cnt].val = symmetric == 2 ? -v : v;
      e[cnt].seq = cnt;
      cnt++;
    }
    got++;
  }
  fclose(f);
  if (got < stored) {
    free(ri);
    free(e);
    return mtx_fail_(err, errlen, NULL, "%s: file ends early (line %lld)", path, ln);
  }
  /* bucket by row (stable), then sort each row by column */
  int64_t *rp = (int64_t *)calloc((size_t)m + 1, sizeof(int64_t));
  mtx_entry_ *s = (mtx_entry_ *)malloc(sizeof(mtx_entry_) * (size_t)(cnt + 1));
  if (!rp || !s) {
    free(ri);
    free(e);
    free(rp);
    free(s);
    return mtx_fail_(err, errlen, NULL, "%s: out of memory (line %lld)", path, ln);
  }
  for (long long t = 0; t < cnt; t++) rp[ri[t] + 1]++;
  for (long long r = 0; r < m; r++) rp[r + 1] += rp[r];
  int64_t *fill = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
  if (!fill) {
    free(ri);
    free(e);
    free(rp);
    free(s);
    return mtx_fail_(err, errlen, NULL, "%s: out of memory (line %lld)", path, ln);
  }
  memcpy(fill, rp, sizeof(int64_t) * (size_t)(m + 1));
  for (long long t = 0; t < cnt; t++) s[fill[ri[t]]++] = e[t];
  free(fill);
  free(ri);
  free(e);
  for (long long r = 0; r < m; r++)
    qsort(s + rp[r], (size_t)(rp[r + 1] - rp[r]), sizeof *s, mtx_cmp_);
  out->row_ptr = rp;
  out->col_ind = (int64_t *)malloc(sizeof(int64_t) * (size_t)(cnt + 1));
  out->values = (double *)malloc(sizeof(double) * (size_t)(cnt + 1));
  if (!out->col_ind || !out->values) {
    free(s);
    mtx_free(out);
    return mtx_fail_(err, errlen, NULL, "%s: out of memory (line %lld)", path, ln);
  }
  int64_t w = 0;
  for (long long r = 0; r < m; r++) {
    const int64_t a = rp[r], b = rp[r + 1];
    rp[r] = w;
    for (int64_t t = a; t < b; t++) {
      if ((flags & MTX_SUM_DUPLICATES) && w > rp[r] && out->col_ind[w - 1] == s[t].col) {
        out->values[w - 1] += s[t].val;
      } else {
        out->col_ind[w] = s[t].col;
        out->values[w] = s[t].val;
        w++;
      }
    }
  }
  rp[m] = w;
  free(s);
  out->m = m;
  out->k = k;
  out->nnz = w;
  out->pattern = pattern;
  out->symmetric = symmetric;
  return 0;
}

static inline int mtx_exists_(const char *p) { return access(p, R_OK) == 0; }

/* Finds `name` in the usual data directories; 0 when found (path filled). */
static inline int mtx_find(const char *name, char *path, size_t len) {
  const char *env = getenv("GKO_DATA_DIR");
  if (env && *env) {
    mtx_fmt_(path, len, "%s/%s", env, name);
    if (mtx_exists_(path)) return 0;
  }
  const char *dirs[] = {"data", "../data", "../../data"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    mtx_fmt_(path, len, "%s/%s", dirs[i], name);
    if (mtx_exists_(path)) return 0;
  }
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      mtx_fmt_(path, len, "%s/../../data/%s", exe, name);
      if (mtx_exists_(path)) return 0;
    }
  }
  mtx_fmt_(path, len, "data/%s", name);
  return 1;
}

#endif /* GKO_MTX_H */
