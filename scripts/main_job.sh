#!/usr/bin/env bash
# The main job: builds everything (scripts/setup.sh), then runs the fused
# GEMM + bias + GELU program build/bench/coalesce-main, on the GPU if there is
# one and on the CPU otherwise. Extra arguments go to coalesce-main
# (e.g. --M 2048 --N 2048 --K 2048).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec build/bench/coalesce-main "$@"
