#!/bin/sh
# The Python binding as users get it: a fresh virtual environment in a
# temporary directory, gko installed into it -- the wheel `make wheel` built
# (build/wheel/gko-*.whl, libgko bundled) or, without one (or with "source"
# as the argument), `pip install ./python` with GKO_LIBRARY pointing at
# lib/ -- then `python -m gko` and the host-only tests (python/tests,
# GKO_TEST_INSTALLED=1: they import the installed gko, not python/gko), all
# with the working directory outside the repository.  Prints one line,
# "python_installed: PASS (...)" or "python_installed: FAIL: <why>"; exit 0 / 1.
#
#   sh tests/python_installed.sh [wheel|source]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
MODE=${1:-}
WHEEL=$(ls "$ROOT"/build/wheel/gko-*.whl 2>/dev/null | head -n 1)
if [ -z "$MODE" ]; then
    if [ -n "$WHEEL" ]; then MODE=wheel; else MODE=source; fi
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gko-pyinst.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
LOG=$TMP/log

fail() {
    echo "python_installed: FAIL: $1 ($MODE)"
    if [ -s "$LOG" ]; then tail -n 30 "$LOG" | sed 's/^/  | /' >&2; fi
    exit 1
}

if ! "$PYTHON" -m venv "$TMP/venv" >"$LOG" 2>&1; then
    # Debian/Ubuntu ship venv's ensurepip separately (python3-venv)
    rm -rf "$TMP/venv"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing python3-venv with apt-get" >&2
        { apt-get install -y -q python3-venv || { apt-get update -q && apt-get install -y -q python3-venv; }; } >>"$LOG" 2>&1
    fi
    "$PYTHON" -m venv "$TMP/venv" >>"$LOG" 2>&1 || fail "cannot create a venv with $PYTHON (sudo apt-get install python3-venv)"
fi
PY=$TMP/venv/bin/python
case $MODE in
wheel)
    [ -n "$WHEEL" ] || fail "no build/wheel/gko-*.whl (make wheel)"
    unset GKO_LIBRARY
    "$PY" -m pip install -q "$WHEEL" >"$LOG" 2>&1 || fail "pip install $(basename "$WHEEL")"
    WHAT=$(basename "$WHEEL")
    ;;
source)
    LIB=$ROOT/lib/libgko.so.0
    [ -e "$LIB" ] || fail "no $LIB (make library)"
    # a copy: pip builds in place and must not leave files in python/
    cp -R "$ROOT/python" "$TMP/src"
    rm -rf "$TMP/src/build" "$TMP/src"/*.egg-info
    "$PY" -m pip install -q "$TMP/src" >"$LOG" 2>&1 || fail "pip install ./python"
    export GKO_LIBRARY=$LIB
    WHAT="pip install ./python, GKO_LIBRARY=$LIB"
    ;;
*)
    fail "unknown mode (wheel or source)"
    ;;
esac

cd "$TMP" || fail "cd $TMP"
# the installed package, and (from the wheel) its bundled library
"$PY" - "$MODE" >"$LOG" 2>&1 <<'EOF' || fail "gko is not the installed package"
import os, sys, sysconfig
import gko
site = os.path.realpath(sysconfig.get_paths()["purelib"])
pkg = os.path.realpath(os.path.dirname(gko.__file__))
assert pkg == os.path.join(site, "gko"), (pkg, site)
assert os.path.exists(os.path.join(pkg, "py.typed")), "no py.typed"
lib = os.path.realpath(gko._find_library())
if sys.argv[1] == "wheel":
    assert lib == os.path.join(pkg, "libgko.so.%d" % gko.MAJOR), lib
print(pkg, lib)
EOF
"$PY" -m gko >"$LOG" 2>&1
RC=$?
[ "$RC" -eq 0 ] || fail "python -m gko exited $RC"
STATUS=$(sed -n 's/^ *status: *//p' "$LOG" | head -n 1)
GKO_TEST_INSTALLED=1 "$PY" -m unittest discover -s "$ROOT/python/tests" -t "$ROOT/python/tests" \
    >"$LOG" 2>&1 || fail "python/tests against the installed package"
RAN=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$LOG")
RESULT=$(tail -n 1 "$LOG")
echo "python_installed: PASS ($WHAT; python -m gko: ${STATUS:-ok}; $RAN tests: $RESULT)"
