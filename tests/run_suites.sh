#!/bin/sh
# Runs the Criterion suites given as arguments and prints, per suite and in
# total, how many tests passed, failed and were SKIPPED (GPU tests on a
# machine without a GPU).  Exit status 1 if any test failed or crashed.
# Extra Criterion flags come from GKO_TEST_FLAGS (e.g. --filter).  Each suite
# is stopped after GKO_SUITE_TIMEOUT seconds (default 1800) and counts as
# failed then; with GKO_LOG_DIR set, each suite's full output is written
# there as it runs (so a run cut short still leaves its logs).
set -u
logdir=${GKO_LOG_DIR:-${TMPDIR:-/tmp}}
mkdir -p "$logdir"
status=0
tp=0; tf=0; ts=0
for t in "$@"; do
  name=$(basename "$t")
  log="$logdir/suite-$name.$$.log"
  [ -n "${GKO_LOG_DIR:-}" ] && log="$logdir/suite-$name.log"
  timeout -s KILL "${GKO_SUITE_TIMEOUT:-1800}" "$t" --verbose --jobs 1 ${GKO_TEST_FLAGS:-} > "$log" 2>&1
  rc=$?
  out=$(cat "$log")
  [ -z "${GKO_LOG_DIR:-}" ] && rm -f "$log"
  if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    printf '%s\n' "$out" | tail -3
    echo "-- $name: stopped after ${GKO_SUITE_TIMEOUT:-1800} s (the test running last above)"
  fi
  printf '%s\n' "$out" | grep -v '^\[RUN \]' | grep -v '^\[====\] Running'
  skipped=$(printf '%s\n' "$out" | grep -c '^\[SKIP\]')
  synth=$(printf '%s\n' "$out" | grep 'Synthesis' | tail -1)
  passed=$(printf '%s\n' "$synth" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
  failed=$(printf '%s\n' "$synth" | sed -n 's/.*Failing: \([0-9]*\).*Crashing: \([0-9]*\).*/\1 \2/p' | awk '{print $1+$2}')
  : "${passed:=0}" "${failed:=1}"
  [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
  # sanitizer reports from test processes (host ASan/UBSan/LSan builds)
  san=$(printf '%s\n' "$out" | grep -cE '^==[0-9]+==ERROR: (Address|Leak)Sanitizer|runtime error:')
  if [ "$san" -ne 0 ]; then
    echo "-- $name: $san sanitizer report(s) above"
    failed=$((failed + san))
  fi
  echo "-- $name: $passed passed, $failed failed, $skipped skipped"
  tp=$((tp + passed)); tf=$((tf + failed)); ts=$((ts + skipped))
  [ "$failed" -ne 0 ] && status=1
done
echo "== total: $tp passed, $tf failed, $ts skipped"
[ -n "${GKO_TOTAL_FILE:-}" ] && echo "== total: $tp passed, $tf failed, $ts skipped" > "$GKO_TOTAL_FILE"
[ "$ts" -gt 0 ] && echo "   (skipped tests need a CUDA GPU; they did not run)"
exit $status
