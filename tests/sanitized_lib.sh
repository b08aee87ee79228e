#!/bin/sh
# Builds gko as a static library with sanitizer flags, for one architecture:
# the host code by gcc, the kernels by nvcc with the same flags passed to its
# host compiler (kernel objects are rebuilt only when older than their
# source).  Used by tests/host_sanitize.sh (ASan + UBSan) and
# tests/tsan_embed.sh (TSan).
#   sanitized_lib.sh "SANITIZER FLAGS" OUTDIR NAME [ARCH (90)]
# Writes OUTDIR/obj/* and OUTDIR/libgko-NAME.a.
set -eu
cd "$(dirname "$0")/.."
san=$1 out=$2 name=$3 arch=${4:-90}
NVCC=${NVCC:-nvcc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$NVCC")")")}
mkdir -p "$out/obj"
objs=""
for f in src/*.c; do
  o="$out/obj/$(basename "$f" .c).o"
  gcc -std=gnu11 -O1 -g $san -fPIC -Iinclude -I"$CUDA_HOME/include" \
    -DGK_SASS_LIST="$arch" -DGK_PTX_ARCH="$arch" -c "$f" -o "$o"
  objs="$objs $o"
done
# nvcc splits -Xcompiler values at commas: -fsanitize=a,b goes as one
# -fsanitize= per sanitizer
xsan=""
for flag in $san; do
  case $flag in
    -fsanitize=*,*)
      for one in $(echo "${flag#-fsanitize=}" | tr ',' ' '); do
        xsan="$xsan -Xcompiler -fsanitize=$one"
      done ;;
    *) xsan="$xsan -Xcompiler $flag" ;;
  esac
done
# The CUTLASS instantiation files (kernels/gemm_sm90_<ab>_<cd>.cu,
# kernels/conv_sm90_<type>.cu) are not rebuilt here: the regular build's
# objects are linked as they are when it made them (their host side is then
# not instrumented), else the SM90 kernels are left out (GK_SM90=0, which
# the *_sm90_launch.cu dispatch files are compiled with, one object per
# value).
sm90=0
ls build/obj/gemm_sm90_f16.cu.o build/obj/conv_sm90_f16.cu.o >/dev/null 2>&1 && sm90=1
for f in kernels/*.cu; do
  case $f in
    kernels/*_sm90_launch.cu) ;;
    kernels/*_sm90_*.cu)
      [ $sm90 = 1 ] && objs="$objs build/obj/$(basename "$f" .cu).cu.o"
      continue ;;
  esac
  o="$out/obj/$(basename "$f" .cu).cu.o"
  case $f in kernels/*_sm90_launch.cu) o="$out/obj/$(basename "$f" .cu)-$sm90.cu.o" ;; esac
  [ "$o" -nt "$f" ] || "$NVCC" -O1 -std=c++17 -gencode arch=compute_$arch,code=sm_$arch \
    -Iinclude --expt-relaxed-constexpr -DGK_SM90=$sm90 $xsan -c "$f" -o "$o"
  objs="$objs $o"
done
rm -f "$out/libgko-$name.a" && ar rcs "$out/libgko-$name.a" $objs
