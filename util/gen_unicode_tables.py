#!/usr/bin/env python3
"""Writes util/unicode_tables.h, the character data of util/bert_tokenizer.c.

The tokenizer must give the ids Hugging Face's `tokenizers` library gives
(BertNormalizer with clean_text, handle_chinese_chars, strip_accents and
lowercase; BertPreTokenizer).  That library mixes Unicode versions: its
control, nonspacing-mark and punctuation classes come from an old copy of
the character database (the unicode_categories crate), its lower-case
mapping from Rust's standard library, its NFD from unicode-normalization.
No single unicodedata version reproduces that, so every class and mapping
below is read from the library itself, one code point at a time:

  control     removed by clean_text (Rust's is_control: Cc Cf Co Cs of the
              crate's data, but not \\t \\n \\r), plus NUL and U+FFFD
  whitespace  Rust's char::is_whitespace (BertPreTokenizer's split, and what
              clean_text maps to ' ' unless it is a control)
  punct       split off as a token of its own by BertPreTokenizer
  cjk         padded with spaces by handle_chinese_chars (checked against
              the fixed ranges of BERT's _is_chinese_char)
  strip       removed by strip_accents after NFD (the crate's Mn)
  ccc         canonical combining class, for NFD's canonical reordering
              (read from NFD's reordering of probe pairs)
  decomp      NFD of a code point (Hangul syllables are left to the
              algorithm); marks that strip_accents removes and that have a
              non-zero combining class are left out (their removal cannot
              change the order of what is kept)
  lower       NormalizedString::lowercase (Rust's char::to_lowercase)

Python's unicodedata is used for a cross-check only: the header says how
many code points the library's classes differ from unicodedata's.

Usage: python3 util/gen_unicode_tables.py [-o util/unicode_tables.h]
Needs the `tokenizers` package (pip install tokenizers).
"""
import argparse
import sys
import unicodedata as ud

try:
    import tokenizers
    from tokenizers import normalizers as N
    from tokenizers import pre_tokenizers as P
except ImportError:
    sys.exit("gen_unicode_tables.py needs the tokenizers package: python3 -m pip install tokenizers")

CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def hangul_nfd(c):
    s = c - HANGUL_FIRST
    lv = [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
    return lv + ([0x11A7 + s % 28] if s % 28 else [])


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def probe():
    nfd = N.NFD()
    low = N.Lowercase()
    clean = N.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                             lowercase=False)
    chin = N.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False,
                            lowercase=False)
    strip = N.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                             lowercase=False)
    pre = P.BertPreTokenizer()
    t = dict(control=[], whitespace=[], punct=[], cjk=[], strip=[], decomp={}, lower={}, ccc={})
    ws_mapped = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue  # not in any UTF-8 text
        ch = chr(c)
        d = nfd.normalize_str(ch)
        if d != ch:
            t["decomp"][c] = [ord(x) for x in d]
        lo = low.normalize_str(ch)
        if lo != ch:
            t["lower"][c] = [ord(x) for x in lo]
        k = clean.normalize_str(ch)
        if k == "":
            t["control"].append(c)
        elif k == " " and ch != " ":
            ws_mapped.append(c)
        elif k != ch:
            sys.exit("clean_text maps U+%04X to %r: not modelled" % (c, k))
        h = chin.normalize_str(ch)
        if h == " " + ch + " ":
            t["cjk"].append(c)
        elif h != ch:
            sys.exit("handle_chinese_chars maps U+%04X to %r: not modelled" % (c, h))
        if d == ch:
            s = strip.normalize_str(ch)
            if s == "":
                t["strip"].append(c)
            elif s != ch:
                sys.exit("strip_accents maps U+%04X to %r: not modelled" % (c, s))
        p = pre.pre_tokenize_str("a" + ch + "a")
        if len(p) == 3:
            t["punct"].append(c)
        elif len(p) == 2:
            t["whitespace"].append(c)
        # combining class != 0 <=> NFD reorders it against U+0334 (ccc 1) or U+0345 (ccc 240)
        if d == ch and (nfd.normalize_str(ch + "\u0334") == "\u0334" + ch or
                        nfd.normalize_str("\u0345" + ch) == ch + "\u0345"):
            t["ccc"][c] = None
    # the exact class: equal to ref's iff NFD reorders neither ref+x nor x+ref
    refs = {}
    for c in range(0x110000):
        v = ud.combining(chr(c)) if not 0xD800 <= c <= 0xDFFF else 0
        if v and v not in refs and ud.decomposition(chr(c)) == "":
            refs[v] = chr(c)

    def same(ch, v):
        r = refs[v]
        return nfd.normalize_str(r + ch) == r + ch and nfd.normalize_str(ch + r) == ch + r

    for c in t["ccc"]:
        ch = chr(c)
        guess = ud.combining(ch)
        if guess and same(ch, guess):
            t["ccc"][c] = guess
            continue
        found = [v for v in sorted(refs) if same(ch, v)]
        if len(found) != 1:
            sys.exit("cannot read the combining class of U+%04X" % c)
        t["ccc"][c] = found[0]
    # the pieces the C code assumes
    ws_expect = sorted(set(t["whitespace"]) - set(t["control"]) - {0x20})
    if ws_mapped != ws_expect:
        sys.exit("clean_text's whitespace mapping is not whitespace minus controls")
    if ranges(t["cjk"]) != ranges(c for a, b in CJK for c in range(a, b + 1)):
        sys.exit("handle_chinese_chars's ranges changed: %s" % ranges(t["cjk"]))
    for c in range(HANGUL_FIRST, HANGUL_LAST + 1):
        if t["decomp"].pop(c) != hangul_nfd(c):
            sys.exit("Hangul U+%04X: NFD is not the algorithm" % c)
    if not {0, 0xFFFD} <= set(t["control"]):
        sys.exit("NUL / U+FFFD not removed by clean_text")
    return t


def cross_check(t):
    """Counts where the library's classes differ from unicodedata's."""
    n = {}
    ctrl = set(t["control"])
    strip = set(t["strip"])
    punct = set(t["punct"])
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        cat = ud.category(ch)
        is_ctrl = c in (0, 0xFFFD) or (cat in ("Cc", "Cf", "Co", "Cs") and c not in (9, 10, 13))
        n["control"] = n.get("control", 0) + (is_ctrl != (c in ctrl))
        if ud.normalize("NFD", ch) == ch:
            n["strip"] = n.get("strip", 0) + ((cat == "Mn") != (c in strip))
        is_p = (33 <= c <= 47 or 58 <= c <= 64 or 91 <= c <= 96 or 123 <= c <= 126 or
                cat.startswith("P"))
        n["punct"] = n.get("punct", 0) + (is_p != (c in punct))
        n["lower"] = n.get("lower", 0) + (ch.lower() != "".join(map(chr, t["lower"].get(c, [c]))))
    return n


def lower_runs(lower):
    """Single-char mappings as runs {lo, hi, step, delta}; the rest apart."""
    runs, multi = [], {}
    for c in sorted(lower):
        v = lower[c]
        if len(v) != 1:
            multi[c] = v
            continue
        delta = v[0] - c
        r = runs[-1] if runs else None
        if r and r[3] == delta and (r[0] == r[1] and c - r[1] in (1, 2) or c - r[1] == r[2]):
            if r[0] == r[1]:
                r[2] = c - r[1]
            r[1] = c
        else:
            runs.append([c, c, 1, delta])
    return runs, multi


def emit_ranges(out, name, cps, what):
    r = ranges(cps)
    out.append("/* %s: %d code points */" % (what, len(cps)))
    out.append("static const ut_range %s[%d] = {" % (name, len(r)))
    body = ["{0x%X, 0x%X}" % (a, b) for a, b in r]
    out.extend(wrap(body))
    out.append("};")


def wrap(items, indent="    ", width=100):
    lines, cur = [], indent
    for it in items:
        s = it + ","
        if len(cur) + len(s) + 1 > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += s + " "
    if cur.strip():
        lines.append(cur.rstrip())
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default="util/unicode_tables.h")
    a = ap.parse_args()
    t = probe()
    diff = cross_check(t)
    strip = set(t["strip"])
    out = [
        "/* unicode_tables.h -- generated by util/gen_unicode_tables.py from tokenizers %s"
        % tokenizers.__version__,
        " * (probed per code point); cross-checked against Python %s's unicodedata %s:"
        % (sys.version.split()[0], ud.unidata_version),
        " * the library differs in %d control, %d nonspacing-mark, %d punctuation and"
        % (diff["control"], diff["strip"], diff["punct"]),
        " * %d lower-case code points (older or newer Unicode data).  Do not edit."
        % diff["lower"],
        " * Included by util/bert_tokenizer.c only. */",
        "#ifndef GKO_UTIL_UNICODE_TABLES_H",
        "#define GKO_UTIL_UNICODE_TABLES_H",
        "",
        "#include <stdint.h>",
        "",
        "typedef struct {",
        "  uint32_t lo, hi;",
        "} ut_range;",
        "",
    ]
    emit_ranges(out, "ut_control", t["control"], "removed by clean_text (with NUL and U+FFFD)")
    emit_ranges(out, "ut_whitespace", t["whitespace"], "Rust's char::is_whitespace")
    emit_ranges(out, "ut_punct", t["punct"], "split off by BertPreTokenizer")
    emit_ranges(out, "ut_cjk", t["cjk"], "padded with spaces by handle_chinese_chars")
    emit_ranges(out, "ut_strip", t["strip"], "removed by strip_accents after NFD")
    # combining classes as runs of equal class
    cr = []
    for c in sorted(t["ccc"]):
        v = t["ccc"][c]
        if cr and cr[-1][1] == c - 1 and cr[-1][2] == v:
            cr[-1][1] = c
        else:
            cr.append([c, c, v])
    out += ["", "/* canonical combining class != 0: %d code points */" % len(t["ccc"]),
            "typedef struct {", "  uint32_t lo, hi, ccc;", "} ut_ccc_range;",
            "static const ut_ccc_range ut_ccc[%d] = {" % len(cr)]
    out += wrap(["{0x%X, 0x%X, %d}" % tuple(r) for r in cr])
    out.append("};")
    # decompositions, marks that strip_accents removes with ccc != 0 left out
    keys, offs, pool = [], [], []
    for c in sorted(t["decomp"]):
        v = [x for x in t["decomp"][c] if not (x in strip and t["ccc"].get(x))]
        keys.append(c)
        offs.append((len(pool), len(v)))
        pool += v
    assert len(pool) < 1 << 16 and max(n for _, n in offs) < 8
    out += ["", "/* NFD of %d code points (not Hangul syllables): ut_decomp_key[i] = code point |"
            % len(keys), " * length << 24, its pieces at ut_decomp_pool[ut_decomp_off[i]] */",
            "static const uint32_t ut_decomp_key[%d] = {" % len(keys)]
    out += wrap(["0x%X" % (c | n << 24) for c, (_, n) in zip(keys, offs)])
    out += ["};", "static const uint16_t ut_decomp_off[%d] = {" % len(keys)]
    out += wrap(["%d" % o for o, _ in offs])
    out += ["};", "static const uint32_t ut_decomp_pool[%d] = {" % max(len(pool), 1)]
    out += wrap(["0x%X" % x for x in pool] or ["0"])
    out.append("};")
    runs, multi = lower_runs(t["lower"])
    out += ["", "/* lower case of %d code points: c in [lo, hi] with (c - lo) %% step == 0 maps"
            % len(t["lower"]), " * to c + delta */", "typedef struct {",
            "  uint32_t lo, hi, step;", "  int32_t delta;", "} ut_lower_run;",
            "static const ut_lower_run ut_lower[%d] = {" % len(runs)]
    out += wrap(["{0x%X, 0x%X, %d, %d}" % tuple(r) for r in runs])
    out += ["};", "/* the code points whose lower case is more than one character */",
            "typedef struct {", "  uint32_t cp, out[3];", "} ut_lower_multi;",
            "static const ut_lower_multi ut_lower_long[%d] = {" % max(len(multi), 1)]
    assert all(len(v) <= 3 for v in multi.values())
    out += wrap(["{0x%X, {%s}}" % (c, ", ".join("0x%X" % x for x in v + [0] * (3 - len(v))))
                 for c, v in sorted(multi.items())] or ["{0, {0, 0, 0}}"])
    out += ["};", "", "#endif", ""]
    with open(a.out, "w", encoding="ascii") as f:
        f.write("\n".join(out))
    print("%s: %d control, %d whitespace, %d punct, %d strip ranges; %d ccc runs; %d decompositions "
          "(%d pieces); %d lower runs + %d long" %
          (a.out, len(ranges(t["control"])), len(ranges(t["whitespace"])), len(ranges(t["punct"])),
           len(ranges(t["strip"])), len(cr), len(keys), len(pool), len(runs), len(multi)))


if __name__ == "__main__":
    main()
