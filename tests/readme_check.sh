#!/bin/sh
# The README as a new user follows it: every shell block it marks with
# "<!-- readme-check: NAME -->" (on the line just before the block) runs
# verbatim, in the README's order, as one session of a fresh shell in the
# repository root, after its C program is saved as ex.c.  Fresh: env -i,
# with PATH, HOME set to an empty temporary home, and only the variables a
# machine's setup may need to reach the network or its GPU (proxies, pip's
# index settings, CUDA_VISIBLE_DEVICES).  Then the programs the blocks
# built must run: print the four GELU values with a GPU, or the library's
# reason and exit status 2 without one.
#
#   sh tests/readme_check.sh
#
# Prints each block before running it and ends with "readme_check: PASS" or
# "readme_check: FAIL: <why>" (exit 0 / 1).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
README=$ROOT/README.md

fail() { echo "readme_check: FAIL: $1"; exit 1; }
# the README's file names, made in the repository root and removed after
for f in ex.c ex ex-static; do
    [ ! -e "$ROOT/$f" ] || fail "$ROOT/$f exists: move it away first"
done
# what pip install ./python leaves in python/ (removed after, if new)
made=
for d in python/build python/gko.egg-info; do [ -e "$ROOT/$d" ] || made="$made $ROOT/$d"; done
HOME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gko-readme-home.XXXXXX")
cleanup() { rm -rf "$HOME_DIR" "$ROOT/ex.c" "$ROOT/ex" "$ROOT/ex-static" $made; }
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

# the fenced block right after the marker line of NAME (or, with NAME "c",
# the first fenced C block)
block() {
    awk -v name="$1" '
        name == "c" && !on && /^```c$/ { on = 1; next }
        armed && /^```/ { on = 1; armed = 0; next }
        { armed = 0 }
        $0 == "<!-- readme-check: " name " -->" { armed = 1; next }
        on && /^```$/ { exit }
        on { print }' "$README"
}

NAMES=$(sed -n 's/^<!-- readme-check: \(.*\) -->$/\1/p' "$README" | tr '\n' ' ')
[ -n "$NAMES" ] || fail "README.md marks no block"
block c > "$ROOT/ex.c"
[ -s "$ROOT/ex.c" ] || fail "README.md has no C program"

SCRIPT=$HOME_DIR/readme.sh
: > "$SCRIPT"
for n in $NAMES; do
    body=$(block "$n")
    [ -n "$body" ] || fail "README.md has no block right after its marker 'readme-check: $n'"
    printf 'echo "== README block %s"\n%s\n' "$n" "$body" >> "$SCRIPT"
done
echo "== the README's blocks (${NAMES% }), verbatim, in a fresh shell with HOME=$HOME_DIR:"
sed 's/^/  | /' "$SCRIPT"
keep=
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL \
         PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_CERT CUDA_VISIBLE_DEVICES; do
    eval "[ -n \"\${$v+set}\" ]" && keep="$keep $v=$(eval "printf %s \"\$$v\"")"
done
# shellcheck disable=SC2086 # keep: NAME=value words (values without spaces)
(cd "$ROOT" && env -i PATH="$PATH" HOME="$HOME_DIR" $keep sh -eu "$SCRIPT") ||
    fail "a README block failed (its output is above)"

# the programs the blocks built
if nvidia-smi >/dev/null 2>&1; then want=0; else want=2; fi
for prog in ex ex-static; do
    [ -x "$ROOT/$prog" ] || fail "the README's blocks built no ./$prog"
    out=$(env -i PATH="$PATH" $keep "$ROOT/$prog" 2>&1); rc=$?
    echo "./$prog: $out (exit $rc)"
    [ "$rc" -eq "$want" ] || fail "./$prog exited $rc, want $want"
    if [ "$want" -eq 0 ]; then
        # GELU-erf of -2, -0.5, 0.5, 2 (float64), to 1e-5 relative
        echo "$out" | awk 'BEGIN { split("-0.04550026389635842 -0.15426876936299347 0.3457312306370065 1.9544997361036416", w) }
            NF == 4 { for (i = 1; i <= 4; i++) { d = $i - w[i]; if (d < 0) d = -d;
                      if (d > 1e-5 * (w[i] < 0 ? -w[i] : w[i])) exit 1 }; ok = 1 }
            END { exit !ok }' ||
            fail "./$prog printed '$out', want about -0.0455003 -0.154269 0.345731 1.9545"
    else
        [ -n "$out" ] || fail "./$prog said nothing without a GPU"
    fi
done
echo "readme_check: PASS (${NAMES% })"
