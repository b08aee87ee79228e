#!/bin/sh
# Makes the failure-injection copy of a gko static archive for
# tests/test_oom.c: in every member, the calls to the functions listed in
# tests/oom_hooks.syms are renamed to their hooks (tests/oom_hooks.c).
# Refuses an archive that calls an allocating function the list lacks, so
# that no allocation of gko's escapes the sweep unnoticed (add a hook).
#   oom_archive.sh IN.a OUT.a
set -eu
in=$1 out=$2
syms=$(dirname "$0")/oom_hooks.syms
known=$(sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\) gk_hook_.*/\1/p' "$syms")
# what allocates host memory or creates a CUDA, cuBLAS(Lt) or cuSPARSE object
pat='^(malloc|calloc|realloc|reallocarray|free|strdup|strndup|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|asprintf|vasprintf|getline|getdelim|open_memstream|_Zn[wa].*'
pat="$pat"'|cuda(Malloc|HostAlloc|Free|StreamCreate|EventCreate|Graph[A-Za-z]*Instantiate|GraphCreate|ArrayCreate|MemPoolCreate|UserObjectCreate|CreateTextureObject|CreateSurfaceObject|IpcOpen)[A-Za-z0-9_]*'
pat="$pat"'|cublas(Lt)?[A-Za-z]*Create[A-Za-z0-9_]*|cusparse[A-Za-z]*Create[A-Za-z0-9_]*|cuMem(Alloc|Create)[A-Za-z0-9_]*)$'
missing=$(nm -u "$in" | awk 'NF == 2 {print $2}' | grep -E "$pat" | sort -u | grep -vxF "$known" || true)
if [ -n "$missing" ]; then
  echo "oom_archive.sh: $in calls allocating functions that tests/oom_hooks.syms does not hook:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
rm -f "$out.tmp"
${OBJCOPY:-objcopy} --redefine-syms="$syms" "$in" "$out.tmp"
left=$(nm -u "$out.tmp" | awk 'NF == 2 {print $2}' | grep -xF "$known" | sort -u || true)
if [ -n "$left" ]; then
  echo "oom_archive.sh: still called after renaming: $left" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"
