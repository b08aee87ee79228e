/* test_tokenizer.c -- the BERT WordPiece tokenizer of the MiniLM example
 * (util/bert_tokenizer.c, compiled into this suite).  Host only.
 *   - without the model: WordPiece's greedy longest match and "##" pieces,
 *     accents, CJK, punctuation, whitespace and control characters, literal
 *     special tokens, truncation, word lengths, invalid UTF-8, NUL bytes and
 *     vocab.txt parsing, on small hand-made vocabularies;
 *   - with all-MiniLM-L6-v2's vocab.txt (make model-minilm, or
 *     GKO_MINILM_DIR): the ids of every line of data/minilm/sentences.txt
 *     equal data/minilm/token_ids.txt (written by Hugging Face's `tokenizers`,
 *     python/tools/minilm_reference.py), plus edge cases whose ids were read
 *     from that library.  Those tests skip when the model is absent. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../util/bert_tokenizer.c"
#include "../util/mtx.h" /* mtx_find: the data directory */

/* ---- a small vocabulary ------------------------------------------------------ */

/* clang-format off */
static const char *const kVocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "unaff", "a",
    "##b", "hello", "world", ",", "!", "angstrom", "中", "国", "x", "##x",
    "#", "able", "e", "cafe", "[", "]", ".", "##ed"};
enum { PAD, UNK, CLS, SEP, MASK, UN, AFF, ABLE2, UNAFF, A, B2, HELLO, WORLD, COMMA, BANG,
       ANGSTROM, ZHONG, GUO, X, X2, HASH, ABLE, E, CAFE, LBR, RBR, DOT, ED2, NVOCAB };
/* clang-format on */

static bert_tokenizer *small(void) {
  char err[256] = "";
  bert_tokenizer *t = bert_tokenizer_from_tokens(kVocab, NVOCAB, err, sizeof err);
  cr_assert_not_null(t, "%s", err);
  cr_assert_eq(bert_vocab_size(t), NVOCAB);
  return t;
}

/* tokenizes len bytes of s (max_len 512) and compares with the ids given
 * (without [CLS] and [SEP], -1 terminated) */
static void expect_n(const bert_tokenizer *t, const char *s, size_t len, const int *want) {
  int32_t ids[512];
  int n = -7, w = 0;
  while (want[w] >= 0) w++;
  const int total = bert_tokenize(t, s, len, 512, ids, &n);
  cr_assert_eq(total, w + 2, "\"%.*s\": %d ids, expected %d", (int)len, s, total, w + 2);
  cr_assert_eq(n, total);
  cr_assert_eq(ids[0], CLS);
  cr_assert_eq(ids[n - 1], SEP);
  for (int i = 0; i < w; i++)
    cr_assert_eq(ids[i + 1], want[i], "\"%.*s\": id %d is %d (%s), expected %d (%s)", (int)len, s,
                 i + 1, ids[i + 1], bert_token_text(t, ids[i + 1]), want[i],
                 bert_token_text(t, want[i]));
}
#define EXPECT(t, s, ...) expect_n(t, s, strlen(s), (const int[]){__VA_ARGS__, -1})
#define EXPECT_NONE(t, s) expect_n(t, s, strlen(s), (const int[]){-1})

Test(tokenizer, wordpiece_longest_match_first) {
  bert_tokenizer *t = small();
  EXPECT(t, "unaffable", UNAFF, ABLE2); /* not un ##aff ##able: the longest first piece wins */
  EXPECT(t, "unable", UN, ABLE2);
  EXPECT(t, "unaffb", UNAFF, B2);
  EXPECT(t, "ab", A, B2);
  EXPECT(t, "xxxx", X, X2, X2, X2);
  EXPECT(t, "caféed", CAFE, ED2);
  bert_tokenizer_free(t);
}

Test(tokenizer, unmatched_part_makes_the_word_unknown) {
  bert_tokenizer *t = small();
  EXPECT(t, "unaffz", UNK); /* not unaff [UNK]: the whole word */
  EXPECT(t, "hello unaffz world", HELLO, UNK, WORLD);
  EXPECT(t, "ba", UNK); /* "b" exists only as ##b */
  EXPECT(t, "able", ABLE);
  /* "##" in the text is punctuation, never a continuation prefix */
  EXPECT(t, "##able", HASH, HASH, ABLE);
  EXPECT(t, "a##b", A, HASH, HASH, UNK);
  bert_tokenizer_free(t);
}

Test(tokenizer, accents_and_case) {
  bert_tokenizer *t = small();
  EXPECT(t, "Ångström", ANGSTROM);
  EXPECT(t, "ÅNGSTRÖM", ANGSTROM);
  EXPECT(t, "A\xcc\x8angstro\xcc\x88m", ANGSTROM); /* decomposed: A + ring, o + diaeresis */
  EXPECT(t, "anǵströ̃m̀", ANGSTROM);                 /* marks on top of marks */
  EXPECT(t, "CAFÉ Café café", CAFE, CAFE, CAFE);
  EXPECT(t, "HeLLo", HELLO);
  bert_tokenizer_free(t);
}

Test(tokenizer, cjk_and_punctuation_split) {
  bert_tokenizer *t = small();
  EXPECT(t, "中国x", ZHONG, GUO, X);
  EXPECT(t, "hello中国world", HELLO, ZHONG, GUO, WORLD);
  EXPECT(t, "hello,world!", HELLO, COMMA, WORLD, BANG);
  EXPECT(t, "!!!...", BANG, BANG, BANG, DOT, DOT, DOT);
  EXPECT(t, "かな", UNK);                      /* kana are not split like ideographs */
  EXPECT(t, "hello¡world", HELLO, UNK, WORLD); /* Unicode punctuation splits too */
  bert_tokenizer_free(t);
}

Test(tokenizer, whitespace_and_control_characters) {
  bert_tokenizer *t = small();
  EXPECT(t, "\thello\n\xc2\xa0world\xe3\x80\x80\r", HELLO, WORLD); /* tab, NBSP, U+3000 */
  EXPECT(t, "hel\xe2\x80\x8blo", HELLO);                           /* ZERO WIDTH SPACE: removed */
  EXPECT(t, "hel\x01lo hel\xc2\xadlo", HELLO, HELLO);              /* a control, SOFT HYPHEN */
  EXPECT(t, "hello\x0bworld", UNK); /* VT is a control first: removed, one word */
  EXPECT_NONE(t, " \t\n\r\xc2\xa0 ");
  bert_tokenizer_free(t);
}

Test(tokenizer, literal_special_tokens) {
  bert_tokenizer *t = small();
  EXPECT(t, "a[MASK]x", A, MASK, X);
  EXPECT(t, "[CLS][SEP] [PAD][UNK]", CLS, SEP, PAD, UNK);
  EXPECT(t, "[mask]", LBR, UNK, RBR); /* matched case-sensitively, before lower case */
  EXPECT(t, "[MASK", LBR, UNK);
  bert_tokenizer_free(t);
}

Test(tokenizer, empty_text_and_truncation) {
  bert_tokenizer *t = small();
  int32_t ids[16];
  int n = -1;
  cr_assert_eq(bert_tokenize(t, NULL, 0, 16, ids, &n), 2);
  cr_assert(n == 2 && ids[0] == CLS && ids[1] == SEP);
  cr_assert_eq(bert_tokenize(t, "", 0, 2, ids, NULL), 2);
  /* 7 ids in all: max_len keeps [CLS], the first max_len - 2 pieces, [SEP] */
  const char *s = "x x x x a";
  for (int max_len = 2; max_len <= 9; max_len++) {
    for (int i = 0; i < 16; i++) ids[i] = -5;
    cr_assert_eq(bert_tokenize(t, s, strlen(s), max_len, ids, &n), 7);
    const int want = max_len < 7 ? max_len : 7;
    cr_assert_eq(n, want, "max_len %d: %d ids", max_len, n);
    cr_assert_eq(ids[0], CLS);
    for (int i = 1; i < want - 1; i++) cr_assert_eq(ids[i], i < 5 ? X : A);
    cr_assert_eq(ids[want - 1], SEP);
    cr_assert_eq(ids[want], -5, "max_len %d: wrote past n", max_len);
  }
  bert_tokenizer_free(t);
}

Test(tokenizer, bad_arguments) {
  bert_tokenizer *t = small();
  int32_t ids[4] = {-5, -5, -5, -5};
  int n = -5;
  cr_assert_eq(bert_tokenize(t, "x", 1, 1, ids, &n), -1);
  cr_assert_eq(bert_tokenize(t, "x", 1, 0, ids, &n), -1);
  cr_assert_eq(bert_tokenize(NULL, "x", 1, 4, ids, &n), -1);
  cr_assert_eq(bert_tokenize(t, "x", 1, 4, NULL, &n), -1);
  cr_assert_eq(bert_tokenize(t, NULL, 1, 4, ids, &n), -1);
  cr_assert(n == -5 && ids[0] == -5 && ids[1] == -5, "output written on a refused call");
  cr_assert_eq(bert_vocab_size(NULL), 0);
  cr_assert_eq(bert_token_id(NULL, "x", 1), -1);
  cr_assert_null(bert_token_text(t, -1));
  cr_assert_null(bert_token_text(t, NVOCAB));
  cr_assert_str_eq(bert_token_text(t, ANGSTROM), "angstrom");
  cr_assert_eq(bert_token_id(t, "##able", 6), ABLE2);
  cr_assert_eq(bert_token_id(t, "##abl", 5), -1);
  cr_assert_eq(bert_token_id(t, "##ablex", 6), ABLE2); /* len bytes only */
  bert_tokenizer_free(t);
  bert_tokenizer_free(NULL);
}

/* a word of n characters: an accented first letter (2 bytes, "e" once
 * stripped), then x's; the limit counts characters, after normalization */
static char *long_word(int n) {
  char *s = malloc((size_t)n + 2);
  cr_assert_not_null(s);
  memcpy(s, "\xc3\xa9", 2);
  memset(s + 2, 'x', (size_t)n - 1);
  s[n + 1] = 0;
  return s;
}

Test(tokenizer, word_length_limit) {
  bert_tokenizer *t = small();
  static int32_t ids[256];
  int n;
  for (int len = 99; len <= 102; len++) {
    char *w = long_word(len);
    const int total = bert_tokenize(t, w, strlen(w), 256, ids, &n);
    if (len <= BERT_MAX_WORD_CHARS) {
      cr_assert_eq(total, len + 2, "%d characters: %d ids", len, total);
      cr_assert(ids[1] == E && ids[2] == X2 && ids[len] == X2);
    } else {
      cr_assert_eq(total, 3, "%d characters: %d ids, expected [UNK]", len, total);
      cr_assert_eq(ids[1], UNK);
    }
    free(w);
  }
  /* 101 characters before normalization, 100 after (a + U+0301 + 99 x's): within the limit */
  char w[128] = "a\xcc\x81";
  memset(w + 3, 'x', 99);
  w[102] = 0;
  cr_assert_eq(bert_tokenize(t, w, strlen(w), 256, ids, &n), 102);
  cr_assert(ids[1] == A && ids[2] == X2 && ids[100] == X2);
  w[102] = 'x', w[103] = 0;
  cr_assert_eq(bert_tokenize(t, w, strlen(w), 256, ids, &n), 3);
  cr_assert_eq(ids[1], UNK);
  bert_tokenizer_free(t);
}

Test(tokenizer, invalid_utf8_and_nul_bytes) {
  bert_tokenizer *t = small();
  EXPECT(t, "hel\xfflo", HELLO);            /* U+FFFD, which clean_text removes: one word */
  EXPECT(t, "a\xe4\xb8", A);                /* a sequence cut short at the end */
  EXPECT(t, "a\xe4\xb8 x", A, X);           /* ... and inside */
  EXPECT(t, "\xc0\xafx", X);                /* an overlong '/': not punctuation */
  EXPECT(t, "\xed\xa0\x80x", X);            /* a UTF-16 surrogate */
  EXPECT(t, "\xf4\x90\x80\x80x", X);        /* above U+10FFFF */
  EXPECT(t, "\x80\xbf\xfe\xffx", X);        /* stray continuation bytes, 0xFE, 0xFF */
  EXPECT(t, "\xe4\xb8\xad\xe5\x9b", ZHONG); /* a valid CJK character, then a cut one */
  EXPECT_NONE(t, "\xc3");
  expect_n(t, "hel\0lo", 6, (const int[]){HELLO, -1}); /* NUL: removed, one word */
  expect_n(t, "x\0\0 x", 5, (const int[]){X, X, -1});
  bert_tokenizer_free(t);
}

/* random bytes and random mixes of interesting characters: never a crash,
 * always [CLS] ... [SEP] with ids inside the vocabulary */
Test(tokenizer, random_input_is_safe) {
  bert_tokenizer *t = small();
  /* clang-format off */
  static const char *const pieces[] = {
      "a", "x", " ", "\xcc\x81", "\xcd\x85", "\xe0\xbd\xb1", "\xea\xb0\x80", "\xe4\xb8\xad",
      "[MASK]", "[", "#", "\xff", "\xc3", "\xf0\x9f\x98\x80", "\xc4\xb0", "\0"};
  /* clang-format on */
  const char *env = getenv("GKO_TEST_SEED"); /* a fresh seed per run unless given */
  const unsigned seed =
      env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
  srand(seed);
  static char buf[4096];
  static int32_t ids[8192];
  for (int iter = 0; iter < 2000; iter++) {
    size_t len = 0;
    const size_t want = (size_t)(rand() % 400);
    while (len < want) {
      if (iter % 2) {
        buf[len++] = (char)(rand() & 0xff);
      } else {
        const char *p = pieces[rand() % (int)(sizeof pieces / sizeof pieces[0])];
        const size_t l = p[0] ? strlen(p) : 1;
        memcpy(buf + len, p, l), len += l;
      }
    }
    int n = -1;
    const int total = bert_tokenize(t, buf, len, 8192, ids, &n);
    cr_assert(total >= 2 && n == total, "GKO_TEST_SEED=%u, iteration %d: %d ids", seed, iter,
              total);
    cr_assert(ids[0] == CLS && ids[n - 1] == SEP);
    for (int i = 0; i < n; i++) cr_assert(ids[i] >= 0 && ids[i] < NVOCAB);
  }
  bert_tokenizer_free(t);
}

/* ---- vocab.txt parsing ------------------------------------------------------- */

static char *write_tmp(const char *bytes, size_t n) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/gko_vocab_XXXXXX");
  const int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, bytes, n), (ssize_t)n);
  close(fd);
  return path;
}

Test(tokenizer, vocab_file) {
  /* CRLF, trailing blanks, an empty line, a repeated token (the last id
   * wins), no final newline */
  const char v[] = "[PAD]\r\n[UNK] \n[CLS]\t\n[SEP]\n\nhello\nworld\nhello\n##s";
  char *path = write_tmp(v, sizeof v - 1);
  char err[256] = "";
  bert_tokenizer *t = bert_tokenizer_load(path, err, sizeof err);
  unlink(path);
  cr_assert_not_null(t, "%s", err);
  cr_assert_eq(bert_vocab_size(t), 9);
  cr_assert_eq(bert_token_id(t, "[UNK]", 5), 1);
  cr_assert_eq(bert_token_id(t, "[CLS]", 5), 2);
  cr_assert_eq(bert_token_id(t, "hello", 5), 7);
  cr_assert_eq(bert_token_id(t, "##s", 3), 8);
  cr_assert_str_eq(bert_token_text(t, 4), "");
  cr_assert_str_eq(bert_token_text(t, 5), "hello");
  int32_t ids[8];
  int n;
  cr_assert_eq(bert_tokenize(t, "Hellos world", 12, 8, ids, &n), 5);
  cr_assert(ids[0] == 2 && ids[1] == 7 && ids[2] == 8 && ids[3] == 6 && ids[4] == 3);
  cr_assert_eq(bert_tokenize(t, "[MASK]", 6, 8, ids, &n), 5); /* no [MASK] in this vocabulary */
  bert_tokenizer_free(t);
}

Test(tokenizer, vocab_file_errors) {
  char err[256] = "";
  cr_assert_null(bert_tokenizer_load("/nonexistent/vocab.txt", err, sizeof err));
  cr_assert(strstr(err, "/nonexistent/vocab.txt"), "reason \"%s\" lacks the path", err);
  const char v[] = "[PAD]\n[UNK]\n[CLS]\nhello\n";
  char *path = write_tmp(v, sizeof v - 1);
  cr_assert_null(bert_tokenizer_load(path, err, sizeof err));
  cr_assert(strstr(err, "[SEP]"), "reason \"%s\" lacks [SEP]", err);
  unlink(path);
  path = write_tmp("", 0);
  cr_assert_null(bert_tokenizer_load(path, err, sizeof err));
  cr_assert(strstr(err, "empty"), "reason \"%s\"", err);
  unlink(path);
  const char nul[] = "[UNK]\n[CLS]\n[SEP]\nhel\0lo\n";
  path = write_tmp(nul, sizeof nul - 1);
  cr_assert_null(bert_tokenizer_load(path, err, sizeof err));
  cr_assert(strstr(err, "NUL") && strstr(err, "line 4"), "reason \"%s\"", err);
  unlink(path);
  const char *const toks[] = {"[UNK]", "[CLS]"};
  cr_assert_null(bert_tokenizer_from_tokens(toks, 2, err, sizeof err));
  cr_assert(strstr(err, "[SEP]"), "reason \"%s\"", err);
  cr_assert_null(bert_tokenizer_from_tokens(NULL, 2, err, sizeof err));
  cr_assert_null(bert_tokenizer_load(NULL, err, sizeof err));
}

/* ---- all-MiniLM-L6-v2's vocabulary --------------------------------------------- */

/* the vocab.txt of $GKO_MINILM_DIR, else of build/models/all-MiniLM-L6-v2
 * (from the working directory or the test binary's build/tests/..), or skips */
static bert_tokenizer *minilm(void) {
  static char path[1200];
  const char *env = getenv("GKO_MINILM_DIR");
  int found = 0;
  if (env && *env) {
    snprintf(path, sizeof path, "%s/vocab.txt", env);
    found = access(path, R_OK) == 0;
    if (!found)
      cr_skip_test(
          "no vocab.txt in GKO_MINILM_DIR=%s: run `make model-minilm` (into "
          "build/models/all-MiniLM-L6-v2) or point GKO_MINILM_DIR at the model",
          env);
  } else {
    const char *dirs[] = {"build/models", "../build/models", "../../build/models"};
    for (size_t i = 0; i < 3 && !found; i++) {
      snprintf(path, sizeof path, "%s/all-MiniLM-L6-v2/vocab.txt", dirs[i]);
      found = access(path, R_OK) == 0;
    }
    char exe[1024];
    const ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!found && k > 0) {
      exe[k] = 0;
      char *slash = strrchr(exe, '/');
      if (slash) *slash = 0;
      snprintf(path, sizeof path, "%s/../models/all-MiniLM-L6-v2/vocab.txt", exe);
      found = access(path, R_OK) == 0;
    }
    if (!found)
      cr_skip_test(
          "no build/models/all-MiniLM-L6-v2/vocab.txt: run `make model-minilm` "
          "(or set GKO_MINILM_DIR to the model's directory)");
  }
  char err[1400] = "";
  bert_tokenizer *t = bert_tokenizer_load(path, err, sizeof err);
  cr_assert_not_null(t, "%s", err);
  cr_assert_eq(bert_vocab_size(t), 30522, "%s: %d tokens", path, bert_vocab_size(t));
  return t;
}

/* a file's '\n'-separated lines (the buffer is modified; *n lines) */
static char **read_lines(const char *name, char **buf, int *n) {
  char path[1024];
  cr_assert_eq(mtx_find(name, path, sizeof path), 0, "data/%s not found (set GKO_DATA_DIR)", name);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  *buf = malloc((size_t)size + 1);
  cr_assert_not_null(*buf);
  cr_assert_eq(fread(*buf, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  (*buf)[size] = 0;
  char **lines = malloc(sizeof *lines * ((size_t)size + 1));
  cr_assert_not_null(lines);
  *n = 0;
  for (char *p = *buf; p < *buf + size;) {
    char *e = memchr(p, '\n', (size_t)(*buf + size - p));
    if (!e) e = *buf + size;
    *e = 0;
    lines[(*n)++] = p;
    p = e + 1;
  }
  return lines;
}

Test(minilm_vocab, every_sentence_matches_the_library) {
  bert_tokenizer *t = minilm();
  char *sb, *ib;
  int ns, ni;
  char **s = read_lines("minilm/sentences.txt", &sb, &ns);
  char **want = read_lines("minilm/token_ids.txt", &ib, &ni);
  cr_assert_eq(ns, ni, "%d sentences but %d lines of ids", ns, ni);
  cr_assert_geq(ns, 40);
  static int32_t ids[256];
  int truncated = 0;
  for (int i = 0; i < ns; i++) {
    int n;
    const int total = bert_tokenize(t, s[i], strlen(s[i]), 256, ids, &n);
    cr_assert_geq(total, 2);
    truncated += total > 256;
    char *p = want[i];
    for (int k = 0; k < n; k++) {
      char *end;
      const long id = strtol(p, &end, 10);
      cr_assert(end != p, "line %d: %d ids here, fewer in token_ids.txt", i + 1, n);
      cr_assert_eq(ids[k], id, "line %d (\"%.40s\"), id %d: %d (%s), the library gives %ld (%s)",
                   i + 1, s[i], k, ids[k], bert_token_text(t, ids[k]), id,
                   bert_token_text(t, (int32_t)id));
      p = end;
    }
    while (*p == ' ') p++;
    cr_assert_eq(*p, 0, "line %d: %d ids here, more in token_ids.txt", i + 1, n);
  }
  cr_assert_geq(truncated, 1, "no sentence exceeds 256 tokens: truncation untested");
  free(s), free(sb), free(want), free(ib);
  bert_tokenizer_free(t);
}

/* ids that Hugging Face's tokenizers (0.23) gives for these texts */
Test(minilm_vocab, edge_cases) {
  bert_tokenizer *t = minilm();
  static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    int ids[8];
  } cases[] = {
      {"", 0, {101, 102}},
      {" \t\n\r\xc2\xa0\xe3\x80\x80 ", 0, {101, 102}},
      {"caf\xc3\xa9 na\xc3\xafve", 0, {101, 7668, 15743, 102}},
      {"hel\xfflo w\xe4\xb8rld", 0, {101, 7592, 23277, 6392, 102}},
      {"a\xc3", 0, {101, 1037, 102}},
      {"\xed\xa0\x80x", 0, {101, 1060, 102}},
      {"hel\0lo", 6, {101, 7592, 102}},
      {"I\xcc\x87stanbul \xc4\xb0STANBUL", 0, {101, 9960, 9960, 102}},
      {"a[MASK]b [mask]", 0, {101, 1037, 103, 1038, 1031, 7308, 1033, 102}},
      {"\xe2\x80\x8bzero\xe2\x80\x8bwidth", 0, {101, 5717, 9148, 11927, 2232, 102}},
      {"unaffable", 0, {101, 14477, 20961, 3468, 102}},
      {"\xef\xbf\xbd", 0, {101, 102}},
      {"\xf0\x9f\x98\x80", 0, {101, 100, 102}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int32_t ids[64];
    int n, w = 1;
    while (cases[c].ids[w - 1] != 102) w++;
    const size_t len = cases[c].len ? cases[c].len : strlen(cases[c].text);
    cr_assert_eq(bert_tokenize(t, cases[c].text, len, 64, ids, &n), w, "case %zu", c);
    for (int i = 0; i < w; i++)
      cr_assert_eq(ids[i], cases[c].ids[i], "case %zu, id %d: %d, expected %d", c, i, ids[i],
                   cases[c].ids[i]);
  }
  bert_tokenizer_free(t);
}

Test(minilm_vocab, word_limit_and_truncation) {
  bert_tokenizer *t = minilm();
  static int32_t ids[600];
  static char text[2048];
  int n;
  /* 100 x's: xx ##xx ... (50 pieces); 101: [UNK]; the same counted in characters */
  memset(text, 'x', 101);
  cr_assert_eq(bert_tokenize(t, text, 100, 600, ids, &n), 52);
  cr_assert(ids[1] == 22038 && ids[2] == 20348 && ids[50] == 20348);
  cr_assert_eq(bert_tokenize(t, text, 101, 600, ids, &n), 3);
  cr_assert_eq(ids[1], 100);
  for (int i = 0; i < 101; i++) memcpy(text + 2 * i, "\xc3\xa9", 2);
  cr_assert_eq(bert_tokenize(t, text, 200, 600, ids, &n), 52);
  cr_assert(ids[1] == 25212 && ids[2] == 4402);
  cr_assert_eq(bert_tokenize(t, text, 202, 600, ids, &n), 3);
  /* 400 words: 402 ids; 256 keeps [CLS], 254 words, [SEP] */
  for (int i = 0; i < 400; i++) memcpy(text + 5 * i, "word ", 5);
  cr_assert_eq(bert_tokenize(t, text, 2000, 600, ids, &n), 402);
  cr_assert_eq(n, 402);
  cr_assert_eq(bert_tokenize(t, text, 2000, 256, ids, &n), 402);
  cr_assert_eq(n, 256);
  cr_assert(ids[0] == 101 && ids[1] == 2773 && ids[254] == 2773 && ids[255] == 102);
  bert_tokenizer_free(t);
}
