#!/usr/bin/env bash
# Builds everything (scripts/setup.sh), then runs the whole test suite with
# ctest and exits with its status.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec ctest --test-dir build -j"$(nproc)" --output-on-failure --no-tests=error
