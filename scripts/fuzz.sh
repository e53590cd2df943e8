#!/usr/bin/env bash
# The long run of the schedule fuzzer: scripts/fuzz.sh N_CASES [FIRST_SEED]
# runs seeds FIRST_SEED .. FIRST_SEED+N_CASES-1 in batches over the cores and
# prints the count of each outcome; failing seeds are listed in
# $FUZZ_LOG_DIR (default build/fuzz) with their programs. Needs a build
# (build/tests/test_fuzz).
set -euo pipefail
cases=${1:?usage: scripts/fuzz.sh N_CASES [FIRST_SEED]}
first=${2:-1000} # CI runs seeds 0 .. 999 (tests/test_fuzz.cpp)
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${FUZZ_BINARY:-$root/build/tests/test_fuzz}
logs=${FUZZ_LOG_DIR:-$root/build/fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
batch=${FUZZ_BATCH:-500}
mkdir -p "$logs"
rm -f "$logs"/batch_*.log
start=$first
end=$((first + cases))
running=0
while [ "$start" -lt "$end" ]; do
  n=$((end - start < batch ? end - start : batch))
  COALESCE_FUZZ_FIRST=$start COALESCE_FUZZ_CASES=$n "$binary" >"$logs/batch_$start.log" 2>&1 &
  start=$((start + n))
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
# Sum the per-batch counts.
grep -h '^fuzz seeds' "$logs"/batch_*.log | tr ' ' '\n' | grep '=' |
  awk -F= '{ c[$1] += $2 } END { total = 0; for (k in c) { print k, c[k]; total += c[k] } print "total", total }' | sort
failed=$(grep -h "^seed .*: FAIL" "$logs"/batch_*.log | wc -l || true)
echo "failing seeds: $failed (programs in $logs/batch_*.log)"
grep -h '^seed .*: FAIL' "$logs"/batch_*.log | head -50 || true
# A batch that did not run to its summary (a crash of the runner itself, or
# a library relinked under it) counts as a failure, not as fewer cases.
ran=$(grep -h '^fuzz seeds' "$logs"/batch_*.log | tr ' ' '\n' | grep '=' | awk -F= '{ t += $2 } END { print t + 0 }')
if [ "$ran" -ne "$cases" ]; then
  echo "only $ran of $cases cases ran; batches without a summary:"
  for log in "$logs"/batch_*.log; do grep -q '^fuzz seeds' "$log" || echo "  $log: $(tail -1 "$log")"; done
  exit 1
fi
[ "$failed" -eq 0 ]
