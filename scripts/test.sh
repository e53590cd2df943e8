#!/usr/bin/env bash
# Builds everything (scripts/setup.sh), then runs the whole test suite with
# ctest, prints the ten slowest tests, and exits with ctest's status.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --test-dir build -j"$(nproc)" --output-on-failure --no-tests=error 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo
echo "The ten slowest tests:"
sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$log" | sort -rn | head -10 |
  awk '{ printf "  %8.1f s  %s\n", $1, $2 }'
exit "$status"
