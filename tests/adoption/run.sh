#!/usr/bin/env bash
# The adoption tests (registered with ctest in tests/CMakeLists.txt): this
# directory's consumer project built against Coalesce the ways a user would.
#
#   run.sh install        SOURCE BUILD WORK   cmake --install BUILD into WORK/prefix
#   run.sh find_package   SOURCE BUILD WORK   consumer on WORK/prefix: build and run cpu_gemm
#   run.sh aot_library    SOURCE BUILD WORK   consumer on WORK/prefix: build and run aot_gemm
#   run.sh subdirectory   SOURCE BUILD WORK   consumer with add_subdirectory(SOURCE): configure,
#                                             compile the consumer and two library sources
#   run.sh example        SOURCE BUILD WORK   examples/aot_consumer on WORK/prefix: build it (it
#                                             needs a GPU to run)
#   run.sh readme         SOURCE BUILD WORK   the README's first program, as pasted, built with
#                                             the README's g++ line on WORK/prefix, and run
#   run.sh user_generator SOURCE BUILD WORK   consumer on WORK/prefix: the user's own generator
#                                             (coalesce_add_generator), compiled by the installed
#                                             coalesce-aot at build time; build and run
#                                             user_generator_app, and a bad parameter refused
#
# Every mode reuses BUILD's compiled library: nothing of Coalesce is rebuilt,
# so each takes seconds. The consumer is configured as a parent project
# without doctest or Google Benchmark would be.
set -euo pipefail

mode=$1 source=$2 build=$3 work=$4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$work/prefix"

compiler_flags=()
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
[[ -n $compiler ]] && compiler_flags+=("-DCMAKE_CXX_COMPILER=$compiler")
launcher=$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$build/CMakeCache.txt")
[[ -n $launcher ]] && compiler_flags+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher")
cuda_root=$(sed -n 's/^CUDAToolkit_ROOT:[A-Z]*=//p' "$build/CMakeCache.txt")
[[ -n $cuda_root ]] && compiler_flags+=("-DCUDAToolkit_ROOT=$cuda_root")

configure() { # build-dir, extra flags...
  local dir=$1
  shift
  rm -rf "$dir"
  cmake --no-warn-unused-cli -S "$here" -B "$dir" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release "${compiler_flags[@]}" \
    -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
    -DCOALESCE_FAKE_DRIVER_DIR="$source/runtime/aot/testing" "$@"
}

case $mode in
  install)
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix"
    for installed in lib/libcoalesce.so bin/coalesce-aot include/coalesce/runtime/Coalesce.h \
        lib/cmake/Coalesce/CoalesceConfig.cmake lib/cmake/Coalesce/CoalesceConfigVersion.cmake \
        lib/cmake/Coalesce/CoalesceTargets.cmake lib/cmake/Coalesce/CoalesceAot.cmake; do
      [[ -e $prefix/$installed ]] || { echo "FAIL: the install has no $installed"; exit 1; }
    done
    # The installed tool runs from the prefix (its RUNPATH finds libcoalesce).
    nest=$("$prefix/bin/coalesce-aot" --emit=loops)
    [[ $nest == *gpu_block* ]] || { echo "FAIL: the installed coalesce-aot does not print a loop nest"; exit 1; }
    echo "ok: installed into $prefix"
    ;;
  find_package | aot_library)
    program=cpu_gemm
    [[ $mode == aot_library ]] && program=aot_gemm
    dir="$work/consumer-$mode"
    configure "$dir" -DCOALESCE_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$dir" --target "$program" -j2
    "$dir/$program"
    ;;
  user_generator)
    dir="$work/consumer-user-generator"
    configure "$dir" -DCOALESCE_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$dir" --target user_generator_app -j2
    "$dir/user_generator_app"
    # The generator's own check of a parameter, through the installed tool:
    # a message naming it, status 1, nothing written.
    library=$(find "$dir" -name 'libuser_generators.so' -o -name 'user_generators.so' | head -1)
    [[ -n $library ]] || { echo "FAIL: no generator library built"; exit 1; }
    set +e
    message=$("$prefix/bin/coalesce-aot" --generator-library="$library" --generator=silu_residual_linear \
      --tile-M=0 --output-dir="$dir/never" 2>&1)
    status=$?
    set -e
    [[ $status == 1 && $message == *"--tile-M=0"* && ! -e $dir/never ]] ||
      { echo "FAIL: a bad generator parameter gave status $status and: $message"; exit 1; }
    echo "ok: refused: $message"
    ;;
  subdirectory)
    dir="$work/consumer-subdirectory"
    configure "$dir" -DCOALESCE_CONSUMER_MODE=subdirectory -DCOALESCE_SOURCE_DIR="$source"
    # Per-source rules compile one file without building its target's
    # dependencies: the consumer against Coalesce's usage requirements, and
    # library sources with the include paths the subproject gives them.
    make -C "$dir" cpu_gemm.cpp.o
    make -C "$dir/coalesce/dsl" Var.cpp.o
    make -C "$dir/coalesce/runtime" CudaDriver.cpp.o
    echo "ok: Coalesce configures and compiles as a subproject"
    ;;
  example)
    dir="$work/aot-consumer-example"
    rm -rf "$dir"
    cmake --no-warn-unused-cli -S "$source/examples/aot_consumer" -B "$dir" -G "Unix Makefiles" \
      -DCMAKE_BUILD_TYPE=Release "${compiler_flags[@]}" -DCMAKE_PREFIX_PATH="$prefix"
    cmake --build "$dir" -j2
    [[ -x $dir/gemm_app ]] || { echo "FAIL: examples/aot_consumer built no gemm_app"; exit 1; }
    echo "ok: examples/aot_consumer builds against the installed package"
    ;;
  readme)
    # The C++ block that starts "// first_program.cpp", and the g++ line
    # after it, with the install prefix in place of /opt/coalesce.
    dir="$work/readme"
    rm -rf "$dir" && mkdir -p "$dir"
    awk '/^```c\+\+$/ { inside = 1; text = ""; next }
         inside && /^```$/ { if (text ~ /^\/\/ first_program.cpp/) { printf "%s", text; exit } inside = 0; next }
         inside { text = text $0 "\n" }' "$source/README.md" >"$dir/first_program.cpp"
    [[ -s $dir/first_program.cpp ]] || { echo "FAIL: README.md has no C++ block starting // first_program.cpp"; exit 1; }
    build_line=$(awk '/^g\+\+ .*first_program.cpp/ { line = $0; while (line ~ /\\$/) { sub(/\\$/, "", line); getline more; line = line more } print line; exit }' "$source/README.md")
    [[ -n $build_line ]] || { echo "FAIL: README.md has no g++ line for first_program.cpp"; exit 1; }
    build_line=${build_line//\/opt\/coalesce/$prefix}
    (cd "$dir" && eval "$build_line")
    (cd "$dir" && ./first_program) >"$dir/output.txt" || { cat "$dir/output.txt"; echo "FAIL: first_program failed"; exit 1; }
    grep -q "largest difference from the plain loop" "$dir/output.txt" || { echo "FAIL: no comparison printed"; exit 1; }
    tail -2 "$dir/output.txt"
    echo "ok: the README's first program builds as pasted and agrees with the plain loop"
    ;;
  *)
    echo "run.sh: unknown mode '$mode'; expected install, find_package, aot_library, user_generator, subdirectory, example or readme" >&2
    exit 2
    ;;
esac
