#!/bin/sh
# ABI checks that need no GPU: the public header stands alone (C99 pedantic,
# C++), includes no CUDA header, the shared library exports gko_* only, and
# its SONAME and file name carry the version in gko.h.
set -u
cd "$(dirname "$0")/.." || exit 1
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== ABI checks"
printf '#include "gko.h"\nint main(void){ return gko_version_number() == GKO_VERSION_NUMBER ? 0 : 1; }\n' > "$tmp/h.c"
if ${CC:-gcc} -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -Iinclude "$tmp/h.c" 2>"$tmp/e"; then
  ok "gko.h compiles alone as C99 -Wall -Wextra -pedantic -Werror"
else bad "gko.h as C99: $(cat "$tmp/e")"; fi
if ${CXX:-g++} -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -Iinclude "$tmp/h.c" 2>"$tmp/e"; then
  ok "gko.h compiles alone as C++11"
else bad "gko.h as C++: $(cat "$tmp/e")"; fi
if grep -nE '^[[:space:]]*#[[:space:]]*include' include/gko.h | grep -vE '<(stddef|stdint)\.h>' >"$tmp/inc"; then
  bad "gko.h includes more than stddef.h/stdint.h: $(cat "$tmp/inc")"
else ok "gko.h includes only <stddef.h> and <stdint.h>"; fi
major=$(sed -n 's/^#define GKO_VERSION_MAJOR \([0-9]*\).*/\1/p' include/gko.h)
minor=$(sed -n 's/^#define GKO_VERSION_MINOR \([0-9]*\).*/\1/p' include/gko.h)
patch=$(sed -n 's/^#define GKO_VERSION_PATCH \([0-9]*\).*/\1/p' include/gko.h)
so=lib/libgko.so.$major.$minor.$patch
if [ ! -f "$so" ]; then bad "$so missing (version in gko.h vs. build)"; else
  ok "$so exists"
  extra=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' | grep -v '^gko_' || true)
  if [ -n "$extra" ]; then bad "exports outside gko_*: $(echo $extra | head -c 300)"; else
    ok "only gko_* symbols exported ($(nm -D --defined-only "$so" | grep -c ' gko_'))"; fi
  undoc=$(nm -D --defined-only "$so" | awk '{print $3}' | grep '^gko_' | while read s; do
    grep -q "\b$s(" include/gko.h || echo "$s"; done)
  if [ -n "$undoc" ]; then bad "exported but not declared in gko.h: $undoc"; else
    ok "every exported symbol is declared in gko.h"; fi
  soname=$(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\].*/\1/p')
  if [ "$soname" = "libgko.so.$major" ]; then ok "SONAME $soname"; else bad "SONAME is '$soname', want libgko.so.$major"; fi
  [ "$(readlink lib/libgko.so.$major)" = "libgko.so.$major.$minor.$patch" ] && ok "lib/libgko.so.$major -> libgko.so.$major.$minor.$patch" || bad "lib/libgko.so.$major link"
  if readelf -d "$so" | grep -q 'NEEDED.*libcudart'; then bad "links libcudart dynamically (must be static)"; else ok "CUDA runtime linked statically"; fi
fi
exit $fail
