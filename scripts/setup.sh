#!/usr/bin/env bash
# Prepares this machine and builds Coalesce into build/ (Release).
#
# Idempotent: each Debian package is checked with dpkg first, so on a machine
# that already has everything this does no network work and only runs an
# incremental build. Meant for Debian 12 (bookworm), as root; uses sudo when
# run as another user and sudo is available.
#
# The CUDA toolkit is expected at /usr/local/cuda (or $COALESCE_CUDA_ROOT):
# its headers (cuda.h) are needed to compile and its libdevice to generate
# PTX. nvcc and ptxas are optional: without nvcc the cuBLAS reference
# (bench/reference) is not built; without ptxas the tests that assemble PTX
# skip themselves.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# chromium: tests/test_stage_page renders the stage page in it, headless.
# libtorch-dev: the PyTorch operator's test (tests/torch_op) builds against it.
packages=(cmake g++ make llvm-22-dev doctest-dev libbenchmark-dev chromium libtorch-dev)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg -s "$package" >/dev/null 2>&1; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 ||
      die "missing packages (${missing[*]}) and not root, and sudo is not available; install them as root"
    as_root=(sudo)
  fi
  say "installing ${missing[*]}"
  "${as_root[@]}" apt-get update
  if ! DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
    die "apt-get could not install ${missing[*]}; llvm-22-dev must be available from the configured apt sources (apt-cache policy llvm-22-dev)"
  fi
else
  say "packages present: ${packages[*]}"
fi

cuda_root="${COALESCE_CUDA_ROOT:-/usr/local/cuda}"
if [[ ! -d "$cuda_root" ]]; then
  die "no CUDA toolkit at $cuda_root. Coalesce needs its headers (cuda.h) and libdevice; install the CUDA toolkit there, or set COALESCE_CUDA_ROOT to where it is"
fi
[[ -f "$cuda_root/include/cuda.h" ]] ||
  die "the CUDA toolkit at $cuda_root has no include/cuda.h; Coalesce cannot be compiled without it"
[[ -f "$cuda_root/nvvm/libdevice/libdevice.10.bc" ]] ||
  say "warning: no $cuda_root/nvvm/libdevice/libdevice.10.bc: PTX for erf/exp/tanh cannot be generated"
[[ -x "$cuda_root/bin/ptxas" ]] ||
  say "warning: no $cuda_root/bin/ptxas: tests that assemble PTX will skip"
[[ -x "$cuda_root/bin/nvcc" ]] ||
  say "note: no $cuda_root/bin/nvcc: the cuBLAS reference (bench/reference) is not built"

jobs="$(nproc)"
say "configuring build/ (Release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCOALESCE_CUDA_ROOT="$cuda_root"
say "building with -j$jobs"
cmake --build build -j"$jobs"
say "done"
