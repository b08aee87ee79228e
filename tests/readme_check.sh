#!/bin/sh
# The README as a new user follows it: the shell blocks it marks with
# "<!-- readme-check: NAME -->" run verbatim, in order, as one session of a
# fresh shell (env -i: only PATH, and HOME set to an empty temporary home)
# in the repository root, after its C program is saved as ex.c.  Then the
# programs they built must run: print the four GELU values with a GPU, or
# the library's reason and exit status 2 without one.
#
#   sh tests/readme_check.sh [NAME...]     (default: every marked block)
#
# Prints each block before running it and ends with "readme_check: PASS" or
# "readme_check: FAIL: <why>" (exit 0 / 1).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
README=$ROOT/README.md
HOME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gko-readme-home.XXXXXX")
trap 'rm -rf "$HOME_DIR" "$ROOT/ex.c" "$ROOT/ex" "$ROOT/ex-static"' EXIT INT TERM

fail() { echo "readme_check: FAIL: $1"; exit 1; }
for f in ex.c ex ex-static; do
    # the README's file names, made in the repository root and removed after
    [ ! -e "$ROOT/$f" ] || { trap - EXIT; fail "$ROOT/$f exists: move it away first"; }
done

# the fenced block after the marker line of NAME (or, with NAME "c", the
# first fenced C block)
block() {
    awk -v name="$1" '
        name == "c" && !on && /^```c$/ { on = 1; next }
        $0 == "<!-- readme-check: " name " -->" { armed = 1; next }
        armed && /^```/ { on = 1; armed = 0; next }
        on && /^```$/ { exit }
        on { print }' "$README"
}

NAMES=${*:-$(sed -n 's/^<!-- readme-check: \([a-z0-9-]*\) -->$/\1/p' "$README")}
[ -n "$NAMES" ] || fail "README.md marks no block"
block c > "$ROOT/ex.c"
[ -s "$ROOT/ex.c" ] || fail "README.md has no C program"

SCRIPT=$HOME_DIR/readme.sh
: > "$SCRIPT"
for n in $NAMES; do
    body=$(block "$n")
    [ -n "$body" ] || fail "README.md has no block marked readme-check: $n"
    printf 'echo "== README block %s"\n%s\n' "$n" "$body" >> "$SCRIPT"
done
echo "== the README's blocks ($NAMES), verbatim, in a fresh shell with HOME=$HOME_DIR:"
sed 's/^/  | /' "$SCRIPT"
(cd "$ROOT" && env -i PATH="$PATH" HOME="$HOME_DIR" sh -eu "$SCRIPT") ||
    fail "a README block failed (its output is above)"

# the programs the blocks built
if nvidia-smi >/dev/null 2>&1; then want=0; else want=2; fi
for prog in ex ex-static; do
    [ -x "$ROOT/$prog" ] || continue
    out=$(env -i PATH="$PATH" "$ROOT/$prog" 2>&1); rc=$?
    echo "./$prog: $out (exit $rc)"
    [ "$rc" -eq "$want" ] || fail "./$prog exited $rc, want $want"
    if [ "$want" -eq 0 ]; then
        # GELU-erf of -2, -0.5, 0.5, 2
        echo "$out" | grep -q '^-0.0455003 -0.154269 0.345731 1.9545$' ||
            fail "./$prog printed '$out', want '-0.0455003 -0.154269 0.345731 1.9545'"
    else
        [ -n "$out" ] || fail "./$prog said nothing without a GPU"
    fi
done
echo "readme_check: PASS ($NAMES)"
