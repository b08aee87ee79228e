#!/bin/sh
# Runs, on a machine with a GPU and from already-built binaries (no rebuild):
#   1. every Criterion suite;
#   2. the Python binding tests (torch parts run when torch sees the GPU),
#      and build/bin/minilm --check in f32, f16, bf16 when the model is here;
#   3. optionally (GKO_BENCH=1) gko-bench (GKO_BENCH_ARGS, e.g. "--suite
#      spmm") and the Python comparisons (GKO_PYBENCH lists the scripts);
#   4. the suites under compute-sanitizer (tests/sanitize_one.sh for each
#      tool in GKO_SANITIZERS, default memcheck racecheck initcheck
#      synccheck, and each suite, or those in GKO_SANITIZE_SUITES, those in
#      GKO_SANITIZE_SPLIT one Criterion suite per job, those in
#      GKO_SANITIZE_SPLIT_TESTS one test per job;
#      GKO_SANITIZE_JOBS runs at a time; each bounded by
#      GKO_SANITIZE_TIMEOUT seconds).
# Logs go to OUTDIR (default gpu-logs).  Exit status 1 if anything failed.
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
cd "$(dirname "$0")/.." || exit 1
suites=${GKO_SUITES:-$(ls build/tests/test_* 2>/dev/null)}
tools=${GKO_SANITIZERS-memcheck racecheck initcheck synccheck}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1
echo "== suites"
GKO_LOG_DIR="$out" sh tests/run_suites.sh $suites > "$out/tests.log" 2>&1 || status=1
grep -E '^-- |^== total|FAIL|\[ERR\]|CRASH' "$out/tests.log" | head -40
echo "== python binding"
GKO_LIBRARY=$PWD/$(ls lib/libgko.so.*.*.* | head -1) python3 -m unittest discover -s python/tests -v > "$out/python.log" 2>&1 || status=1
tail -3 "$out/python.log"
echo "== python binding, every call through ctypes (GKO_FASTCALL=0)"
GKO_FASTCALL=0 GKO_LIBRARY=$PWD/$(ls lib/libgko.so.*.*.* | head -1) python3 -m unittest discover -s python/tests -v > "$out/python-ctypes.log" 2>&1 || status=1
tail -3 "$out/python-ctypes.log"
# the MiniLM encoder against the stored float64 reference, when the model is here
mdir=${GKO_MINILM_DIR:-build/models/all-MiniLM-L6-v2}
if [ -x build/bin/minilm ] && [ -f "$mdir/model.safetensors" ]; then
  echo "== minilm ($mdir)"
  ref=data/minilm/embeddings_f64.txt
  [ -f "$mdir/embeddings_f64.txt" ] && ref=$mdir/embeddings_f64.txt  # a copy's own reference (fp16 weights)
  for dt in f32 f16 bf16; do
    build/bin/minilm --model "$mdir" --dtype $dt --sentences data/minilm/sentences.txt --check "$ref" \
      > "$out/minilm-$dt.log" 2>&1 || status=1
    tail -1 "$out/minilm-$dt.log"
  done
else
  echo "== minilm SKIPPED (no build/bin/minilm or no model in $mdir: make examples model-minilm)"
fi
if [ "${GKO_BENCH:-0}" = 1 ]; then
  echo "== gko-bench"
  build/bin/gko-bench ${GKO_BENCH_ARGS:-} --json "$out/gko-bench.json" 2>&1 | tr '\r' '\n' | grep -v '^  ' | tee "$out/gko-bench.txt" || status=1
  for b in ${GKO_PYBENCH:-python/bench/bench_gelu.py}; do
    echo "== $b"
    PYTHONUNBUFFERED=1 GKO_LIBRARY=$PWD/$(ls lib/libgko.so.*.*.* | head -1) python3 "$b" \
      --json "$out/$(basename "$b" .py).json" 2>&1 | tee "$out/$(basename "$b" .py).txt" || status=1
  done
fi
# every (tool, suite) pair, GKO_SANITIZE_JOBS at a time (default 1; the
# tools are CPU-bound, so several share one GPU well); GKO_SANITIZERS=""
# skips this stage
if [ -z "$(echo $tools)" ]; then
  echo "== sanitizers skipped (GKO_SANITIZERS is empty)"
  exit $status
fi
# the binaries in GKO_SANITIZE_SPLIT (default none) run as one job per
# Criterion suite, those in GKO_SANITIZE_SPLIT_TESTS (default test_gemm
# test_conv: racecheck of their largest suites outlasts any single job) as
# one job per test, so that several jobs share them
split=${GKO_SANITIZE_SPLIT-}
split_tests=${GKO_SANITIZE_SPLIT_TESTS-test_gemm test_conv}
for tool in $tools; do
  for t in ${GKO_SANITIZE_SUITES:-$suites}; do
    case " $split_tests " in
      *" $(basename "$t") "*)
        "$t" --list 2>/dev/null | awk -v tool="$tool" -v t="$t" '
          /^[A-Za-z0-9_]+: [0-9]+ tests?$/ { s = substr($1, 1, length($1) - 1); next }
          s != "" && $NF !~ /^huge/ { print tool, t, s "/" $NF, s "-" $NF }'
        continue ;;
    esac
    case " $split " in
      *" $(basename "$t") "*)
        for s in $("$t" --list 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\): [0-9]* tests*$/\1/p'); do
          echo "$tool $t $s/!(huge*) $s"
        done ;;
      *) echo "$tool $t" ;;
    esac
  done
done | xargs -P "${GKO_SANITIZE_JOBS:-1}" -L 1 \
  sh -c 'sh tests/sanitize_one.sh "$0" "$1" "'"$out"'" ${2:+"$2"} ${3:+"$3"}' \
  > "$out/sanitize.txt" 2>&1 || status=1
sort "$out/sanitize.txt"
exit $status
