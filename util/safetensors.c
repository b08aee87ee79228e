/* safetensors.c -- see safetensors.h. */
#include "safetensors.h"

#include "half.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the reference implementation's bound on the header */
#define ST_MAX_HEADER (100u << 20)

static const struct {
  const char *name;
  st_dtype dtype;
  size_t size;
} kDtypes[] = {{"F64", ST_F64, 8}, {"F32", ST_F32, 4}, {"F16", ST_F16, 2},  {"BF16", ST_BF16, 2},
               {"I64", ST_I64, 8}, {"I32", ST_I32, 4}, {"I16", ST_I16, 2},  {"I8", ST_I8, 1},
               {"U8", ST_U8, 1},   {"BOOL", ST_BOOL, 1}};

size_t st_dtype_size(st_dtype d) {
  for (size_t i = 0; i < sizeof kDtypes / sizeof kDtypes[0]; i++)
    if (kDtypes[i].dtype == d) return kDtypes[i].size;
  return 0;
}
const char *st_dtype_name(st_dtype d) {
  for (size_t i = 0; i < sizeof kDtypes / sizeof kDtypes[0]; i++)
    if (kDtypes[i].dtype == d) return kDtypes[i].name;
  return "?";
}

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

/* a JSON number that is an integer in [0, 2^53] */
static int get_index(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return -1;
  const double d = v->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return -1;
  *out = (int64_t)d;
  return 0;
}

static int by_offset(const void *a, const void *b) {
  const st_tensor *x = a, *y = b;
  const char *xb = x->data, *yb = y->data;
  if (xb != yb) return xb < yb ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

void st_close(st_file *f) {
  if (!f) return;
  for (int i = 0; i < f->count; i++) free(f->tensors[i].name);
  free(f->tensors);
  if (f->owned) free(f->buf);
  memset(f, 0, sizeof *f);
}

static int parse_entry(const cJSON *e, const char *data, size_t data_bytes, st_tensor *t,
                       char *err, size_t n) {
  const char *name = e->string;
  if (!cJSON_IsObject(e)) return fail(err, n, "tensor \"%s\": not a JSON object", name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
    return fail(err, n, "tensor \"%s\": needs \"dtype\" (string), \"shape\" and \"data_offsets\" (arrays)",
                name);
  size_t es = 0;
  for (size_t i = 0; i < sizeof kDtypes / sizeof kDtypes[0]; i++)
    if (!strcmp(dt->valuestring, kDtypes[i].name)) t->dtype = kDtypes[i].dtype, es = kDtypes[i].size;
  if (!es) return fail(err, n, "tensor \"%s\": dtype \"%s\" is not supported", name, dt->valuestring);
  const int nd = cJSON_GetArraySize(sh);
  if (nd > ST_MAX_DIMS) return fail(err, n, "tensor \"%s\": %d dimensions (at most %d)", name, nd, ST_MAX_DIMS);
  int64_t numel = 1;
  for (int i = 0; i < nd; i++) {
    if (get_index(cJSON_GetArrayItem(sh, i), &t->shape[i]))
      return fail(err, n, "tensor \"%s\": shape[%d] is not a non-negative integer", name, i);
    if (t->shape[i] && numel > INT64_MAX / 8 / t->shape[i])
      return fail(err, n, "tensor \"%s\": its size overflows", name);
    numel *= t->shape[i];
  }
  t->ndim = nd;
  t->numel = numel;
  int64_t begin, end;
  if (cJSON_GetArraySize(of) != 2 || get_index(cJSON_GetArrayItem(of, 0), &begin) ||
      get_index(cJSON_GetArrayItem(of, 1), &end))
    return fail(err, n, "tensor \"%s\": data_offsets must be two non-negative integers", name);
  if (begin > end || (uint64_t)end > data_bytes)
    return fail(err, n, "tensor \"%s\": data_offsets [%lld, %lld] outside the %zu data bytes", name,
                (long long)begin, (long long)end, data_bytes);
  if ((uint64_t)(end - begin) != (uint64_t)numel * es)
    return fail(err, n, "tensor \"%s\": %lld bytes for %lld elements of %s", name,
                (long long)(end - begin), (long long)numel, dt->valuestring);
  t->data = data + begin;
  t->bytes = (size_t)(end - begin);
  t->name = strdup(name);
  if (!t->name) return fail(err, n, "out of host memory");
  return 0;
}

int st_parse(const void *buf, size_t bytes, st_file *f, char *err, size_t n) {
  memset(f, 0, sizeof *f);
  const unsigned char *b = buf;
  if (bytes < 8) return fail(err, n, "%zu bytes: shorter than the 8-byte header length", bytes);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
  if (hlen > bytes - 8) return fail(err, n, "header of %llu bytes in a file of %zu", (unsigned long long)hlen, bytes);
  if (hlen > ST_MAX_HEADER) return fail(err, n, "header of %llu bytes (at most %u)", (unsigned long long)hlen, ST_MAX_HEADER);
  const char *hdr = (const char *)b + 8, *data = hdr + hlen;
  const size_t data_bytes = bytes - 8 - (size_t)hlen;
  if (hlen == 0 || hdr[0] != '{') return fail(err, n, "the header is not a JSON object");
  /* a NUL-terminated copy: cJSON before 1.7.13 has no length-bounded parse */
  char *text = malloc((size_t)hlen + 1);
  if (!text) return fail(err, n, "out of host memory");
  memcpy(text, hdr, (size_t)hlen);
  text[hlen] = 0;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
  if (!root || !cJSON_IsObject(root)) {
    const ptrdiff_t at = (end ? end : text) - text;
    cJSON_Delete(root);
    free(text);
    return fail(err, n, "the header is not valid JSON (near byte %td)", at);
  }
  for (const char *p = end; p < text + hlen; p++)
    if (*p != ' ') {
      cJSON_Delete(root);
      free(text);
      return fail(err, n, "bytes after the header's JSON object that are not padding (or a NUL)");
    }
  free(text);
  const int items = cJSON_GetArraySize(root);
  f->tensors = calloc(items ? (size_t)items : 1, sizeof *f->tensors);
  if (!f->tensors) {
    cJSON_Delete(root);
    return fail(err, n, "out of host memory");
  }
  int rc = 0;
  for (const cJSON *e = root->child; e && !rc; e = e->next) {
    if (!strcmp(e->string, "__metadata__")) {
      if (!cJSON_IsObject(e)) rc = fail(err, n, "__metadata__ is not an object");
      continue;
    }
    if (st_find(f, e->string)) {
      rc = fail(err, n, "tensor \"%s\" appears twice", e->string);
      break;
    }
    rc = parse_entry(e, data, data_bytes, &f->tensors[f->count], err, n);
    if (!rc) f->count++;
  }
  cJSON_Delete(root);
  if (!rc && f->count) {
    /* the tensors must tile the data exactly (no gap, no overlap) */
    st_tensor *s = malloc((size_t)f->count * sizeof *s);
    if (!s) rc = fail(err, n, "out of host memory");
    else {
      memcpy(s, f->tensors, (size_t)f->count * sizeof *s);
      qsort(s, (size_t)f->count, sizeof *s, by_offset);
      const char *at = data;
      for (int i = 0; i < f->count && !rc; i++) {
        if ((const char *)s[i].data != at)
          rc = fail(err, n, "tensor \"%s\" starts at data byte %td, expected %td (a gap or an overlap)",
                    s[i].name, (const char *)s[i].data - data, at - data);
        at += s[i].bytes;
      }
      if (!rc && at != data + data_bytes)
        rc = fail(err, n, "%td data bytes after the last tensor", data + data_bytes - at);
      free(s);
    }
  } else if (!rc && data_bytes)
    rc = fail(err, n, "%zu data bytes and no tensor", data_bytes);
  if (rc) st_close(f);
  else f->buf = (void *)buf, f->buf_bytes = bytes;
  return rc;
}

int st_open(const char *path, st_file *f, char *err, size_t n) {
  memset(f, 0, sizeof *f);
  FILE *fp = fopen(path, "rb");
  if (!fp) return fail(err, n, "%s: cannot open", path);
  void *buf = NULL;
  long len = -1;
  if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
  if (len < 0 || fseek(fp, 0, SEEK_SET) != 0) {
    fclose(fp);
    return fail(err, n, "%s: cannot find its size", path);
  }
  buf = malloc(len ? (size_t)len : 1);
  if (!buf || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
    fclose(fp);
    free(buf);
    return fail(err, n, "%s: cannot read %ld bytes", path, len);
  }
  fclose(fp);
  char why[256];
  if (st_parse(buf, (size_t)len, f, why, sizeof why)) {
    free(buf);
    return fail(err, n, "%s: %s", path, why);
  }
  f->owned = 1;
  return 0;
}

const st_tensor *st_find(const st_file *f, const char *name) {
  for (int i = 0; i < f->count; i++)
    if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
  return NULL;
}

int st_to_float(const st_tensor *t, float *out) {
  const unsigned char *p = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    switch (t->dtype) {
      case ST_F64: {
        double d;
        memcpy(&d, p + 8 * i, 8);
        out[i] = (float)d;
        break;
      }
      case ST_F32: memcpy(&out[i], p + 4 * i, 4); break;
      case ST_F16: out[i] = half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)); break;
      case ST_BF16: {
        const uint32_t u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
        memcpy(&out[i], &u, 4);
        break;
      }
      default: return -1;
    }
  }
  return 0;
}
