#!/usr/bin/env bash
# Runs coalesce-bench on the GPU machine, from the root of the working tree:
#   bash bench/run_benchmarks.sh [coalesce-bench flags, e.g. --precisions=bf16 --shapes=4096,ragged]
# (every precision at every shape by default, the five split-K shapes m16, m64,
# k16k, k32k and k64k included; eight shapes took about 8 minutes on an H200,
# the three deep-K ones add a quarter more benchmarks; --shapes=splitk
# runs those five alone)
# Needs the GPU bundle, gpu_bundle/coalesce-gpu.tar.gz or $COALESCE_GPU_BUNDLE
# (built on the development machine by scripts/build_gpu_bundle.sh). Extracts
# it to $COALESCE_GPU_DIR (/tmp/coalesce-gpu) unless that bundle is already
# there, runs the benchmark with its JSON, log and the GPU's state written to
# $OUT (or ./bench_out), and prints a short table last. On the development
# machine, turn the JSON into docs/results.md and docs/results_<precision>.png with
#   /usr/bin/python3 bench/make_results.py bench_out/bench.json
set -uo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-$PWD/bench_out}
mkdir -p "$out"
bundle=${COALESCE_GPU_BUNDLE:-gpu_bundle/coalesce-gpu.tar.gz}
dest=${COALESCE_GPU_DIR:-/tmp/coalesce-gpu}

if [ ! -f "$bundle" ]; then
  echo "run_benchmarks: $bundle is missing: build it with 'bash scripts/build_gpu_bundle.sh' and carry gpu_bundle" >&2
  exit 1
fi
stamp=$(stat -c '%s-%Y' "$bundle")
if [ ! -x "$dest/bin/coalesce-bench" ] || [ "$(cat "$dest/.bundle-stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$dest" && mkdir -p "$dest" && tar -C "$dest" -xzf "$bundle" || exit 1
  echo "$stamp" >"$dest/.bundle-stamp"
fi
if [ ! -x "$dest/bin/coalesce-bench" ]; then
  echo "run_benchmarks: the bundle has no coalesce-bench (was the cuBLAS reference built? nvcc and Google Benchmark are needed)" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$dest/bin:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The card as we found it (clocks, temperature, power): never changed here.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv >"$out/gpu_state.csv" 2>&1 || true

"$dest/bin/coalesce-bench" --benchmark_out="$out/bench.json" --benchmark_out_format=json "$@" 2>&1 | tee "$out/bench.log"
status=${PIPESTATUS[0]}

nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv >>"$out/gpu_state.csv" 2>&1 || true
echo
if [ -s "$out/bench.json" ]; then
  python3 bench/make_results.py --table "$out/bench.json" || status=1
else
  echo "run_benchmarks: no JSON written (see $out/bench.log)"
fi
echo "run_benchmarks: exit status $status; JSON, log and GPU state in $out"
exit "$status"
