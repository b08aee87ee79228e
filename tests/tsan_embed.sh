#!/bin/sh
# Builds the library's host code and examples/server_embed.c with
# ThreadSanitizer (gcc) into build/tsan, and runs server_embed: worker
# threads, each with its own stream and workspace, sharing one handle and
# one GEMM and one SpMM plan -- the sharing gko.h allows, and the host
# state it exercises (the handle, the plans' pointer memo, the thread-local
# error detail).  The Criterion suites cannot run under ThreadSanitizer
# (Criterion's arena does not map under it), so this plain program is the
# host-side race check.  Any report fails the run (halt_on_error).
#   sh tests/tsan_embed.sh [workers (8)] [requests (256)]
# Needs a GPU to get past gko_create: without one server_embed exits 2 and
# this script reports SKIPPED and exits 0.
set -eu
cd "$(dirname "$0")/.."
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$NVCC")")")}
CUDA_LIB=$(ls -d "$CUDA_HOME/lib64" "$CUDA_HOME/lib" 2>/dev/null | head -1)
ARCH=${GKO_TSAN_ARCH:-90}
SAN="-fsanitize=thread -fno-omit-frame-pointer"
out=build/tsan
sh tests/sanitized_lib.sh "$SAN" "$out" tsan "$ARCH"
gcc -std=gnu11 -O1 -g $SAN -Iinclude -Iexamples -I"$CUDA_HOME/include" examples/server_embed.c \
  -o "$out/server_embed" "$out/libgko-tsan.a" -L"$CUDA_LIB" -lcublasLt -lcudart_static -lstdc++ \
  -lm -lrt -lpthread -ldl
set +e
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$out/server_embed" "${1:-8}" "${2:-256}"
rc=$?
set -e
case $rc in
  0) echo "tsan_embed: PASS (no ThreadSanitizer report)" ;;
  2) echo "tsan_embed: SKIPPED (no usable GPU: server_embed stops at gko_create)"; rc=0 ;;
  *) echo "tsan_embed: FAIL (exit $rc; a ThreadSanitizer report or a failed check above)" ;;
esac
exit $rc
