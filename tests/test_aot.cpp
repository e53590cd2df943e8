// The ahead-of-time tool, run as a user runs it: good invocations write
// NAME.ptx (which ptxas accepts), NAME.h and NAME.cpp (which g++ compiles
// and links against the CUDA driver's stub library, without LLVM or
// Coalesce); bad ones exit non-zero, say why, and write nothing. The
// generated launcher is also run against a stand-in driver
// (runtime/aot/testing/fake_driver_check.cpp). The parts that need ptxas or
// g++ skip themselves, saying so, where those are missing.

#include "AotTool.h"

using namespace aot_testing;

TEST_CASE("coalesce-aot --help documents every flag") {
  TempDir dir;
  Result help = aot("--help", dir.path);
  CHECK(help.status == 0);
  for (const char *flag :
       {"--generator=", "--target=", "--name=", "--output-dir=", "--emit=", "-M ", "-N ", "-K ",
        "--bias", "--activation=", "--tile-m=", "--tile-n=", "--reg-m=", "--reg-n=", "--k-step=",
        "--split-k=", "--split-k-mode=", "--stages=", "--warp-layout="}) {
    INFO(std::string(flag));
    CHECK(help.contains(flag));
  }
  for (const char *value : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "none|relu|gelu|gelu_tanh|sigmoid|silu",
                            "header", "launcher", "loops", "llvm", "passed at run time"}) {
    INFO(std::string(value));
    CHECK(help.contains(value));
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("coalesce-aot --version names Coalesce's version and the LLVM it was built with") {
  TempDir dir;
  Result result = aot("--version", dir.path);
  INFO("stdout: ", result.out, "\nstderr: ", result.err);
  CHECK(result.status == 0);
  CHECK(result.contains("coalesce-aot (Coalesce 0."));
  CHECK(result.contains(", built with LLVM 22"));
}

TEST_CASE("coalesce-main and coalesce-bench --version name Coalesce's version too; a bad flag is named once") {
  TempDir dir;
  for (const char *tool : {"coalesce-main", "coalesce-bench"}) {
    const std::string path = COALESCE_BINARY_DIR "/bench/" + std::string(tool);
    if (!fs::exists(path)) {
      MESSAGE("skipped: ", path, " is not built");
      continue;
    }
    Result version = run(quote(path) + " --version", dir.path);
    INFO(tool, ": ", version.out, version.err);
    CHECK(version.status == 0);
    CHECK(version.contains(std::string(tool) + " (Coalesce 0."));
    CHECK(version.contains(", built with LLVM 22"));
  }
  const std::string main_job = COALESCE_BINARY_DIR "/bench/coalesce-main";
  if (fs::exists(main_job)) {
    Result bad = run(quote(main_job) + " --no-such-flag", dir.path);
    CHECK(bad.status == 2);
    CHECK(bad.contains("coalesce-main: Unknown command line argument '--no-such-flag'"));
    CHECK_FALSE(bad.contains("coalesce-main: coalesce-main:"));
  }
  // The benchmark's comparison variables are checked before anything runs.
  const std::string bench = COALESCE_BINARY_DIR "/bench/coalesce-bench";
  if (fs::exists(bench)) {
    Result bad = run("COALESCE_BENCH_SPLIT_K_MODE=sometimes " + quote(bench) + " --shapes=4096", dir.path);
    CHECK(bad.status == 2);
    CHECK(bad.contains("COALESCE_BENCH_SPLIT_K_MODE='sometimes' is no combine: expected deterministic, atomic or "
                       "combine-kernel"));
  }
}

TEST_CASE("a bad flag or value exits non-zero, says why, and writes nothing") {
  struct Bad {
    const char *args;
    const char *message;
  };
  const Bad cases[] = {
      {"--bogus", "Unknown command line argument '--bogus'"},
      {"stray", "Unknown command line argument 'stray'"},
      {"--M=0", "--M=0: a size must be positive"},
      {"--M=abc", "--M=abc: not an integer"},
      {"--K=-4", "--K=-4: a size must be positive"},
      {"--N=3000000000", "--N=3000000000: not an integer"},
      {"--N=2000000000", "at most 2^30"},
      {"--activation=swish", "--activation=swish: expected one of none, relu, gelu, gelu_tanh, sigmoid, silu"},
      {"--bias=maybe", "--bias=maybe: expected true or false"},
      {"--target=sm_75", "unknown GPU target 'sm_75': expected one of sm_80"},
      {"--emit=asm", "--emit=asm: unknown output 'asm'"},
      {"--name=9lives", "--name=9lives: the name becomes the launcher function"},
      {"--generator=conv", "--generator=conv: no such generator; this tool has: gemm"},
      {"--tile-m=64 --reg-m=3", "--tile-m=64 is not a multiple of --reg-m=3"},
      {"--tile-n=512", "--tile-n=512: out of range"},
      {"--k-step=-1", "--k-step=-1: out of range"},
      {"--stages=9", "--stages=9: out of range"},
      {"--warp-layout=3x8", "--warp-layout=3x8: a warp of 3x8 threads; a warp has 32 threads"},
      {"--warp-layout=4", "--warp-layout=4: expected RxC"},
      {"--tile-n=64 --reg-n=8 --warp-layout=2x16", "warps of 2x16 threads do not tile the 16x8 threads"},
      {"--dtype=bf16 --warp-layout=4x8", "leave it out for tf32, bf16 and f16"},
      {"--name=", "--name is empty; give a C identifier"},
      {"--name=a --name=b", "--name is given 2 times; give it once"},
      {"--M=64 --M=128", "--M is given 2 times; give it once"},
      {"--M=65536 --K=65536", "--M=65536 and --K=65536 make A 4294967296 elements, over the 2^30"},
      {"--N=40000 --M=40000", "make out 1600000000 elements"},
      {"--b=mn", "--b=mn: expected one of kn, nk"},
      {"--generator-library=/nonexistent/libgen.so", "--generator-library=/nonexistent/libgen.so: cannot load it"},
      {"--generator-library=", "--generator-library is empty"},
  };
  for (const Bad &bad : cases) {
    TempDir dir;
    Result result = aot(std::string(bad.args) + " --output-dir=" + quote(dir / "out"), dir.path);
    INFO(std::string(bad.args), "\nstderr: ", result.err);
    CHECK(result.status == 1);
    CHECK(result.err.find(bad.message) != std::string::npos);
    CHECK(dir.entries().empty()); // not even the output directory
  }
}

TEST_CASE("an unwritable output directory is an error, and nothing is written") {
  TempDir dir;
  write_file(dir / "a_file", "not a directory\n");
  Result under_file = aot("--output-dir=" + quote(dir / "a_file/sub"), dir.path);
  CHECK(under_file.status == 1);
  CHECK(under_file.contains("cannot create the directory"));
  Result is_file = aot("--output-dir=" + quote(dir / "a_file"), dir.path);
  CHECK(is_file.status == 1);
  CHECK(is_file.contains("exists and is not a directory"));
  Result empty = aot("--output-dir=", dir.path);
  CHECK(empty.status == 1);
  CHECK(dir.entries() == std::vector<std::string>{"a_file"});
  CHECK(read_file(dir / "a_file") == "not a directory\n");

  if (geteuid() != 0) { // root writes anywhere
    fs::create_directory(dir / "read_only");
    fs::permissions(dir / "read_only", fs::perms::owner_read | fs::perms::owner_exec);
    Result read_only = aot("--output-dir=" + quote(dir / "read_only"), dir.path);
    CHECK(read_only.status == 1);
    CHECK(read_only.contains("cannot write"));
    fs::permissions(dir / "read_only", fs::perms::owner_all);
    CHECK(fs::is_empty(dir / "read_only"));
  }
}

TEST_CASE("a failed run leaves earlier outputs untouched") {
  TempDir dir;
  write_file(dir / "gemm.h", "an older header\n");
  Result result = aot("--activation=swish --output-dir=.", dir.path);
  CHECK(result.status == 1);
  CHECK(dir.entries() == std::vector<std::string>{"gemm.h"});
  CHECK(read_file(dir / "gemm.h") == "an older header\n");
}

TEST_CASE("--emit=loops, llvm and ptx print to stdout and write nothing") {
  TempDir dir;
  Result loops = aot("--emit=loops", dir.path);
  CHECK(loops.status == 0);
  CHECK(loops.out.find("reduction of acc") != std::string::npos);
  CHECK(loops.out.find("gpu_block") != std::string::npos);
  Result llvm_ir = aot("--emit=llvm", dir.path);
  CHECK(llvm_ir.status == 0);
  CHECK(llvm_ir.out.find("define ") != std::string::npos);
  CHECK(llvm_ir.out.find("nvptx64") != std::string::npos);
  Result ptx = aot("--emit=ptx --target=sm_89", dir.path);
  CHECK(ptx.status == 0);
  CHECK(ptx.out.find(".target sm_89") != std::string::npos);
  Result two = aot("--emit=loops,header", dir.path);
  CHECK(two.status == 0);
  CHECK(two.out.find("// ===== gemm.loops.txt =====") != std::string::npos);
  CHECK(two.out.find("// ===== gemm.h =====") != std::string::npos);
  CHECK(dir.entries().empty());

  Result files = aot("--emit=loops,llvm --output-dir=.", dir.path);
  CHECK(files.status == 0);
  CHECK(dir.entries() == std::vector<std::string>{"gemm.ll", "gemm.loops.txt"});
  CHECK(read_file(dir / "gemm.loops.txt").find("reduction of acc") != std::string::npos);
}

TEST_CASE("the launcher checks its arguments, loads the module once and launches right") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  // A 64 x 64 tile, so that the fake driver's expected grids stay small.
  Result generated = aot("--name=gemm_check --bias=true --activation=relu --K=96 --tile-m=64 --tile-n=64 "
                         "--reg-m=4 --reg-n=4 --output-dir=.",
                         dir.path);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_check", "gemm_check.cpp", "launcher checks passed");
}

TEST_CASE("--cubin embeds ptxas's cubin next to the PTX, both as byte arrays; the launcher falls back to the PTX") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=gemm_cubin --bias=true --activation=relu --K=96 --cubin --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  std::string source = read_file(dir / "gemm_cubin.cpp");
  // Byte arrays named after the launcher: the PTX (".version" first, NUL
  // last) and the cubin (an ELF image), which is what ptxas makes of it.
  CHECK(source.find("const unsigned char gemm_cubin_ptx[] = {\n    0x2f, 0x2f") != std::string::npos);
  CHECK(source.find("const unsigned char gemm_cubin_cubin[] = {\n    0x7f, 0x45, 0x4c, 0x46,") !=
        std::string::npos);
  CHECK(read_file(dir / "gemm_cubin.h").find(" --cubin") != std::string::npos); // the command that regenerates it
  std::string ptx = read_file(dir / "gemm_cubin.ptx");
  size_t cubin_bytes = assemble_ptx(ptx, GpuTarget()).cubin.size();
  size_t start = source.find("gemm_cubin_cubin[] = {"), end = source.find("};", start);
  REQUIRE(end != std::string::npos);
  CHECK(static_cast<size_t>(std::count(source.begin() + static_cast<long>(start),
                                       source.begin() + static_cast<long>(end), 'x')) == cubin_bytes);
  // Without --cubin, the PTX alone.
  Result plain = aot("--name=gemm_plain --K=96 --emit=launcher", dir.path);
  CHECK(plain.status == 0);
  CHECK(plain.out.find("const unsigned char gemm_plain_ptx[] = {") != std::string::npos);
  CHECK(plain.out.find("_cubin[]") == std::string::npos);

  build_fake_driver(dir.path, "fake_driver_cubin", "gemm_cubin.cpp");
  for (const char *mode : {"", " refuse"}) {
    Result checked = run(std::string("./fake_driver_cubin") + mode, dir.path);
    INFO(mode, "\n", checked.out);
    CHECK(checked.status == 0);
    CHECK(checked.out.find("launcher checks passed") != std::string::npos);
  }
}

TEST_CASE("kernels are named after --name: two launchers link into one program and launch their own kernels") {
  TempDir dir;
  // The PTX entry, the header's account and the LLVM IR name the kernel after the launcher.
  Result ptx = aot("--name=gemm_named --emit=ptx", dir.path);
  CHECK(ptx.out.find(".entry coalesce_gemm_named(") != std::string::npos);
  CHECK(ptx.out.find("coalesce_out") == std::string::npos);
  Result header = aot("--name=gemm_named --emit=header", dir.path);
  CHECK(header.out.find("kernel 'gemm_named'") != std::string::npos);
  Result llvm = aot("--name=gemm_named --emit=llvm", dir.path);
  CHECK(llvm.out.find("@coalesce_gemm_named(") != std::string::npos);
  // A split reduction's second kernel: NAME_1.
  Result split = aot("--name=gemm_split --M=64 --N=64 --K=8192 --split-k=4 --emit=ptx", dir.path);
  CHECK(split.status == 0);
  CHECK(split.out.find(".entry coalesce_gemm_split(") != std::string::npos);
  if (!can_compile_launchers())
    return;
  for (const char *flags : {"--name=gemm_relu_one --bias=true --activation=relu --K=96 --output-dir=.",
                            "--name=gemm_gelu_two --bias=true --activation=gelu --K=96 --output-dir=."}) {
    Result generated = aot(flags, dir.path);
    INFO(flags, "\n", generated.err);
    REQUIRE(generated.status == 0);
  }
  check_fake_driver_passes(dir.path, "fake_driver_two_launchers", "gemm_relu_one.cpp gemm_gelu_two.cpp",
                           "launcher checks passed");
}

TEST_CASE("the launcher accepts K = 0 (out = epilogue(bias)) and empty outputs, and launches nothing for an empty grid") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=gemm_check --bias=true --activation=relu --tile-m=64 --tile-n=64 "
                         "--reg-m=4 --reg-n=4 --output-dir=.",
                         dir.path);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_sizes", "gemm_check.cpp", "launcher size checks passed");
}

TEST_CASE("a user's generator file makes a tool: coalesce-aot-example") {
  TempDir dir;
  Result help = run_tool(kExampleTool, "--help", dir.path);
  CHECK(help.status == 0);
  CHECK(help.contains("bias_activation"));
  CHECK(help.contains("--block-cols="));
  CHECK(help.contains("--rows"));

  Result bad = run_tool(kExampleTool, "--block-rows=32 --block-cols=64 --output-dir=.", dir.path);
  CHECK(bad.status == 1);
  CHECK(bad.contains("over 1024 threads per block"));
  CHECK(dir.entries().empty());

  Result result = run_tool(kExampleTool, "--cols=1024 --activation=relu --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "bias_activation.h");
  CHECK(header.find("CUresult bias_activation(CUdeviceptr X, CUdeviceptr bias, CUdeviceptr out,") !=
        std::string::npos);
  CHECK(header.find("int rows, int cols, CUstream stream);") != std::string::npos);
  CHECK(header.find("grid (32, ceil(rows/8), 1) blocks of (32, 8, 1) threads") !=
        std::string::npos);
  if (can_assemble())
    CHECK(assemble_ptx(read_file(dir / "bias_activation.ptx"), parse_gpu_target("sm_90a"))
              .find("bias_activation") != nullptr);
  if (can_compile_launchers())
    check_launcher_builds(dir, "bias_activation", "bias_activation(0, 0, 0, 1, 1024, 0)");
}

TEST_CASE("--generator-library loads a user's generators into the installed tool") {
  TempDir dir;
  const std::string library = "--generator-library=" + quote(kExampleGenerators);
  Result help = aot(library + " --help", dir.path);
  CHECK(help.status == 0);
  CHECK(help.contains("bias_activation"));
  CHECK(help.contains("gemm"));
  // Two generators now: one must be named; its own checks and flags apply.
  Result unnamed = aot(library + " --output-dir=.", dir.path);
  CHECK(unnamed.status == 1);
  CHECK(unnamed.contains("this tool has several generators (bias_activation, gemm)"));
  Result bad = aot(library + " --generator=bias_activation --block-rows=32 --block-cols=64 --output-dir=.", dir.path);
  CHECK(bad.status == 1);
  CHECK(bad.contains("over 1024 threads per block"));
  CHECK(dir.entries().empty());
  Result result = aot(library + " --generator=bias_activation --cols=1024 --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "bias_activation.h");
  CHECK(header.find("CUresult bias_activation(CUdeviceptr X, CUdeviceptr bias, CUdeviceptr out,") !=
        std::string::npos);
  // The header's command regenerates it: the library is part of it.
  CHECK(header.find("--generator-library=" + kExampleGenerators + " --generator=bias_activation") !=
        std::string::npos);
  // A library that registers no generator (libcoalesce itself) is refused.
  TempDir empty;
  Result none = aot("--generator-library=" + quote(COALESCE_BINARY_DIR "/libcoalesce.so") + " --output-dir=.",
                    empty.path);
  CHECK(none.status == 1);
  CHECK(none.contains("registers no generator"));
  CHECK(empty.entries().empty());
}

TEST_CASE("--b=nk reads B stored N x K, --residual adds an M x N input after the activation") {
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --residual --name=linear --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "linear.h");
  for (const char *line : {"//   B        input  bf16 [N][K]", "//   residual input  bf16 [M][N]",
                           "CUresult linear(coalesce_bf16_deviceptr A, coalesce_bf16_deviceptr B, CUdeviceptr bias, "
                           "coalesce_bf16_deviceptr residual, coalesce_bf16_deviceptr out,"}) {
    INFO(line);
    CHECK(header.find(line) != std::string::npos);
  }
  // The epilogue reads the residual at the output's own element: in the
  // accumulators' loop where the tile is stored directly, in the staged
  // sums' copy-out (the default) where it stores.
  Result loops = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --residual --mma=warp --target=sm_80 --tile-stores=direct "
                     "--emit=loops",
                     dir.path);
  CHECK(loops.status == 0);
  CHECK(loops.contains("+ f32(residual[min(i, M - 1), min(j, N - 1)]))"));
  Result staged =
      aot("--dtype=bf16 --out-dtype=bf16 --b=nk --residual --mma=warp --target=sm_80 --emit=loops", dir.path);
  CHECK(staged.status == 0);
  CHECK(staged.contains("out[bi*128 + flat/128, bj*128 + (warp*32 + lane) % 128] = "));
  CHECK(staged.contains("+ f32(residual[bi*128 + flat/128, bj*128 + (warp*32 + lane) % 128]))"));
  if (can_assemble())
    CHECK(assemble_ptx(read_file(dir / "linear.ptx"), parse_gpu_target("sm_90a")).find("linear") != nullptr);
}

TEST_CASE("--consumer-schedule=ping-pong: two groups of MMA warps in the loops, stores direct") {
  TempDir dir;
  const std::string flags = "--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --tile-m=128 --tile-n=128 --warp-m=128 "
                            "--warp-n=128 --stages=4 --persistent-blocks=132 --producer-warps=4 "
                            "--producer-registers=40 --consumer-schedule=ping-pong";
  // Without --tile-stores: direct (a staged tile would be both groups').
  Result loops = aot(flags + " --emit=loops", dir.path);
  INFO(loops.err);
  REQUIRE(loops.status == 0);
  CHECK(loops.contains("warp/4 == "));
  CHECK(loops.contains("group_barrier_arrive("));
  CHECK(!loops.contains("acc_tile"));
  // Sizes fixed: the program for any size spills at the launch's register
  // cap and serializes its MMAs (C7515), which coalesce-aot refuses.
  Result ptx = aot(flags + " --M=4096 --N=4096 --K=4096 --emit=ptx", dir.path);
  INFO(ptx.err);
  CHECK(ptx.status == 0);
  check_refused(flags + " --emit=ptx", "(C7515)");
  check_refused("--dtype=bf16 --consumer-schedule=sideways", "sideways");
}

TEST_CASE("f32 on FFMA takes A stored K x M, B stored N x K and a column-major output") {
  TempDir dir;
  Result result = aot("--a=km --b=nk --out=nm --name=ffma --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "ffma.h");
  for (const char *line : {"//   A    input  f32 [K][M]", "//   B    input  f32 [N][K]",
                           "//   out  output f32 [M][N] (column-major: strides 1 x M)"}) {
    INFO(line);
    CHECK(header.find(line) != std::string::npos);
  }
  // The FFMA schedule's copies read A(k, i) and W(j, k) where they lie.
  Result loops = aot("--a=km --b=nk --out=nm --emit=loops", dir.path);
  CHECK(loops.status == 0);
  CHECK(loops.contains("async_load(A[min(flat/128, K - 1), min(bi*128 + flat % 128, M - 1)]"));
  CHECK(loops.contains("async_load(B[min(bj*128 + flat/8, N - 1), min(flat % 8, K - 1)]"));
  if (can_assemble())
    CHECK(assemble_ptx(read_file(dir / "ffma.ptx"), parse_gpu_target("sm_90a")).find("ffma") != nullptr);
}

TEST_CASE("a decode step's few rows swap A and B by default, B stored N x K or K x N; --swap-ab=false keeps them") {
  TempDir dir;
  const std::string decode = "--dtype=bf16 --out-dtype=bf16 --b=nk --M=16 --N=256 --K=512 --target=sm_90a ";
  Result swapped = aot(decode + "--name=swapped --output-dir=.", dir.path);
  INFO(swapped.err);
  REQUIRE(swapped.status == 0);
  // W's rows fill the instruction's 64, x's 16 rows its N.
  CHECK(read_file(dir / "swapped.ptx").find("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16") !=
        std::string::npos);
  // B stored K x N: the first operand read MN-major (the transpose flag).
  Result k_by_n = aot("--dtype=bf16 --out-dtype=bf16 --M=16 --N=256 --K=512 --target=sm_90a --name=k_by_n "
                      "--output-dir=.",
                      dir.path);
  REQUIRE(k_by_n.status == 0);
  CHECK(read_file(dir / "k_by_n.ptx").find("m64n16k16.f32.bf16.bf16") != std::string::npos);
  CHECK(read_file(dir / "k_by_n.ptx").find("p, 1, 1, 1, 0;") != std::string::npos);
  // --split-k=0: the swap rule's one-wave split (1 x 4096 x 4096: 64 tiles of W's rows, four slices), and the
  // launcher takes a workspace for its partial sums.
  Result split = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --M=1 --N=4096 --K=4096 --split-k=0 --sm-count=132 "
                     "--target=sm_90a --name=split --output-dir=.",
                     dir.path);
  REQUIRE(split.status == 0);
  CHECK(read_file(dir / "split.ptx").find("m64n8k16.f32.bf16.bf16") != std::string::npos);
  CHECK(read_file(dir / "split.h").find("size_t split_workspace_bytes(int M, int N, int K);") != std::string::npos);
  Result kept = aot(decode + "--swap-ab=false --name=kept --output-dir=.", dir.path);
  REQUIRE(kept.status == 0);
  CHECK(read_file(dir / "kept.ptx").find("m64n16k16") == std::string::npos);
  // More rows than a decode step: the rule leaves the tiling alone.
  Result wide = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --M=256 --N=256 --K=512 --target=sm_90a "
                    "--name=wide --output-dir=.",
                    dir.path);
  REQUIRE(wide.status == 0);
  CHECK(read_file(dir / "wide.ptx").find("m64n16k16") == std::string::npos);
}

TEST_CASE("the example app builds against a generated launcher") {
  if (!can_compile_launchers())
    return;
  if (!fs::exists(cuda_stubs() + "/libcuda.so")) {
    MESSAGE("skipped: no ", cuda_stubs(), "/libcuda.so to link the example app against");
    return;
  }
  TempDir dir;
  REQUIRE(aot("--name=gemm_bias_gelu --bias=true --activation=gelu --output-dir=.", dir.path)
              .status == 0);
  Result built = run("g++ -std=c++17 -O2 -Wall -Wextra -Werror -I. -I" + quote(cuda_include()) +
                         " " + quote(kAotSources + "/example_app/main.cpp") +
                         " gemm_bias_gelu.cpp -L" + quote(cuda_stubs()) + " -lcuda -o example_app",
                     dir.path);
  INFO(built.err);
  CHECK(built.status == 0);
}

TEST_CASE("--name must be a C identifier the launcher can take: no keyword, main, cu* or CU*; nothing is written") {
  const char *const bad[][2] = {
      {"--name=9lives", "must be a C identifier"},
      {"--name=_gemm", "must be a C identifier"},
      {"--name=gemm__x", "names containing '__' are reserved"},
      {"--name=class", "it is a C++ keyword"},
      {"--name=return", "it is a C++ keyword"},
      {"--name=main", "main is the program's entry point"},
      {"--name=cuLaunchKernel", "belong to the CUDA Driver API"},
      {"--name=cuda_gemm", "belong to the CUDA Driver API"},
      {"--name=CUresult", "belong to the CUDA Driver API"},
      {"--name=coalesce_launcher", "namespace of the launcher's helpers"},
  };
  for (const auto &[args, message] : bad) {
    TempDir dir;
    Result result = aot(std::string(args) + " --output-dir=" + quote(dir / "out"), dir.path);
    INFO(args, "\nstderr: ", result.err);
    CHECK(result.status == 1);
    CHECK(result.contains(message));
    CHECK(result.contains("nothing was written"));
    CHECK(dir.entries().empty());
  }
}

TEST_CASE("a run that fails while moving its files into place keeps none of them") {
  TempDir dir;
  // gemm.cpp, the last file moved, cannot replace a non-empty directory:
  // gemm.ptx and gemm.h, already moved, must go again.
  fs::create_directories(fs::path(dir / "gemm.cpp") / "inside");
  Result result = aot("--output-dir=.", dir.path);
  INFO(result.err);
  CHECK(result.status == 1);
  CHECK(result.contains("nothing of this run was kept"));
  CHECK(dir.entries() == std::vector<std::string>{"gemm.cpp"});
}

TEST_CASE("--autotune without a GPU is a clear error, and writes neither outputs nor the database") {
  TempDir dir;
  Result result = run("COALESCE_DISABLE_GPU=1 " + quote(kTool) +
                          " --M=256 --N=256 --K=256 --autotune --tuning-db=db.json --output-dir=out",
                      dir.path);
  CHECK(result.status == 1);
  CHECK(result.contains("autotuning times every candidate on a GPU, and this machine has none"));
  CHECK(dir.entries().empty());
}

// A tuning database with one FFMA entry, for f32 bias + GELU at 1024^3 on
// the H200: 64 x 128 tiles of 16 x 16 threads, blocks in groups of 8 rows.
const char *const kFfmaEntry1024 = R"({"format": "coalesce-tuning-db", "version": 1, "entries": [
 {"gpu": {"name": "NVIDIA H200", "sm": "sm_90a", "sm_count": 132},
  "problem": {"dtype": "f32", "out_dtype": "f32", "epilogue": "bias_gelu", "M": 1024, "N": 1024, "K": 1024},
  "schedule": {"family": "ffma", "block_m": 64, "block_n": 128, "threads_m": 16, "threads_n": 16, "k_step": 16,
               "double_buffered": true, "async_copy": true, "a_padding": 4, "block_group_rows": 8, "split_k": 1,
               "split_k_mode": "deterministic"},
  "ms": 0.12}]})";

TEST_CASE("--tuning-db: the recorded tiling, the default with a note, or a clear error") {
  TempDir dir;
  write_file(dir / "db.json", kFfmaEntry1024);
  const std::string shape = "--M=1024 --N=1024 --K=1024 --emit=loops ";

  Result tuned = aot(shape + "--tuning-db=db.json", dir.path);
  CHECK(tuned.status == 0);
  CHECK(tuned.err.find("using the entry for 1024x1024x1024") != std::string::npos);
  CHECK(tuned.out.find("bi_grouped") != std::string::npos); // the entry's block groups
  CHECK(tuned.out.find("gpu_thread.y(0, 16)") != std::string::npos);
  Result plain = aot(shape, dir.path);
  CHECK(plain.out != tuned.out);

  Result relu = aot(shape + "--activation=relu --tuning-db=db.json", dir.path);
  CHECK(relu.status == 0);
  CHECK(relu.err.find("has no entry for f32->f32 bias_relu 1024x1024x1024") != std::string::npos);
  CHECK(relu.err.find("using the default tiling") != std::string::npos);
  CHECK(relu.out == aot(shape + "--activation=relu", dir.path).out);

  Result missing = aot(shape + "--tuning-db=absent.json", dir.path);
  CHECK(missing.status == 1);
  CHECK(missing.contains("tuning database absent.json: cannot read it"));

  write_file(dir / "broken.json", "{\"format\": \"coalesce-tuning-db\", \"version\": 1, \"entries\": [");
  Result broken = aot(shape + "--tuning-db=broken.json --output-dir=out", dir.path);
  CHECK(broken.status == 1);
  CHECK(broken.contains("tuning database broken.json: not valid JSON"));
  CHECK_FALSE(fs::exists(dir / "out"));

  Result knob = aot(shape + "--tuning-db=db.json --tile-m=64", dir.path);
  CHECK(knob.status == 1);
  CHECK(knob.contains("--tile-m sets a knob that --tuning-db/--autotune choose"));

  Result no_shape = aot("--emit=loops --tuning-db=db.json", dir.path);
  CHECK(no_shape.status == 1);
  CHECK(no_shape.contains("give --M, --N and --K"));

  Result residual = aot(shape + "--residual --tuning-db=db.json", dir.path);
  CHECK(residual.status == 1);
  CHECK(residual.contains("leave out --residual"));
}

TEST_CASE("--tuning-db with --b=nk takes the entry recorded for B stored N x K, never one for K x N") {
  TempDir dir;
  const std::string entry = R"(
 {"gpu": {"name": "NVIDIA H200", "sm": "sm_90a", "sm_count": 132},
  "problem": {"dtype": "bf16", "out_dtype": "bf16", "epilogue": "bias_gelu", "M": 64, "N": 4096, "K": 4096, "b": "LAYOUT"},
  "schedule": {"family": "warpgroup", "block_m": 64, "block_n": 64, "warp_m": 64, "warp_n": 64, "k_step": 64,
               "double_buffered": true, "stages": STAGES, "a_padding": 0, "b_padding": 0, "min_blocks_per_sm": 2,
               "block_group_rows": 0, "tma": true, "producer_warps": 0, "split_k": SPLIT,
               "split_k_mode": "deterministic"},
  "ms": 0.02})";
  auto with = [&](std::string text, const std::string &layout, int stages, int split) {
    text.replace(text.find("LAYOUT"), 6, layout);
    text.replace(text.find("STAGES"), 6, std::to_string(stages));
    text.replace(text.find("SPLIT"), 5, std::to_string(split));
    return text;
  };
  write_file(dir / "db.json", R"({"format": "coalesce-tuning-db", "version": 1, "entries": [)" +
                                  with(entry, "kn", 3, 1) + "," + with(entry, "nk", 5, 2) + "]}");
  const std::string flags = "--dtype=bf16 --out-dtype=bf16 --M=64 --N=4096 --K=4096 --emit=loops --tuning-db=db.json ";
  Result nk = aot(flags + "--b=nk", dir.path);
  INFO(nk.err);
  REQUIRE(nk.status == 0);
  CHECK(nk.err.find("using the entry for 64x4096x4096") != std::string::npos);
  CHECK(nk.out.find("kz") != std::string::npos); // the nk entry's split
  Result kn = aot(flags + "--b=kn", dir.path);
  REQUIRE(kn.status == 0);
  CHECK(kn.out.find("kz") == std::string::npos); // the kn entry: unsplit
  CHECK(nk.out != kn.out);
}

TEST_CASE("the header's command regenerates the same kernels: the library's split choice, a tuning database") {
  // Every flag is written out, those left to the library as "auto"
  // (--split-k-mode, --tile-stores): written as a value, they chose the
  // deterministic combine over the default's combine kernel.
  TempDir dir;
  auto regenerated = [&](const std::string &args) {
    Result first = aot(args + " --name=deep --emit=header,ptx --output-dir=first", dir.path);
    INFO(first.err);
    REQUIRE(first.status == 0);
    std::string header = read_file(dir / "first/deep.h");
    std::string command = header.substr(header.find("//   coalesce-aot ") + 18);
    command = command.substr(0, command.find('\n'));
    CHECK(command.find("--split-k-mode=auto") != std::string::npos);
    CHECK(command.find("--tile-stores=auto") != std::string::npos);
    Result again = aot(command + " --emit=header,ptx --output-dir=again", dir.path);
    INFO(again.err);
    REQUIRE(again.status == 0);
    CHECK(read_file(dir / "again/deep.h") == header);
    CHECK(read_file(dir / "again/deep.ptx") == read_file(dir / "first/deep.ptx"));
    fs::remove_all(dir / "first");
    fs::remove_all(dir / "again");
    return header;
  };
  std::string deep = regenerated("--dtype=bf16 --out-dtype=bf16 --M=256 --N=256 --K=65536 --split-k=0 --target=sm_90a");
  CHECK(deep.find("kernel 'deep_combine'") != std::string::npos); // the default's combine kernel
  write_file(dir / "db.json", kFfmaEntry1024);
  std::string tuned = regenerated("--M=1024 --N=1024 --K=1024 --tuning-db=" + (dir / "db.json"));
  CHECK(tuned.find("blocks of (16, 16, 1)") != std::string::npos); // the entry's 16 x 16 threads
}
