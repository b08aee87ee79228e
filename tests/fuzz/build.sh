#!/bin/sh
# Builds the libFuzzer target build/fuzz/fuzz_api: gko's C sources compiled by
# clang with AddressSanitizer, UBSan and fuzzer coverage; the CUDA kernels
# from the regular build (make) linked in as they are.
set -eu
cd "$(dirname "$0")/../.."
CLANG=${CLANG:-clang}
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$NVCC")")")}
CUDA_LIB=$(ls -d "$CUDA_HOME/lib64" "$CUDA_HOME/lib" 2>/dev/null | head -1)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# clang with libFuzzer's runtime: install it (Debian/Ubuntu, as root) if missing
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}' |
     $CLANG -x c -fsanitize=fuzzer - -o /tmp/gko-fuzz-probe 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing clang and libclang-rt-dev (libFuzzer) with apt-get"
    apt-get install -y -q clang libclang-rt-dev >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q clang libclang-rt-dev >/dev/null; }
  else
    echo "error: fuzzing needs clang with libFuzzer: install clang and libclang-rt-dev" >&2
    exit 1
  fi
fi
rm -f /tmp/gko-fuzz-probe
out=build/fuzz
mkdir -p "$out/obj"
ls build/obj/*.cu.o >/dev/null 2>&1 || { echo "error: run make first (the kernels' objects)" >&2; exit 1; }
objs=""
for f in src/*.c; do
  o="$out/obj/$(basename "$f" .c).o"
  $CLANG -std=gnu11 -O1 -g $SAN -fsanitize=fuzzer-no-link -Iinclude -I"$CUDA_HOME/include" \
    -DGK_SASS_LIST=90 -DGK_PTX_ARCH=90 -c "$f" -o "$o"
  objs="$objs $o"
done
$CLANG -std=gnu11 -O1 -g $SAN -fsanitize=fuzzer -Iinclude tests/fuzz/fuzz_api.c $objs \
  build/obj/*.cu.o -L"$CUDA_LIB" -lcublasLt -lcudart_static -lstdc++ -lm -lrt -lpthread -ldl \
  -o "$out/fuzz_api"
rm -rf "$out/corpus" && mkdir -p "$out/corpus" && cp tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
echo "built $out/fuzz_api"
