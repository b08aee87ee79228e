#!/bin/sh
# Runs, on a machine with a GPU and from already-built binaries (no rebuild):
#   1. every Criterion suite;
#   2. the Python binding tests (torch parts run when torch sees the GPU);
#   3. optionally (GKO_BENCH=1) gko-bench (GKO_BENCH_ARGS, e.g. "--suite
#      spmm") and the Python comparisons (GKO_PYBENCH lists the scripts);
#   4. the suites under compute-sanitizer (each tool in GKO_SANITIZERS,
#      default memcheck racecheck initcheck synccheck; each run bounded by
#      GKO_SANITIZE_TIMEOUT seconds; GKO_SANITIZE_SUITES narrows the suites),
#      skipping the tests named huge_* whose
#      multi-GiB buffers make the tools crawl, and running test_stress
#      with short settings (GKO_STRESS_ITERS etc.; its fault test skips).
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
if [ "${GKO_BENCH:-0}" = 1 ]; then
  echo "== gko-bench"
  build/bin/gko-bench ${GKO_BENCH_ARGS:-} --json "$out/gko-bench.json" 2>&1 | tr '\r' '\n' | grep -v '^  ' | tee "$out/gko-bench.txt" || status=1
  for b in ${GKO_PYBENCH:-python/bench/bench_gelu.py}; do
    echo "== $b"
    PYTHONUNBUFFERED=1 GKO_LIBRARY=$PWD/$(ls lib/libgko.so.*.*.* | head -1) python3 "$b" \
      --json "$out/$(basename "$b" .py).json" 2>&1 | tee "$out/$(basename "$b" .py).txt" || status=1
  done
fi
for tool in $tools; do
  for t in ${GKO_SANITIZE_SUITES:-$suites}; do
    log="$out/san-$tool-$(basename "$t").log"
    # test_stress under a tool: short runs (the tools slow kernels 10-100x)
    short="GKO_STRESS_ITERS=20 GKO_STRESS_THREADS=4 GKO_LEAK_CYCLES=20 GKO_GRAPH_REPLAYS=3"
    [ "$tool" = racecheck ] && short="GKO_STRESS_ITERS=5 GKO_STRESS_THREADS=2 GKO_LEAK_CYCLES=5 GKO_GRAPH_REPLAYS=2"
    env GKO_SANITIZER_RUNNING=1 $short timeout "${GKO_SANITIZE_TIMEOUT:-900}" compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
      --print-limit 20 "$t" --jobs 1 --filter '*/!(huge*)' > "$log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ')
    if [ "$tool" = racecheck ] && [ $rc -eq 99 ]; then
      # cuBLASLt's sm_90 kernels (nvjet_*) synchronise shared memory with
      # TMA/mbarrier operations that racecheck does not model, so it reports
      # hazards inside them; only hazards in other kernels count.
      ours=$(grep 'Race reported between' "$log" | grep -vcE 'nvjet_|cublas|cutlass|xmma')
      summary="$summary; outside cuBLASLt kernels: $ours"
      [ "$ours" -eq 0 ] && rc=0
    fi
    echo "== $tool $(basename "$t"): exit $rc; $summary"
    [ $rc -ne 0 ] && status=1
  done
done
exit $status
