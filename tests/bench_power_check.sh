#!/bin/sh
# bench_power_check.sh -- host-only check of gko-bench's --power (the NVML
# sampler in bench/bench_common.c), with tests/fake_nvml.c standing in for
# libnvidia-ml.so.1.  Needs no GPU and no driver; not part of `make test`.
#
#   sh tests/bench_power_check.sh            (from the repository root)
#
# It builds, under build/power-check/:
#   nvml/libnvidia-ml.so.1      the fake NVML
#   nvml-old/libnvidia-ml.so.1  the same without nvmlDeviceGetPowerUsage
#   bench_power_check           tests/bench_power_check.c + bench/bench_common.c
# and checks: the one-line message and a clean continue when NVML is absent,
# too old, fails to initialise, or has no GPU at the CUDA device's PCI bus
# id; the sampling period, the averages (against what the fake handed out),
# "-" when a region got no sample, prompt stopping, the table columns, the
# JSON fields (and that the file parses), the "# power" lines of modules
# with their own table, and a query that is not supported.
# Exit status 0 when everything passed.
set -u
CC=${CC:-cc}
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=build/power-check
CFLAGS="-std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wno-unused-parameter"
mkdir -p "$OUT/nvml" "$OUT/nvml-old" "$OUT/none"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

$CC $CFLAGS -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 tests/fake_nvml.c \
  -o "$OUT/nvml/libnvidia-ml.so.1" || exit 1
$CC $CFLAGS -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -DFAKE_NVML_OMIT_POWER tests/fake_nvml.c \
  -o "$OUT/nvml-old/libnvidia-ml.so.1" || exit 1
$CC $CFLAGS -Iinclude -I"$CUDA/include" tests/bench_power_check.c bench/bench_common.c \
  -o "$OUT/bench_power_check" -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcudart -lm -lpthread \
  -ldl || exit 1
BIN=$OUT/bench_power_check

# expect_line NAME PATTERN LIBDIR MODE: bench_power_open fails, says PATTERN
# on exactly one stderr line, and the program goes on (exit 0)
expect_line() {
  name=$1 pattern=$2 dir=$3 mode=$4
  err=$(env LD_LIBRARY_PATH="$dir" "$BIN" "$mode" 2>&1 >/dev/null)
  rc=$?
  n=$(printf '%s\n' "$err" | grep -c "$pattern")
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ $rc -eq 0 ] && [ "$n" -eq 1 ] && [ "$lines" -eq 1 ]; then
    ok "$name: $err"
  else
    bad "$name (exit $rc, stderr: $err)"
  fi
}

# "none" holds no libnvidia-ml.so.1; a real one on this machine would be
# found through the default paths, so this case needs a machine without it
if ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1 '; then
  echo "skip no-NVML case: this machine has a real libnvidia-ml.so.1"
else
  expect_line "no NVML" \
    '^gko-bench: --power: NVML (libnvidia-ml.so.1) could not be loaded: .*; power columns omitted$' \
    "$OUT/none" open-only
fi
expect_line "NVML too old" \
  'could not be loaded: it has no nvmlDeviceGetPowerUsage (too old?); power columns omitted$' \
  "$OUT/nvml-old" open-only
FAKE_NVML_INIT=9 expect_line "nvmlInit_v2 fails" \
  'could not be initialised: nvmlInit_v2: Driver Not Loaded; power columns omitted$' \
  "$OUT/nvml" open-only
expect_line "no CUDA device" \
  "^gko-bench: --power: cannot read the CUDA device's PCI bus id: .*; power columns omitted$" \
  "$OUT/nvml" init

# sampling, averages, columns, JSON
out=$(env LD_LIBRARY_PATH="$OUT/nvml" "$BIN" sample "$OUT/rows.json" 2>"$OUT/sample.err")
rc=$?
printf '%s\n' "$out"
if [ $rc -eq 0 ] && [ ! -s "$OUT/sample.err" ]; then ok "sampler checks"; else
  bad "sampler checks (exit $rc)"; cat "$OUT/sample.err"; fi
printf '%s\n' "$out" | grep -q '^# power: NVML sampled every 5 ms .*(GPU at PCI 0000:41:00.0)$' \
  && ok "start line" || bad "start line"
printf '%s\n' "$out" | grep -q '^op .* max_err power_W sm_MHz mem_MiB     J/call$' \
  && ok "table header" || bad "table header"
printf '%s\n' "$out" | grep -Eq '^gelu .* 30[0-9]\.[0-9] +19[0-9][0-9] +10[0-9][0-9] +[0-9.]+e-02$' \
  && ok "gelu row has W, MHz, MiB, J/call" || bad "gelu row"
printf '%s\n' "$out" | grep -Eq '^stale .* +- +- +- +-$' \
  && ok "row without its own region shows -" || bad "stale row"
printf '%s\n' "$out" | grep -Eq '^short .* +- +- +- +-$' \
  && ok "region without a sample shows -" || bad "short row"
printf '%s\n' "$out" | grep -Eq '^# power, check region \([0-9]+ samples in [0-9]+ ms\): +30[0-9]\.[0-9] ' \
  && ok "# power line" || bad "# power line"
if command -v python3 >/dev/null; then
  python3 - "$OUT/rows.json" <<'EOF' && ok "JSON parses, power fields present" || bad "JSON"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["op"] for r in rows] == ["gelu", "stale", "short"], rows
g, s, t = rows
assert 300 <= g["power_w"] <= 310 and g["sm_mhz"] > 1900 and g["mem_used_mib"] >= 1024, g
assert abs(g["energy_j_per_call"] - g["power_w"] * 250e-6) < 1e-3 * g["energy_j_per_call"], g
assert g["power_samples"] >= 3, g
for r in (s, t):
    assert r["power_w"] is None and r["energy_j_per_call"] is None and r["power_samples"] == 0, r
EOF
else
  echo "skip JSON parse: no python3"
fi

# a query the GPU does not support: one warning, "-" in its column
err=$(env LD_LIBRARY_PATH="$OUT/nvml" FAKE_NVML_NO_CLOCK=1 "$BIN" noclock 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] &&
   printf '%s\n' "$err" | grep -q 'nvmlDeviceGetClockInfo(SM): Not Supported; sm_MHz show -$'; then
  ok "unsupported clock: $err"
else
  bad "unsupported clock (exit $rc, stderr: $err)"
fi

# slow reads (3 ms each): still at most one sample per period, no burst
out=$(env LD_LIBRARY_PATH="$OUT/nvml" FAKE_NVML_SLOW_US=3000 FAKE_NVML_NO_CLOCK=1 "$BIN" noclock 2>&1 >/dev/null)
[ $? -eq 0 ] && ok "slow NVML reads" || { bad "slow NVML reads"; printf "%s\n" "$out"; }

[ $fail -eq 0 ] && echo "bench_power_check: PASS" || echo "bench_power_check: FAIL"
exit $fail
