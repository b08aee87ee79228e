#!/bin/sh
# make wheel: build/wheel/gko-<version>-py3-none-<platform>.whl, the Python
# binding with libgko bundled (gko/libgko.so.<MAJOR>, where gko/__init__.py's
# loader looks next to the package).  Stages python/ into build/wheel-src,
# adds the library as package data, tags the wheel for this platform (it
# holds a native library; the binding itself stays py3, no ABI of CPython's)
# and runs pip wheel without build isolation.  Uses $PYTHON's setuptools
# where it can build wheels, else a venv under build/ with setuptools pinned
# (from PyPI, once).
#
#   sh util/make_wheel.sh SHLIB MAJOR     (SHLIB: lib/libgko.so.X.Y.Z)
set -eu
SHLIB=$1
MAJOR=$2
PYTHON=${PYTHON:-python3}
BUILD=${BUILD:-build}
STAGE=$BUILD/wheel-src
OUTDIR=$BUILD/wheel
SETUPTOOLS_PIN=setuptools==75.8.0

[ -f "$SHLIB" ] || { echo "make_wheel: $SHLIB not found (make library)" >&2; exit 1; }

# a Python whose setuptools builds wheels (bdist_wheel: setuptools >= 70.1,
# or the wheel package)
PY=$PYTHON
if ! "$PY" -c 'import setuptools.command.bdist_wheel' 2>/dev/null &&
   ! "$PY" -c 'import setuptools, wheel.bdist_wheel' 2>/dev/null; then
    VENV=$BUILD/wheel-venv
    if ! "$VENV/bin/python" -c 'import setuptools.command.bdist_wheel' 2>/dev/null; then
        echo "make_wheel: $PYTHON cannot build wheels; installing $SETUPTOOLS_PIN into $VENV"
        rm -rf "$VENV"
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q "$SETUPTOOLS_PIN"
    fi
    PY=$VENV/bin/python
fi

rm -rf "$STAGE"
mkdir -p "$STAGE" "$OUTDIR"
cp python/pyproject.toml python/README.md "$STAGE/"
cp -R python/gko "$STAGE/gko"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$STAGE"/gko/libgko.so* "$STAGE"/gko/*.so
[ -f python/gko/_fastcall.abi3.so ] && cp python/gko/_fastcall.abi3.so "$STAGE/gko/"
LIBNAME=libgko.so.$MAJOR
cp -L "$SHLIB" "$STAGE/gko/$LIBNAME"

# the library, and the C helper where make built it (python/gko/_fastcall.c,
# CPython's stable ABI from 3.10; the binding uses it only on 3.10 and
# newer, ctypes elsewhere -- so the wheel stays py3-none), as
# package data (the staged copy only: pip install ./python stays pure Python)
FAST=
[ -f "$STAGE/gko/_fastcall.abi3.so" ] && FAST=_fastcall.abi3.so
"$PY" - "$STAGE/pyproject.toml" "$LIBNAME" $FAST <<'EOF'
import sys
path, files = sys.argv[1], sys.argv[2:]
s = open(path).read()
old = 'gko = ["py.typed"]'
if old not in s:
    sys.exit("make_wheel: %s has no %s line to extend" % (path, old))
open(path, "w").write(s.replace(old, "gko = [%s]" % ", ".join(
    '"%s"' % f for f in ["py.typed"] + files)))
EOF

PLAT=$("$PY" -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))')
cat > "$STAGE/setup.cfg" <<EOF
[bdist_wheel]
python_tag = py3
plat_name = $PLAT
EOF

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$STAGE/pyproject.toml")
WHEEL=$OUTDIR/gko-$VERSION-py3-none-$PLAT.whl
rm -f "$OUTDIR"/gko-*.whl
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUTDIR" "$STAGE"
"$PY" - "$WHEEL" "gko/$LIBNAME" $FAST <<'EOF'
import sys, zipfile
whl, lib = sys.argv[1], sys.argv[2]
names = zipfile.ZipFile(whl).namelist()
for want in [lib, "gko/py.typed", "gko/__init__.py"] + ["gko/" + f for f in sys.argv[3:]]:
    if want not in names:
        sys.exit("make_wheel: %s lacks %s" % (whl, want))
EOF
echo "make wheel: $WHEEL (bundles gko/$LIBNAME from $SHLIB${FAST:+ and gko/$FAST})"
