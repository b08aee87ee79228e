#!/bin/sh
# ABI gate: compares the built library with the baseline in abi/ (made with
# libabigail's abidw from a release build with debug info).
#   - a removed or changed function or variable fails (abidiff, filtered
#     to the types gko.h declares);
#   - an enumerator that changed value or disappeared fails (abi/enums.txt);
#   - added functions and enumerators pass, but each must be named in
#     CHANGELOG.md.
# Refresh the baseline only when the ABI deliberately moves (a new SONAME):
#   sh tests/abi_gate.sh --update
set -u
cd "$(dirname "$0")/.." || exit 1
major=$(sed -n 's/^#define GKO_VERSION_MAJOR \([0-9]*\).*/\1/p' include/gko.h)
so=$(ls lib/libgko.so.$major.*.* 2>/dev/null | head -1)
base=abi/libgko.so.$major.abi
enums_now() { # NAME=VALUE for every enumerator of gko.h
  sed -n 's/^[[:space:]]*\(GKO_[A-Z0-9_]*\)[[:space:]]*=[[:space:]]*\(-\{0,1\}[0-9][0-9]*\).*/\1=\2/p' include/gko.h | sort
}
if ! command -v abidiff >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing abigail-tools (libabigail) with apt-get"
    apt-get install -y -q abigail-tools >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q abigail-tools >/dev/null; } ||
      { echo "error: could not install abigail-tools" >&2; exit 1; }
  else
    echo "error: the ABI gate needs libabigail: install the Debian/Ubuntu package abigail-tools" >&2
    exit 1
  fi
fi
[ -n "$so" ] || { echo "error: build the library first (make)" >&2; exit 1; }
if [ "${1:-}" = --update ]; then
  mkdir -p abi
  abidw --headers-dir include --drop-private-types --out-file "$base" "$so"
  enums_now > abi/enums.txt
  echo "baseline written: $base, abi/enums.txt"
  exit 0
fi
echo "== ABI gate: $so against $base"
fail=0
out=$(abidiff --headers-dir2 include "$base" "$so" 2>&1); rc=$?
echo "$out" | sed -n '1,2p'
if [ $((rc & 3)) -ne 0 ]; then echo "  FAIL abidiff could not compare (exit $rc)"; echo "$out"; exit 1; fi
removed=$(echo "$out" | sed -n 's/^Functions changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p')
vremoved=$(echo "$out" | sed -n 's/^Variables changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p')
set -- $removed $vremoved
if [ "${1:-0}" -ne 0 ] || [ "${2:-0}" -ne 0 ] || [ "${3:-0}" -ne 0 ] || [ "${4:-0}" -ne 0 ] || [ $((rc & 8)) -ne 0 ]; then
  echo "  FAIL incompatible change (removed or changed functions/variables):"
  echo "$out" | sed -n '3,80p'
  fail=1
else
  echo "  ok   no removed or changed functions or variables"
fi
enums_now > /tmp/gko-enums.$$
changed=$(join -t= -j1 abi/enums.txt /tmp/gko-enums.$$ | awk -F= '$2 != $3 {print $1 ": " $2 " -> " $3}')
gone=$(cut -d= -f1 abi/enums.txt | sort | comm -23 - "$(cut -d= -f1 /tmp/gko-enums.$$ | sort > /tmp/gko-enames.$$; echo /tmp/gko-enames.$$)")
added_e=$(cut -d= -f1 /tmp/gko-enums.$$ | sort | comm -13 "$(cut -d= -f1 abi/enums.txt | sort > /tmp/gko-bnames.$$; echo /tmp/gko-bnames.$$)" -)
rm -f /tmp/gko-enums.$$ /tmp/gko-enames.$$ /tmp/gko-bnames.$$
if [ -n "$changed$gone" ]; then
  echo "  FAIL enumerators changed or removed: $changed $gone"; fail=1
else
  echo "  ok   every baseline enumerator keeps its value"
fi
added_f=$(echo "$out" | sed -n "s/.*\[A\] 'function [^']* \(gko_[a-z0-9_]*\)(.*/\1/p")
missing=""
for name in $added_f $added_e; do
  grep -q "$name" CHANGELOG.md || missing="$missing $name"
done
if [ -n "$missing" ]; then
  echo "  FAIL additions not listed in CHANGELOG.md:$missing"; fail=1
else
  echo "  ok   additions since the baseline ($(echo $added_f $added_e | wc -w)) are in CHANGELOG.md"
fi
exit $fail
