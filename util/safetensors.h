/* safetensors.h -- reading safetensors files (the format of Hugging Face's
 * safetensors library: an 8-byte little-endian header length, a JSON header
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
 * {...}}, then the tensors' bytes).  The header is parsed with cJSON; every
 * rule of the format is checked (known dtype, non-negative shape, the byte
 * count of each tensor equal to its shape's, offsets inside the data, the
 * tensors covering the data without gaps or overlap, as the reference
 * implementation requires), so a damaged file is refused with a reason
 * rather than read out of bounds.  Used by the examples, outside the
 * library. */
#ifndef GKO_UTIL_SAFETENSORS_H
#define GKO_UTIL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL } st_dtype;

enum { ST_MAX_DIMS = 8 };

typedef struct {
  char *name;
  st_dtype dtype;
  int ndim;
  int64_t shape[ST_MAX_DIMS];
  int64_t numel;
  const void *data; /* inside the file's buffer */
  size_t bytes;
} st_tensor;

typedef struct {
  void *buf; /* the whole file (owned when read by st_open) */
  size_t buf_bytes;
  int owned;
  st_tensor *tensors;
  int count;
} st_file;

/* Parses a file image held in memory (not copied: buf must outlive f).
 * Returns 0, or -1 with a reason in err (NUL-terminated, err_bytes > 0). */
int st_parse(const void *buf, size_t bytes, st_file *f, char *err, size_t err_bytes);
/* Reads path whole and parses it (st_close frees it). */
int st_open(const char *path, st_file *f, char *err, size_t err_bytes);
void st_close(st_file *f);

/* The tensor of that name, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);
size_t st_dtype_size(st_dtype d);
const char *st_dtype_name(st_dtype d);
/* Converts a floating-point tensor (F64, F32, F16, BF16) to float: 0, or -1
 * for another dtype. */
int st_to_float(const st_tensor *t, float *out);

#endif
