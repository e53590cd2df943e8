#!/usr/bin/env bash
# Checks everything on the GPU machine in one go. Run there, from the root of
# the working tree, with gpu_bundle/coalesce-gpu.tar.gz built beforehand on the
# development machine (bash scripts/build_gpu_bundle.sh) and carried along:
#
#   bash scripts/run_on_gpu.sh [--bench] [--steps=LIST]
#
# Steps, each logged, each run even when an earlier one failed (--steps=LIST,
# e.g. --steps=tests,gpu-check, runs only those: tests, gpu-check (with the
# three sanitizer runs), aot, main):
#   tests      every bin/test_* (doctest; GPU parts run when there is a GPU)
#              and every bin/lesson_*, in parallel
#   gpu-check  coalesce-gpu-check: every GPU schedule, per precision (fp32
#              FFMA; tf32, bf16, f16 tensor cores), against a double
#              reference, cuBLAS / cuBLASLt and the unfused chain, and
#              split-K (bits equal across two launches): the default subset
#              in about five minutes on the H200; --full in
#              COALESCE_GPU_CHECK_ARGS for the whole matrix
#   memcheck   compute-sanitizer --tool memcheck  on coalesce-gpu-check --sanitizer-case
#   racecheck  compute-sanitizer --tool racecheck on coalesce-gpu-check --sanitizer-case
#   synccheck  compute-sanitizer --tool synccheck on coalesce-gpu-check --sanitizer-case
#              (the sanitizer case: the fp32 default, a ragged bf16
#              tensor-core GEMM (and on sm_90a the bf16 and tf32 warpgroup
#              MMAs), split-K GEMMs in fp32 and bf16 in both combine
#              modes, B stored N x K, the FP8 warpgroup MMA and the fused
#              SwiGLU, once each)
#   aot        coalesce-aot generates a fused gemm + bias + GELU launcher per
#              input type (f32, tf32, bf16, f16: --mma=auto, the warpgroup
#              MMA on sm_90a; bf16 on the warp MMA (--mma=warp); bf16 and tf32
#              with --mma=warpgroup, once more with the cubin embedded (--cubin), and f32 and bf16
#              with split-K at the five split-K shapes; e4m3 with row scales
#              and e5m2 with tensor scales, B stored N x K, bf16 out; a bf16
#              SwiGLU, --epilogue=swiglu); the standalone
#              runtime/aot/example_app is built against each with cmake and
#              g++ (no LLVM) and run (fp8_main.cpp for the FP8 ones,
#              swiglu_main.cpp for the SwiGLU)
#   main       coalesce-main (the main job: 4096^3 against cuBLAS of the same precision)
#   bench      only with --bench, if bench/run_benchmarks.sh exists
#
# Logs go to $OUT (or ./gpu_logs when OUT is unset): tests.log, gpu_check.log
# (with the three sanitizer runs), aot.log, main.log, summary.txt; with --bench,
# bench/run_benchmarks.sh writes its own files to $OUT/bench. A table
# (step | status | key figure) is printed last. Exit status 1 when a step
# failed; a step that cannot run here (no GPU, no compute-sanitizer) is
# "skipped", not a failure.
#
# Environment: COALESCE_GPU_BUNDLE (the tarball; default
# gpu_bundle/coalesce-gpu.tar.gz), COALESCE_STEP_TIMEOUT (seconds per step,
# default 1200: the benchmark's eleven shapes take longer than its eight
# did, about 8 minutes), CUDA_ROOT (default /usr/local/cuda), COALESCE_GPU_CHECK_ARGS
# (extra flags for coalesce-gpu-check, e.g. --full: every schedule at the
# large shapes; --precisions=bf16 for one precision).
#
# The test programs look for the sources and the AOT tools at the absolute
# paths of the tree they were built in (COALESCE_SOURCE_DIR / _BINARY_DIR).
# Where that path does not exist here, it is recreated as a folder of links
# into this tree, with the bundle's coalesce-aot (and coalesce-aot-example,
# when the bundle has it) linked where the build put them.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tree=$PWD

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
bench=0 only_steps=""
for arg in "$@"; do
  case $arg in
    --bench) bench=1 ;;
    --steps=*) only_steps=,${arg#--steps=}, ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run_on_gpu: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

bundle=${COALESCE_GPU_BUNDLE:-$tree/gpu_bundle/coalesce-gpu.tar.gz}
logs=${OUT:-$tree/gpu_logs}
step_timeout=${COALESCE_STEP_TIMEOUT:-1200}
cuda=${CUDA_ROOT:-/usr/local/cuda}
mkdir -p "$logs"
if [ ! -f "$bundle" ]; then
  echo "run_on_gpu: $bundle is missing: build it with 'bash scripts/build_gpu_bundle.sh' and carry gpu_bundle" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/coalesce-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$bundle" || { echo "run_on_gpu: cannot extract $bundle" >&2; exit 1; }
bin=$work/bin
export PATH="$cuda/bin:$PATH"
system_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$bin:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

steps=() statuses=() figures=()
# Whether to run a step: all of them, or those named by --steps=a,b.
want() { [ -z "$only_steps" ] || [[ $only_steps == *",$1,"* ]]; }
record() { # step status figure
  steps+=("$1") statuses+=("$2") figures+=("$3")
  printf '>> %-10s %-12s %s\n' "$1" "$2" "$3"
}
# The status of a command from its exit code.
status_of() {
  case $1 in
    0) echo pass ;;
    124 | 137) echo "TIMEOUT" ;;
    *) echo "FAIL (rc $1)" ;;
  esac
}
run_logged() { # log command...: appends the command's output to log, returns its status
  local log=$1
  shift
  echo "\$ $*" >>"$log"
  timeout -k 10 "$step_timeout" "$@" >>"$log" 2>&1
}

{
  echo "run_on_gpu: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 ||
    echo "nvidia-smi: not available"
  echo "bundle: $bundle ($(stat -c %s "$bundle") bytes), $(ls "$bin" | wc -l) files"
} | tee "$logs/summary.txt"

# ------------------------------------------------------------------- tests
# Recreate the build tree's absolute paths the test programs were compiled with.
aot_tool_path=$(strings -n 8 "$bin/test_aot" 2>/dev/null | grep -m1 '/runtime/aot/coalesce-aot$' || true)
aot_src_path=$(strings -n 8 "$bin/test_aot" 2>/dev/null | grep -m1 '^/.*/runtime/aot$' || true)
src_dir=${aot_src_path%/runtime/aot}
bin_dir=${aot_tool_path%/runtime/aot/coalesce-aot}
test_dir=$tree/tests
if [ -n "$src_dir" ] && [ -n "$bin_dir" ]; then
  if [ "$(realpath -m "$src_dir")" != "$tree" ]; then
    if [ ! -e "$src_dir" ] || [ -f "$src_dir/.coalesce-gpu-links" ]; then
      mkdir -p "$src_dir" && touch "$src_dir/.coalesce-gpu-links" && {
        for entry in "$tree"/* "$tree"/.[!.]*; do
          [ -e "$entry" ] && [ "$(basename "$entry")" != .git ] && ln -sfn "$entry" "$src_dir/$(basename "$entry")"
        done
      } || echo "run_on_gpu: cannot create $src_dir: test_golden and test_aot will miss their files" >&2
    else
      echo "run_on_gpu: $src_dir exists and is not this tree: test_golden and test_aot read it" >&2
    fi
  fi
  if [ -d "$src_dir/tests" ]; then test_dir=$src_dir/tests; fi
  # The build folder under a linked tree would be a link into it: make it a real folder.
  [ -L "$bin_dir" ] && rm -f "$bin_dir"
  if mkdir -p "$bin_dir/runtime/aot" 2>/dev/null; then
    for tool in coalesce-aot coalesce-aot-example; do
      [ -x "$bin/$tool" ] && [ ! -e "$bin_dir/runtime/aot/$tool" -o -L "$bin_dir/runtime/aot/$tool" ] &&
        ln -sfn "$bin/$tool" "$bin_dir/runtime/aot/$tool"
    done
  fi
fi

if want tests; then
tests_log=$logs/tests.log
: >"$tests_log"
mkdir -p "$work/test-logs"
programs=()
for program in "$bin"/test_* "$bin"/lesson_*; do
  [ -x "$program" ] && programs+=("$program")
done
for program in "${programs[@]}"; do
  name=$(basename "$program")
  (
    cd "$test_dir" && timeout -k 10 "$step_timeout" "$program" >"$work/test-logs/$name.log" 2>&1
    echo $? >"$work/test-logs/$name.rc"
  ) &
done
wait
failed_programs=() cases_passed=0 cases_failed=0
for program in "${programs[@]}"; do
  name=$(basename "$program")
  rc=$(cat "$work/test-logs/$name.rc" 2>/dev/null || echo 1)
  { echo "===== $name: $(status_of "$rc")"; cat "$work/test-logs/$name.log"; echo; } >>"$tests_log"
  [ "$rc" = 0 ] || failed_programs+=("$name")
  line=$(grep -a '^\[doctest\] test cases:' "$work/test-logs/$name.log" | tail -1)
  if [ -n "$line" ]; then
    p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
    cases_passed=$((cases_passed + p)) cases_failed=$((cases_failed + f))
  fi
done
figure="${#programs[@]} programs, $((${#programs[@]} - ${#failed_programs[@]})) ok; doctest cases $cases_passed passed, $cases_failed failed"
[ ${#failed_programs[@]} -gt 0 ] && figure+="; failed: ${failed_programs[*]}"
if [ ${#programs[@]} -eq 0 ]; then
  record tests "FAIL" "no test programs in the bundle"
elif [ ${#failed_programs[@]} -eq 0 ]; then
  record tests pass "$figure"
else
  record tests FAIL "$figure"
fi
fi # tests

# --------------------------------------------------------------- gpu-check
if want gpu-check; then
check_log=$logs/gpu_check.log
: >"$check_log"
check=$bin/coalesce-gpu-check
if [ ! -x "$check" ]; then
  record gpu-check FAIL "coalesce-gpu-check is not in the bundle (cuBLAS reference not built?)"
  record memcheck skipped "no coalesce-gpu-check"
  record racecheck skipped "no coalesce-gpu-check"
  record synccheck skipped "no coalesce-gpu-check"
else
  echo "===== coalesce-gpu-check" >>"$check_log"
  # shellcheck disable=SC2086 # the flags are words
  run_logged "$check_log" "$check" ${COALESCE_GPU_CHECK_ARGS:-}
  rc=$?
  if grep -q '^no GPU:' "$check_log"; then
    record gpu-check skipped "$(grep -m1 '^no GPU:' "$check_log")"
  else
    record gpu-check "$(status_of $rc)" "$(grep -E '^[0-9]+ checks, [0-9]+ failed' "$check_log" | tail -1)"
  fi
  sanitizer=$(command -v compute-sanitizer || true)
  for tool in memcheck racecheck synccheck; do
    if [ -z "$sanitizer" ]; then
      record $tool skipped "compute-sanitizer not found"
      continue
    fi
    echo "===== compute-sanitizer --tool $tool" >>"$check_log"
    start_line=$(wc -l <"$check_log")
    run_logged "$check_log" "$sanitizer" --tool "$tool" --error-exitcode 3 "$check" --sanitizer-case
    rc=$?
    section=$(tail -n +"$((start_line + 1))" "$check_log")
    summary=$(grep -aE '(ERROR|RACECHECK) SUMMARY' <<<"$section" | tail -1 | sed 's/^========= //')
    # The sanitizer case makes several checks (fp32 and bf16): count them.
    ok=$(grep -acE '^check .*: ok$' <<<"$section")
    bad=$(grep -acE '^check .*: FAIL$' <<<"$section")
    result=""
    [ $((ok + bad)) -gt 0 ] && result="checks $ok ok, $bad failed"
    [ "$bad" -gt 0 ] && [ "$rc" = 0 ] && rc=1
    if grep -q '^no GPU:' <<<"$section"; then
      record $tool skipped "no GPU"
    else
      record $tool "$(status_of $rc)" "${summary:-no summary}; ${result:-no result}"
    fi
  done
fi
fi # gpu-check

# --------------------------------------------------------------------- aot
if want aot; then
aot_log=$logs/aot.log
: >"$aot_log"
if [ ! -x "$bin/coalesce-aot" ]; then
  record aot FAIL "coalesce-aot is not in the bundle"
else
  # One launcher per input type: f32 (FFMA), tf32, bf16 and f16 (tensor
  # cores, 16-bit outputs for the 16-bit types; the default --mma=auto,
  # Hopper's warpgroup MMA on sm_90a), each built into the example app and
  # run at its shapes; bf16-warp: the warp's mma.sync (--mma=warp).
  aot_rc=0 aot_figures=""
  # bf16-wgmma, tf32-wgmma: the bf16 and tf32 launchers on Hopper's
  # warpgroup MMA (--mma=warpgroup);
  # bf16-cubin: the same with ptxas's cubin embedded, which the driver loads;
  # f32-splitk and bf16-splitk: launchers with K split 8 and 4 ways (the
  # caller's workspace), run at the five skinny and deep split-K shapes;
  # e4m3 and e5m2-tensor: FP8 launchers (row and tensor scales);
  # swiglu: y = silu(x Wg^T) * (x Wu^T), bf16 (--epilogue=swiglu).
  splitk_shapes="16 4096 4096;64 11008 4096;128 4096 16384;512 512 32768;256 256 65536"
  variants="f32 tf32 bf16 f16 bf16-warp bf16-wgmma tf32-wgmma bf16-cubin f32-splitk bf16-splitk e4m3 e5m2-tensor swiglu"
  for variant in $variants; do
    dtype=${variant%%-*} extra_flags="" split=OFF scales=row epilogue=gemm
    gen_flags="--name=gemm_bias_gelu --bias=true --activation=gelu"
    case $variant in
      *-wgmma) extra_flags=--mma=warpgroup ;;
      *-warp) extra_flags=--mma=warp ;;
      *-cubin) extra_flags="--mma=warpgroup --cubin" ;; # the launcher loads ptxas's cubin, not the PTX
      f32-splitk) extra_flags=--split-k=8 split=ON ;;
      bf16-splitk) extra_flags="--split-k=4 --mma=warpgroup" split=ON ;;
      e4m3) extra_flags="--b=nk --scales=row" ;;
      e5m2-tensor) extra_flags="--b=nk --scales=tensor" scales=tensor ;;
      swiglu) dtype=bf16 epilogue=swiglu gen_flags="--name=swiglu --epilogue=swiglu" ;;
    esac
    case $dtype in bf16 | f16) out_dtype=$dtype ;; e4m3 | e5m2) out_dtype=bf16 ;; *) out_dtype=f32 ;; esac
    gen=$work/aot-generated-$variant app=$work/aot-app-$variant
    mkdir -p "$gen"
    rc=0
    echo "=== $variant" >>"$aot_log"
    run_logged "$aot_log" "$bin/coalesce-aot" $gen_flags \
      --dtype=$dtype --out-dtype=$out_dtype $extra_flags --output-dir="$gen" || rc=$?
    [ $rc = 0 ] && { run_logged "$aot_log" cmake -S runtime/aot/example_app -B "$app" -DCMAKE_BUILD_TYPE=Release \
      -DCOALESCE_GENERATED_DIR="$gen" -DCOALESCE_EXAMPLE_DTYPE=$dtype -DCOALESCE_EXAMPLE_SCALES=$scales \
      -DCOALESCE_EXAMPLE_EPILOGUE=$epilogue -DCUDAToolkit_ROOT="$cuda" || rc=$?; }
    [ $rc = 0 ] && { run_logged "$aot_log" cmake --build "$app" -j"$(nproc)" || rc=$?; }
    llvm_note=""
    if [ $rc = 0 ]; then
      # Run as a user would, without the bundle's libraries on the search path.
      echo "\$ ldd example_app" >>"$aot_log"
      LD_LIBRARY_PATH=$system_ld_path ldd "$app/example_app" >>"$aot_log" 2>&1
      if LD_LIBRARY_PATH=$system_ld_path ldd "$app/example_app" | grep -qiE 'llvm|coalesce'; then llvm_note=" LINKS LLVM/COALESCE"; rc=1; fi
      : >"$work/aot-$variant.out"
      if [ $split = ON ]; then
        IFS=';' read -ra shapes <<<"$splitk_shapes"
        for shape in "${shapes[@]}"; do
          # shellcheck disable=SC2086 # M N K as three arguments
          run_logged "$work/aot-$variant.out" env LD_LIBRARY_PATH="$system_ld_path" "$app/example_app" $shape || rc=$?
        done
      else
        run_logged "$work/aot-$variant.out" env LD_LIBRARY_PATH="$system_ld_path" "$app/example_app" || rc=$?
      fi
      cat "$work/aot-$variant.out" >>"$aot_log"
    fi
    big=$(grep -aE '^M=(4096 +N=4096|256 +N=256)' "$work/aot-$variant.out" 2>/dev/null | tail -1 | sed -E 's/.*, *([0-9.]+) ms, *([0-9.]+) TFLOP\/s.*/\1 ms/')
    aot_figures="$aot_figures${aot_figures:+; }$variant $(status_of $rc)${big:+ $big}$llvm_note"
    [ $rc = 0 ] || aot_rc=1
  done
  record aot "$(status_of $aot_rc)" "4096^3 (split-K: 256x256x65536): $aot_figures; no LLVM"
fi
fi # aot

# -------------------------------------------------------------------- main
if want main; then
main_log=$logs/main.log
: >"$main_log"
if [ ! -x "$bin/coalesce-main" ]; then
  record main skipped "coalesce-main is not in the bundle"
else
  run_logged "$main_log" "$bin/coalesce-main"
  rc=$?
  ratio=$(grep -a 'speed vs cuBLAS .* GEMM alone' "$main_log" | tail -1 | sed -E 's/.*(cuBLAS [a-z0-9]+) GEMM alone: *([0-9.]+x).*/\2 \1 GEMM/')
  ours=$(grep -a 'coalesce (fused)' "$main_log" | tail -1 | sed -E 's/.*median +([0-9.]+) ms +([0-9.]+) TFLOP.*/\1 ms, \2 TFLOP\/s/')
  verdict=$(grep -aE '^main job: ' "$main_log" | tail -1 | sed 's/^main job: //')
  record main "$(status_of $rc)" "${verdict:-no verdict}${ours:+; $ours}${ratio:+; $ratio}"
fi
fi # main

# ------------------------------------------------------------------- bench
if [ $bench = 1 ]; then
  if [ -f bench/run_benchmarks.sh ]; then
    mkdir -p "$logs/bench"
    OUT=$logs/bench timeout -k 10 "$step_timeout" bash bench/run_benchmarks.sh >"$work/bench.out" 2>&1
    rc=$?
    record bench "$(status_of $rc)" "logs in bench/; last line: $(grep -av '^ *$' "$work/bench.out" | tail -1 | cut -c1-80)"
  else
    record bench skipped "bench/run_benchmarks.sh not found"
  fi
fi

# ------------------------------------------------------------------ summary
failed=0
{
  echo
  printf '| %-10s | %-12s | %s\n' step status "key figure"
  printf '|%s|%s|%s\n' ------------ -------------- ----------------------------------------
  for n in "${!steps[@]}"; do
    printf '| %-10s | %-12s | %s\n' "${steps[$n]}" "${statuses[$n]}" "${figures[$n]}"
  done
} | tee -a "$logs/summary.txt"
for status in "${statuses[@]}"; do
  case $status in pass | skipped) ;; *) failed=$((failed + 1)) ;; esac
done
echo "run_on_gpu: $failed step(s) failed; logs in $logs" | tee -a "$logs/summary.txt"
[ $failed = 0 ]
