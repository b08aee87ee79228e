#!/bin/sh
# Builds the library's host code and the host-only suites with AddressSanitizer
# and UndefinedBehaviorSanitizer (gcc) into build/asan, and runs them.  Needs no
# GPU: on a machine without one the GPU tests skip, and what runs is the host
# side -- argument checks, statuses, diagnostics, descriptors, plans' host work.
# Leaks are checked (LeakSanitizer); allocations made inside the statically
# linked CUDA runtime when it finds no driver are suppressed (tests/lsan.supp).
set -eu
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$NVCC")")")}
CUDA_LIB=$(ls -d "$CUDA_HOME/lib64" "$CUDA_HOME/lib" 2>/dev/null | head -1)
ARCH=${GKO_ASAN_ARCH:-90}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
out=build/asan
mkdir -p "$out/tests"
sh tests/sanitized_lib.sh "$SAN" "$out" asan "$ARCH"
status=0
for t in ${GKO_ASAN_SUITES:-tests/test_host.c tests/test_internal.c $(ls tests/test_*.c | grep -vE 'test_(host|internal)\.c')}; do
  b="$out/tests/$(basename "$t" .c)"
  extra=""; lib="$out/libgko-asan.a"
  case $t in
    *test_safetensors.c) extra=-lcjson ;;
    *test_oom.c) # the archive's allocating calls renamed to tests/oom_hooks.c's hooks
      sh tests/oom_archive.sh "$lib" "$out/libgko-asan-oom.a"
      lib="$out/libgko-asan-oom.a"; extra=tests/oom_hooks.c ;;
  esac
  gcc -std=gnu11 -O1 -g $SAN -Iinclude -Isrc -Itests -I"$CUDA_HOME/include" "$t" $extra -o "$b" \
    "$lib" -L"$CUDA_LIB" -lcublasLt -lcudart_static -lstdc++ -lcriterion -lm -lrt -lpthread -ldl
done
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 sh tests/run_suites.sh "$out"/tests/* || status=1
exit $status
