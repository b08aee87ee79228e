/* bert_tokenizer.c -- see bert_tokenizer.h.  The stages follow the Rust
 * `tokenizers` crate (normalizers/bert.rs, pre_tokenizers/bert.rs,
 * models/wordpiece) step by step, so that every code point is classified
 * and mapped as there. */
#include "bert_tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_tables.h"

enum { MAX_TOKEN_BYTES = 1 << 16 };

struct bert_tokenizer {
  int count;
  char *blob;    /* every token, NUL-terminated */
  size_t *off;   /* [count]: token i at blob + off[i] */
  uint32_t *len; /* [count]: its length in bytes */
  int32_t *slot; /* open addressing: ids, -1 empty */
  uint32_t mask; /* slots - 1 */
  int32_t unk, cls, sep;
  int32_t special[5]; /* ids of kSpecial[i], -1 when not in the vocabulary */
};

static const char *const kSpecial[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

static void *fail(char *err, size_t n, const char *fmt, ...) {
  if (err && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
  }
  return NULL;
}

/* ---- vocabulary ------------------------------------------------------------ */

/* FNV-1a over prefix then s */
static uint32_t hash2(const char *prefix, size_t np, const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < np; i++) h = (h ^ (unsigned char)prefix[i]) * 16777619u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* The id of prefix + s, or -1. */
static int32_t lookup(const bert_tokenizer *t, const char *prefix, size_t np, const char *s,
                      size_t n) {
  for (uint32_t i = hash2(prefix, np, s, n) & t->mask;; i = (i + 1) & t->mask) {
    const int32_t id = t->slot[i];
    if (id < 0) return -1;
    const char *k = t->blob + t->off[id];
    if (t->len[id] == np + n && !memcmp(k, prefix, np) && !memcmp(k + np, s, n)) return id;
  }
}

/* Builds the table over blob holding count tokens (each NUL-terminated). */
static bert_tokenizer *build(char *blob, int count, char *err, size_t n) {
  bert_tokenizer *t = calloc(1, sizeof *t);
  uint32_t slots = 16;
  while (slots < 2u * (uint32_t)count) slots *= 2;
  if (t) {
    t->blob = blob, t->count = count, t->mask = slots - 1;
    t->off = malloc(sizeof *t->off * (size_t)(count ? count : 1));
    t->len = malloc(sizeof *t->len * (size_t)(count ? count : 1));
    t->slot = malloc(sizeof *t->slot * slots);
  }
  if (!t || !t->off || !t->len || !t->slot) {
    if (t)
      t->blob = blob, bert_tokenizer_free(t);
    else
      free(blob);
    return fail(err, n, "out of memory for a vocabulary of %d tokens", count);
  }
  memset(t->slot, 0xff, sizeof *t->slot * slots);
  size_t at = 0;
  for (int id = 0; id < count; id++) {
    const size_t l = strlen(blob + at);
    t->off[id] = at, t->len[id] = (uint32_t)l;
    uint32_t i = hash2("", 0, blob + at, l) & t->mask;
    for (; t->slot[i] >= 0; i = (i + 1) & t->mask) {
      const int32_t o = t->slot[i];
      if (t->len[o] == l && !memcmp(blob + t->off[o], blob + at, l))
        break; /* repeated: last wins */
    }
    t->slot[i] = id;
    at += l + 1;
  }
  for (int i = 0; i < 5; i++) t->special[i] = lookup(t, "", 0, kSpecial[i], strlen(kSpecial[i]));
  t->unk = t->special[1], t->cls = t->special[2], t->sep = t->special[3];
  for (int i = 1; i <= 3; i++)
    if (t->special[i] < 0) {
      bert_tokenizer_free(t);
      return fail(err, n, "the vocabulary has no %s token", kSpecial[i]);
    }
  return t;
}

bert_tokenizer *bert_tokenizer_from_tokens(const char *const *tokens, int count, char *err,
                                           size_t n) {
  if (!tokens || count < 0) return fail(err, n, "tokens is NULL or count %d < 0", count);
  size_t bytes = 0;
  for (int i = 0; i < count; i++) {
    if (!tokens[i]) return fail(err, n, "tokens[%d] is NULL", i);
    bytes += strlen(tokens[i]) + 1;
  }
  char *blob = malloc(bytes ? bytes : 1);
  if (!blob) return fail(err, n, "out of memory for %zu bytes of tokens", bytes);
  size_t at = 0;
  for (int i = 0; i < count; i++) {
    const size_t l = strlen(tokens[i]);
    memcpy(blob + at, tokens[i], l + 1);
    at += l + 1;
  }
  return build(blob, count, err, n);
}

bert_tokenizer *bert_tokenizer_load(const char *path, char *err, size_t n) {
  if (!path) return fail(err, n, "vocab_path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, n, "cannot open %s", path);
  char *buf = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size + 65536 + 2 > cap) {
      char *b = realloc(buf, cap = 2 * cap + 65536 + 2);
      if (!b) {
        free(buf), fclose(f);
        return fail(err, n, "out of memory reading %s", path);
      }
      buf = b;
    }
    const size_t got = fread(buf + size, 1, 65536, f);
    size += got;
    if (got < 65536) break;
  }
  const int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return fail(err, n, "cannot read %s", path);
  }
  if (size && buf[size - 1] != '\n') buf[size++] = '\n'; /* the last line may lack its '\n' */
  /* lines become NUL-terminated tokens in place */
  int count = 0;
  size_t w = 0;
  for (size_t i = 0, start = 0; i < size; i++) {
    if (buf[i] == '\0') {
      free(buf);
      return fail(err, n, "%s: line %d holds a NUL byte", path, count + 1);
    }
    if (buf[i] != '\n') continue;
    size_t e = i;
    while (e > start && (buf[e - 1] == '\r' || buf[e - 1] == ' ' || buf[e - 1] == '\t')) e--;
    if (e - start >= MAX_TOKEN_BYTES) {
      free(buf);
      return fail(err, n, "%s: line %d is longer than %d bytes", path, count + 1, MAX_TOKEN_BYTES);
    }
    memmove(buf + w, buf + start, e - start);
    w += e - start;
    buf[w++] = '\0';
    start = i + 1;
    if (++count == 1 << 24) {
      free(buf);
      return fail(err, n, "%s: more than %d lines", path, 1 << 24);
    }
  }
  if (!count) {
    free(buf);
    return fail(err, n, "%s is empty", path);
  }
  char err2[200];
  bert_tokenizer *t = build(buf, count, err2, sizeof err2);
  if (!t) return fail(err, n, "%s: %s", path, err2);
  return t;
}

void bert_tokenizer_free(bert_tokenizer *t) {
  if (!t) return;
  free(t->blob), free(t->off), free(t->len), free(t->slot), free(t);
}

int bert_vocab_size(const bert_tokenizer *t) { return t ? t->count : 0; }

int32_t bert_token_id(const bert_tokenizer *t, const char *token, size_t len) {
  if (!t || (!token && len)) return -1;
  return lookup(t, "", 0, token ? token : "", len);
}

const char *bert_token_text(const bert_tokenizer *t, int32_t id) {
  return t && id >= 0 && id < t->count ? t->blob + t->off[id] : NULL;
}

/* ---- character data ----------------------------------------------------------- */

static int in_ranges(const ut_range *r, int n, uint32_t c) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    const int m = (lo + hi) / 2;
    if (c < r[m].lo)
      hi = m - 1;
    else if (c > r[m].hi)
      lo = m + 1;
    else
      return 1;
  }
  return 0;
}
#define IN(table, c) in_ranges(table, (int)(sizeof table / sizeof table[0]), c)

static uint32_t ccc_of(uint32_t c) {
  int lo = 0, hi = (int)(sizeof ut_ccc / sizeof ut_ccc[0]) - 1;
  while (lo <= hi) {
    const int m = (lo + hi) / 2;
    if (c < ut_ccc[m].lo)
      hi = m - 1;
    else if (c > ut_ccc[m].hi)
      lo = m + 1;
    else
      return ut_ccc[m].ccc;
  }
  return 0;
}

/* The number of NFD pieces of c (see unicode_tables.h; may be 0), or -1 when
 * c is its own NFD. */
static int decomp_of(uint32_t c, const uint32_t **pieces) {
  int lo = 0, hi = (int)(sizeof ut_decomp_key / sizeof ut_decomp_key[0]) - 1;
  while (lo <= hi) {
    const int m = (lo + hi) / 2;
    const uint32_t k = ut_decomp_key[m] & 0xffffff;
    if (c < k)
      hi = m - 1;
    else if (c > k)
      lo = m + 1;
    else {
      *pieces = ut_decomp_pool + ut_decomp_off[m];
      return (int)(ut_decomp_key[m] >> 24);
    }
  }
  return -1;
}

/* Writes the lower case of c to out[0..3), returns its length. */
static int lower_of(uint32_t c, uint32_t out[3]) {
  for (size_t i = 0; i < sizeof ut_lower_long / sizeof ut_lower_long[0]; i++)
    if (ut_lower_long[i].cp == c && c) {
      int k = 0;
      while (k < 3 && ut_lower_long[i].out[k]) out[k] = ut_lower_long[i].out[k], k++;
      return k;
    }
  int lo = 0, hi = (int)(sizeof ut_lower / sizeof ut_lower[0]) - 1;
  while (lo <= hi) { /* the last run starting at or before c */
    const int m = (lo + hi) / 2;
    if (ut_lower[m].lo <= c)
      lo = m + 1;
    else
      hi = m - 1;
  }
  if (hi >= 0 && c <= ut_lower[hi].hi && (c - ut_lower[hi].lo) % ut_lower[hi].step == 0)
    c = (uint32_t)((int32_t)c + ut_lower[hi].delta);
  out[0] = c;
  return 1;
}

/* ---- growable arrays ----------------------------------------------------------- */

typedef struct {
  uint32_t *v;
  size_t n, cap;
  int oom;
} u32vec;

static void push(u32vec *a, uint32_t x) {
  if (a->n == a->cap) {
    const size_t cap = a->cap ? 2 * a->cap : 256;
    uint32_t *v = a->oom ? NULL : realloc(a->v, cap * sizeof *v);
    if (!v) {
      a->oom = 1;
      return;
    }
    a->v = v, a->cap = cap;
  }
  a->v[a->n++] = x;
}

/* ---- normalizer ------------------------------------------------------------ */

/* The NFD stage's state: marks with a combining class wait in run (packed
 * ccc << 21 | code point) until the next starter, then leave sorted by class
 * (stable), as canonical ordering does. */
typedef struct {
  u32vec *out, run;
  size_t count[256];
  u32vec tmp;
} nfd_state;

static void emit(nfd_state *s, uint32_t c) {
  uint32_t l[3];
  const int k = lower_of(c, l);
  for (int i = 0; i < k; i++) push(s->out, l[i]);
}

static void flush(nfd_state *s) {
  uint32_t *r = s->run.v;
  const size_t n = s->run.n;
  if (n <= 16) {
    for (size_t i = 1; i < n; i++) /* insertion sort: stable */
      for (size_t j = i; j > 0 && r[j - 1] >> 21 > r[j] >> 21; j--) {
        const uint32_t x = r[j];
        r[j] = r[j - 1], r[j - 1] = x;
      }
  } else { /* counting sort by class: stable, linear in the run */
    s->tmp.n = 0;
    for (size_t i = 0; i < n; i++) push(&s->tmp, 0);
    if (s->tmp.oom) {
      s->run.n = 0, s->out->oom = 1;
      return;
    }
    memset(s->count, 0, sizeof s->count);
    for (size_t i = 0; i < n; i++) s->count[r[i] >> 21]++;
    for (size_t k = 0, at = 0; k < 256; k++) {
      const size_t c = s->count[k];
      s->count[k] = at, at += c;
    }
    for (size_t i = 0; i < n; i++) s->tmp.v[s->count[r[i] >> 21]++] = r[i];
    r = s->tmp.v;
  }
  for (size_t i = 0; i < n; i++) emit(s, r[i] & 0x1fffff);
  s->run.n = 0;
}

/* One character of NFD's output: strip_accents drops nonspacing marks, a
 * starter (class 0, dropped or not) ends the reordering run. */
static void feed_piece(nfd_state *s, uint32_t d) {
  const uint32_t cc = ccc_of(d);
  const int strip = IN(ut_strip, d);
  if (cc == 0) {
    flush(s);
    if (!strip) emit(s, d);
  } else if (!strip) {
    push(&s->run, cc << 21 | d);
  }
}

static void feed_nfd(nfd_state *s, uint32_t c) {
  if (c >= 0xAC00 && c <= 0xD7A3) { /* Hangul syllable: L V (T) */
    const uint32_t i = c - 0xAC00;
    feed_piece(s, 0x1100 + i / 588);
    feed_piece(s, 0x1161 + (i % 588) / 28);
    if (i % 28) feed_piece(s, 0x11A7 + i % 28);
    return;
  }
  const uint32_t *p;
  const int k = decomp_of(c, &p);
  if (k < 0) feed_piece(s, c);
  for (int i = 0; i < k; i++) feed_piece(s, p[i]);
}

/* Decodes one UTF-8 character at s[0, n): its length, *c = U+FFFD for an
 * invalid sequence (length 1: the next bytes are decoded afresh, which
 * removes the same bytes as Python's maximal-subpart replacement). */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *c) {
  const unsigned b = s[0];
  size_t k;
  uint32_t v, min;
  if (b < 0x80) return *c = b, 1;
  if (b >= 0xC2 && b <= 0xDF)
    k = 2, v = b & 0x1f, min = 0x80;
  else if (b >= 0xE0 && b <= 0xEF)
    k = 3, v = b & 0x0f, min = 0x800;
  else if (b >= 0xF0 && b <= 0xF4)
    k = 4, v = b & 0x07, min = 0x10000;
  else
    return *c = 0xFFFD, 1;
  if (n < k) return *c = 0xFFFD, 1;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xc0) != 0x80) return *c = 0xFFFD, 1;
    v = v << 6 | (s[i] & 0x3f);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return *c = 0xFFFD, 1;
  return *c = v, k;
}

/* BertNormalizer over s[0, n), appending code points to out. */
static void normalize(const unsigned char *s, size_t n, u32vec *out) {
  nfd_state st = {.out = out};
  for (size_t i = 0; i < n;) {
    uint32_t c;
    i += utf8_next(s + i, n - i, &c);
    if (c == 0 || c == 0xFFFD || IN(ut_control, c)) continue; /* clean_text */
    if (IN(ut_whitespace, c)) c = ' ';
    if (IN(ut_cjk, c)) { /* handle_chinese_chars */
      feed_nfd(&st, ' ');
      feed_nfd(&st, c);
      feed_nfd(&st, ' ');
    } else {
      feed_nfd(&st, c);
    }
  }
  flush(&st);
  if (st.run.oom || st.tmp.oom) out->oom = 1;
  free(st.run.v), free(st.tmp.v);
}

/* ---- WordPiece ------------------------------------------------------------- */

static size_t utf8_put(uint32_t c, char *o) {
  if (c < 0x80) return o[0] = (char)c, 1;
  if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3f)), 2;
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 0x3f));
    o[2] = (char)(0x80 | (c & 0x3f));
    return 3;
  }
  o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 0x3f));
  o[2] = (char)(0x80 | (c >> 6 & 0x3f)), o[3] = (char)(0x80 | (c & 0x3f));
  return 4;
}

/* The ids of the word w[0, n) (code points) appended to ids. */
static void wordpiece(const bert_tokenizer *t, const uint32_t *w, size_t n, u32vec *ids) {
  if (n > BERT_MAX_WORD_CHARS) {
    push(ids, (uint32_t)t->unk);
    return;
  }
  char b[4 * BERT_MAX_WORD_CHARS];
  size_t at[BERT_MAX_WORD_CHARS + 1]; /* byte offset of each character */
  at[0] = 0;
  for (size_t i = 0; i < n; i++) at[i + 1] = at[i] + utf8_put(w[i], b + at[i]);
  const size_t mark = ids->n;
  for (size_t start = 0; start < n;) {
    size_t end = n;
    int32_t id = -1;
    for (; end > start; end--) {
      id = lookup(t, "##", start ? 2 : 0, b + at[start], at[end] - at[start]);
      if (id >= 0) break;
    }
    if (id < 0) { /* a part no entry matches: the whole word is [UNK] */
      ids->n = mark;
      push(ids, (uint32_t)t->unk);
      return;
    }
    push(ids, (uint32_t)id);
    start = end;
  }
}

/* BertPreTokenizer + WordPiece over normalized code points. */
static void words(const bert_tokenizer *t, const u32vec *norm, u32vec *ids) {
  size_t start = 0;
  for (size_t i = 0; i < norm->n; i++) {
    const uint32_t c = norm->v[i];
    const int ws = IN(ut_whitespace, c), punct = !ws && IN(ut_punct, c);
    if (!ws && !punct) continue;
    if (i > start) wordpiece(t, norm->v + start, i - start, ids);
    if (punct) wordpiece(t, norm->v + i, 1, ids);
    start = i + 1;
  }
  if (norm->n > start) wordpiece(t, norm->v + start, norm->n - start, ids);
}

/* The special token written at s[0, n), its index in kSpecial, or -1 */
static int special_at(const bert_tokenizer *t, const char *s, size_t n, size_t *len) {
  if (s[0] != '[') return -1;
  for (int i = 0; i < 5; i++) {
    const size_t l = strlen(kSpecial[i]);
    if (t->special[i] >= 0 && l <= n && !memcmp(s, kSpecial[i], l)) return *len = l, i;
  }
  return -1;
}

int bert_tokenize(const bert_tokenizer *t, const char *text, size_t len, int max_len, int32_t *ids,
                  int *n_ids) {
  if (!t || !ids || max_len < 2 || (!text && len)) return -1;
  u32vec out = {0}, norm = {0};
  push(&out, (uint32_t)t->cls);
  size_t seg = 0;
  for (size_t i = 0; i <= len; i++) {
    size_t sl = 0;
    const int sp = i < len ? special_at(t, text + i, len - i, &sl) : -1;
    if (sp < 0 && i < len) continue;
    norm.n = 0;
    normalize((const unsigned char *)text + seg, i - seg, &norm);
    words(t, &norm, &out);
    if (sp >= 0) {
      push(&out, (uint32_t)t->special[sp]);
      i += sl - 1;
    }
    seg = i + 1;
  }
  push(&out, (uint32_t)t->sep);
  const int oom = out.oom || norm.oom || out.n > (size_t)1 << 30;
  free(norm.v);
  if (oom) {
    free(out.v);
    return -1;
  }
  const int total = (int)out.n, n = total < max_len ? total : max_len;
  for (int i = 0; i < n - 1; i++) ids[i] = (int32_t)out.v[i];
  ids[n - 1] = t->sep;
  if (n_ids) *n_ids = n;
  free(out.v);
  return total;
}
