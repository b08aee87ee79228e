/* test_safetensors.c -- the safetensors reader the examples use
 * (util/safetensors.c, compiled into this suite): well-formed files read
 * back exactly, and every malformed header or data layout refused with a
 * reason instead of read out of bounds (the CI runs this suite under
 * AddressSanitizer).  Host only. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/safetensors.c"

/* a file image: the 8-byte length, the header padded with spaces to pad, data */
static size_t make(unsigned char *buf, size_t cap, const char *header, size_t pad, const void *data,
                   size_t data_bytes) {
  size_t h = strlen(header), hp = h < pad ? pad : h;
  cr_assert(8 + hp + data_bytes <= cap);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hp >> (8 * i));
  memcpy(buf + 8, header, h);
  memset(buf + 8 + h, ' ', hp - h);
  if (data_bytes) memcpy(buf + 8 + hp, data, data_bytes);
  return 8 + hp + data_bytes;
}

static unsigned char g_buf[1 << 16];
static char g_err[256];

/* parses header + data, expecting failure with `why` in the reason */
static void refused(const char *header, const void *data, size_t data_bytes, const char *why) {
  st_file f;
  const size_t n = make(g_buf, sizeof g_buf, header, 0, data, data_bytes);
  g_err[0] = 0;
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), -1, "accepted: %s", header);
  cr_assert(strstr(g_err, why), "reason \"%s\" lacks \"%s\" (header %s)", g_err, why, header);
  cr_assert_eq(f.count, 0);
  cr_assert_null(f.tensors);
}

Test(safetensors, reads_tensors_and_metadata) {
  /* a [2][3] F32 tensor, a [4] F16 tensor and a [2] BF16 tensor, in another order than the data */
  float a[6] = {1, -2, 3.5f, 0, 1e-3f, -65504};
  uint16_t hb[4] = {0x3c00, 0xc000, 0x7bff, 0x0001}; /* 1, -2, 65504, 2^-24 */
  uint16_t bb[2] = {0x3f80, 0xc2f7};                 /* 1, -123.5 */
  unsigned char data[24 + 8 + 4];
  memcpy(data, a, 24), memcpy(data + 24, hb, 8), memcpy(data + 32, bb, 4);
  const char *hdr =
      "{\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
      "\"__metadata__\":{\"format\":\"pt\"},"
      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[32,36]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
  st_file f;
  const size_t n = make(g_buf, sizeof g_buf, hdr, 256, data, sizeof data);
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), 0, "%s", g_err);
  cr_assert_eq(f.count, 3);
  const st_tensor *ta = st_find(&f, "a"), *th = st_find(&f, "h"), *tb = st_find(&f, "b");
  cr_assert(ta && th && tb);
  cr_assert_null(st_find(&f, "__metadata__"));
  cr_assert_null(st_find(&f, "c"));
  cr_assert_eq(ta->ndim, 2);
  cr_assert(ta->shape[0] == 2 && ta->shape[1] == 3 && ta->numel == 6 && ta->bytes == 24);
  cr_assert_eq(ta->dtype, ST_F32);
  float out[6];
  cr_assert_eq(st_to_float(ta, out), 0);
  for (int i = 0; i < 6; i++) cr_assert_eq(out[i], a[i]);
  cr_assert_eq(st_to_float(th, out), 0);
  cr_assert(out[0] == 1 && out[1] == -2 && out[2] == 65504 && out[3] == 0x1p-24f);
  cr_assert_eq(st_to_float(tb, out), 0);
  cr_assert(out[0] == 1 && out[1] == -123.5f);
  st_close(&f);
}

Test(safetensors, empty_and_zero_sized) {
  st_file f;
  size_t n = make(g_buf, sizeof g_buf, "{}", 8, NULL, 0);
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), 0, "%s", g_err);
  cr_assert_eq(f.count, 0);
  st_close(&f);
  /* a tensor with a 0 in its shape takes no bytes; a scalar (shape []) one element */
  float v = 7;
  n = make(g_buf, sizeof g_buf,
           "{\"z\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[0,0]},"
           "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
           0, &v, 4);
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), 0, "%s", g_err);
  cr_assert_eq(st_find(&f, "z")->numel, 0);
  cr_assert_eq(st_find(&f, "s")->numel, 1);
  float out = 0;
  cr_assert_eq(st_to_float(st_find(&f, "s"), &out), 0);
  cr_assert_eq(out, 7);
  st_close(&f);
}

Test(safetensors, refuses_bad_lengths) {
  st_file f;
  cr_assert_eq(st_parse(g_buf, 7, &f, g_err, sizeof g_err), -1);
  cr_assert(strstr(g_err, "shorter than"));
  /* a header length past the end of the file, and one of 2^63 */
  size_t n = make(g_buf, sizeof g_buf, "{}", 0, NULL, 0);
  g_buf[0] = 3;
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), -1);
  cr_assert(strstr(g_err, "header of 3 bytes"), "%s", g_err);
  memset(g_buf, 0, 8);
  g_buf[7] = 0x80;
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), -1);
  cr_assert(strstr(g_err, "header of"), "%s", g_err);
  /* an empty header */
  memset(g_buf, 0, 8);
  cr_assert_eq(st_parse(g_buf, 8, &f, g_err, sizeof g_err), -1);
  cr_assert(strstr(g_err, "not a JSON object"), "%s", g_err);
}

Test(safetensors, refuses_bad_json) {
  refused("[1, 2]", NULL, 0, "not a JSON object");
  refused("{\"a\": ", NULL, 0, "not valid JSON");
  refused("{} x", NULL, 0, "not padding");
  refused("{\"a\": 3}", NULL, 0, "not a JSON object");
  refused("{\"__metadata__\": 3}", NULL, 0, "__metadata__");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", NULL, 0, "data_offsets");
  refused("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", 4, "dtype");
}

Test(safetensors, refuses_bad_entries) {
  const char d[16] = {0};
  refused("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", d, 4, "not supported");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", d, 4, "shape[0]");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", d, 4, "shape[0]");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", d, 4, "shape[0]");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", d, 4,
          "dimensions");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,4]}}", d, 4,
          "overflows");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", d, 4, "two non-negative");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", d, 4, "two non-negative");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", d, 4, "outside");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", d, 4, "outside");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", d, 4, "4 bytes for 2 elements");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
          "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
          d, 8, "twice");
}

Test(safetensors, refuses_gaps_and_overlaps) {
  const char d[16] = {0};
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, "a gap or an overlap");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
          d, 8, "a gap or an overlap");
  refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 8, "after the last tensor");
  refused("{}", d, 4, "no tensor");
}

Test(safetensors, to_float_refuses_integers) {
  const int32_t v = 5;
  st_file f;
  const size_t n = make(g_buf, sizeof g_buf, "{\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 0,
                        &v, 4);
  cr_assert_eq(st_parse(g_buf, n, &f, g_err, sizeof g_err), 0, "%s", g_err);
  float out;
  cr_assert_eq(st_to_float(st_find(&f, "i"), &out), -1);
  st_close(&f);
}

/* every file made by flipping bytes of a valid one parses or is refused,
 * never read out of bounds (AddressSanitizer in CI) */
Test(safetensors, mutations_never_crash) {
  float a[6] = {0};
  const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                    "\"__metadata__\":{\"k\":\"v\"}}";
  unsigned char base[512], m[512];
  const size_t n = make(base, sizeof base, hdr, 96, a, sizeof a);
  uint64_t s = 0x5AFE7E45ull;
  int ok = 0;
  for (int it = 0; it < 20000; it++) {
    memcpy(m, base, n);
    for (int j = 0; j < 1 + it % 4; j++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const size_t at = (size_t)(s >> 33) % n;
      m[at] = (unsigned char)(s >> 17);
    }
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const size_t len = it % 7 == 0 ? (size_t)(s >> 33) % (n + 1) : n; /* sometimes truncated */
    unsigned char *copy = malloc(len ? len : 1);                      /* exact size: ASan sees overruns */
    memcpy(copy, m, len);
    st_file f;
    if (st_parse(copy, len, &f, g_err, sizeof g_err) == 0) {
      ok++;
      for (int t = 0; t < f.count; t++) {
        const st_tensor *x = &f.tensors[t];
        cr_assert((const unsigned char *)x->data >= copy && (const unsigned char *)x->data + x->bytes <= copy + len);
        float *out = malloc((size_t)x->numel * sizeof *out + 1);
        st_to_float(x, out);
        free(out);
      }
      st_close(&f);
    }
    free(copy);
  }
  cr_assert(ok > 0 && ok < 20000, "%d of 20000 mutated files parsed", ok);
}

Test(safetensors, open_reads_a_file) {
  char path[] = "/tmp/gko-st-XXXXXX";
  const int fd = mkstemp(path);
  cr_assert(fd >= 0);
  const float v[2] = {3, -4};
  const size_t n = make(g_buf, sizeof g_buf, "{\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 64,
                        v, 8);
  FILE *fp = fdopen(fd, "wb");
  cr_assert_eq(fwrite(g_buf, 1, n, fp), n);
  fclose(fp);
  st_file f;
  cr_assert_eq(st_open(path, &f, g_err, sizeof g_err), 0, "%s", g_err);
  float out[2];
  cr_assert_eq(st_to_float(st_find(&f, "v"), out), 0);
  cr_assert(out[0] == 3 && out[1] == -4);
  st_close(&f);
  unlink(path);
  cr_assert_eq(st_open(path, &f, g_err, sizeof g_err), -1);
  cr_assert(strstr(g_err, "cannot open"), "%s", g_err);
}
