#!/usr/bin/env bash
# Builds, on this (development) machine, everything the GPU machine runs:
# libcoalesce with LLVM linked in statically (the GPU machine has no LLVM),
# the test and benchmark programs that link it, and Google Benchmark's shared
# library, stripped, into gpu_bundle/ (ignored by git; carried to the GPU
# machine). Usage: bash scripts/build_gpu_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$root/build-gpu
bundle=$root/gpu_bundle
staging=$build/bundle

# LLVM's static libraries need zstd's static library to link.
if ! dpkg -s libzstd-dev >/dev/null 2>&1; then
  apt-get install -y libzstd-dev || { apt-get update && apt-get install -y libzstd-dev; }
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOALESCE_STATIC_LLVM=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

rm -rf "$staging" "$bundle"
mkdir -p "$staging/bin" "$bundle"
# The library under its soname (what the programs' NEEDED entries name),
# as one file: the transfer to the GPU machine is capped at 64 MiB.
soname=$(readelf -d "$build/libcoalesce.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
cp -L "$build/libcoalesce.so" "$staging/bin/${soname:-libcoalesce.so}"
for program in "$build"/tests/test_* "$build"/bench/coalesce-* "$build"/examples/lesson_* "$build"/runtime/aot/coalesce-aot "$build"/runtime/aot/coalesce-aot-example; do
  [ -f "$program" ] && [ -x "$program" ] && cp "$program" "$staging/bin/"
done
# Google Benchmark ships only as a shared library on Debian.
for lib in /usr/lib/x86_64-linux-gnu/libbenchmark.so.1*; do
  [ -f "$lib" ] && cp "$lib" "$staging/bin/"
done
strip --strip-unneeded "$staging"/bin/* 2>/dev/null || true
# The executables look for libcoalesce next to themselves.
for program in "$staging"/bin/*; do
  case "$program" in *.so*) ;; *) patchelf --set-rpath '$ORIGIN:/usr/local/cuda/lib64' "$program" 2>/dev/null || true ;; esac
done
# Extra programs built outside CMake (e.g. probes) can be dropped into
# $staging/bin before this point by the caller via COALESCE_BUNDLE_EXTRA.
for extra in ${COALESCE_BUNDLE_EXTRA:-}; do cp "$extra" "$staging/bin/"; done
# One compressed file: the transfer to the GPU machine is capped at 64 MiB.
tar -C "$staging" -czf "$bundle/coalesce-gpu.tar.gz" bin
du -sh "$bundle/coalesce-gpu.tar.gz"
