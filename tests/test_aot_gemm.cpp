// The ahead-of-time tool's gemm generator, flag by flag: the PTX, header
// and launcher each input and output type, instruction family (warp MMA,
// warpgroup MMA with TMA or cp.async copies, producer warps), split-K and
// tiling knob gives, and the refusals of what a kernel cannot do. The tool
// itself (flags, outputs, launchers run against a stand-in driver) is
// test_aot.cpp's.

#include "AotTool.h"

using namespace aot_testing;

TEST_CASE("gemm: PTX that ptxas accepts, a documented header, a launcher that needs only the driver") {
  TempDir dir;
  Result result = aot("--name=gemm_bias_gelu --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(dir.entries() ==
        std::vector<std::string>{"gemm_bias_gelu.cpp", "gemm_bias_gelu.h", "gemm_bias_gelu.ptx"});

  std::string header = read_file(dir / "gemm_bias_gelu.h");
  CHECK(header.find("CUresult gemm_bias_gelu(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, "
                    "CUdeviceptr out,") != std::string::npos);
  CHECK(header.find("int M, int N, int K, CUstream stream);") != std::string::npos);
  CHECK(header.find("const char *gemm_bias_gelu_error_message(void);") != std::string::npos);
  for (const char *doc : {"row-major", "A    input  f32 [M][K]", "out  output f32 [M][N]",
                          "M    passed at run time", "grid (ceil(N/128), ceil(M/128), 1)",
                          "(16, 16, 1) threads", "Target: sm_90a", "g++ -std=c++17",
                          "--activation=gelu", "--bias=true"}) {
    INFO(std::string(doc));
    CHECK(header.find(doc) != std::string::npos);
  }

  // The launcher includes its header, the standard library and nothing else.
  std::string launcher = read_file(dir / "gemm_bias_gelu.cpp");
  std::istringstream lines(launcher);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("#include", 0) == 0) {
      INFO(line);
      CHECK((line == "#include \"gemm_bias_gelu.h\"" || line == "#include <algorithm>" ||
             line == "#include <cstdint>" || line == "#include <mutex>" ||
             line == "#include <string>"));
    }
  CHECK(launcher.find("cuLibraryLoadData") != std::string::npos);

  std::string ptx = read_file(dir / "gemm_bias_gelu.ptx");
  CHECK(ptx.find(".target sm_90a") != std::string::npos);
  if (can_assemble()) {
    PtxasResult assembled = assemble_ptx(ptx, parse_gpu_target("sm_90a"));
    REQUIRE(assembled.find("gemm_bias_gelu") != nullptr);
    CHECK(!assembled.find("gemm_bias_gelu")->spills());
  }
  if (can_compile_launchers())
    check_launcher_builds(dir, "gemm_bias_gelu", "gemm_bias_gelu(0, 0, 0, 0, 1, 1, 1, 0)");
}

TEST_CASE("gemm: sizes given when generating are constants the launcher checks") {
  TempDir dir;
  Result result = aot("--M=1000 --N=512 --K=256 --bias=false --activation=relu --target=sm_80 "
                      "--name=gemm_relu --output-dir=generated",
                      dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(result.out.find("wrote generated/gemm_relu.h") != std::string::npos);
  std::string header = read_file(dir / "generated/gemm_relu.h");
  CHECK(header.find("CUresult gemm_relu(CUdeviceptr A, CUdeviceptr B, CUdeviceptr out,") !=
        std::string::npos);
  CHECK(header.find("int M, int N, int K, CUstream stream);") != std::string::npos);
  CHECK(header.find("fixed at 1000 (any other value is rejected)") != std::string::npos);
  CHECK(header.find("grid (8, 16, 1)") != std::string::npos);
  CHECK(header.find("CUdeviceptr bias") == std::string::npos);
  std::string launcher = read_file(dir / "generated/gemm_relu.cpp");
  CHECK(launcher.find("if (K != 256)") != std::string::npos);
  CHECK(launcher.find("void *params_[] = {&A, &B, &out};") != std::string::npos);

  std::string ptx = read_file(dir / "generated/gemm_relu.ptx");
  CHECK(ptx.find(".target sm_80") != std::string::npos);
  CHECK(ptx.find(".param .u32") == std::string::npos); // no run-time sizes
  if (can_assemble())
    CHECK(assemble_ptx(ptx, parse_gpu_target("sm_80")).find("gemm_relu") != nullptr);
  if (can_compile_launchers()) {
    TempDir build;
    for (const char *file : {"gemm_relu.h", "gemm_relu.cpp"})
      fs::copy_file(dir / (std::string("generated/") + file), build / file);
    check_launcher_builds(build, "gemm_relu", "gemm_relu(0, 0, 0, 1000, 512, 256, 0)");
  }
}

TEST_CASE("gemm: every activation, with and without bias, and a larger tile assemble") {
  const bool assemble = can_assemble();
  for (const char *activation : {"none", "relu", "gelu", "gelu_tanh", "sigmoid", "silu"})
    for (const char *bias : {"true", "false"}) {
      TempDir dir;
      std::string args = std::string("--emit=ptx --activation=") + activation + " --bias=" + bias;
      Result result = aot(args, dir.path);
      INFO(args, "\n", result.err);
      REQUIRE(result.status == 0);
      CHECK(result.out.find(".entry coalesce_gemm(") != std::string::npos);
      CHECK(dir.entries().empty());
      if (assemble)
        CHECK(assemble_ptx(result.out, parse_gpu_target("sm_90a")).find("gemm") != nullptr);
    }
  TempDir dir;
  Result large = aot("--emit=header --tile-m=128 --tile-n=128 --reg-m=8 --reg-n=8", dir.path);
  INFO(large.err);
  CHECK(large.status == 0);
  CHECK(large.out.find("grid (ceil(N/128), ceil(M/128), 1) blocks of (16, 16, 1) threads") !=
        std::string::npos);
}

TEST_CASE("gemm: --dtype and --out-dtype type the buffers, the PTX and the launcher's signature") {
  const bool assemble = can_assemble();
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --mma=warp --name=gemm_bf16 --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "gemm_bf16.h");
  // A 16-bit buffer's pointer is a CUdeviceptr typedef named for what it holds.
  CHECK(header.find("typedef CUdeviceptr coalesce_bf16_deviceptr;") != std::string::npos);
  CHECK(header.find("CUresult gemm_bf16(coalesce_bf16_deviceptr A, coalesce_bf16_deviceptr B, CUdeviceptr bias, "
                    "coalesce_bf16_deviceptr out,") != std::string::npos);
  for (const char *doc : {"A    input  bf16 [M][K]", "B    input  bf16 [K][N]", "bias input  f32 [N]",
                          "out  output bf16 [M][N]", "--dtype=bf16", "--out-dtype=bf16"})
    CHECK_MESSAGE(header.find(doc) != std::string::npos, "the header lacks: " << doc);
  std::string ptx = read_file(dir / "gemm_bf16.ptx");
  CHECK(ptx.find("cvt.rn.bf16.f32") != std::string::npos);
  // bf16 inputs run on tensor cores: fragments by ldmatrix, 16-byte copies.
  CHECK(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
  CHECK(ptx.find("ldmatrix.sync.aligned.m8n8.x4") != std::string::npos);
  CHECK(ptx.find("cp.async.cg.shared.global") != std::string::npos);
  if (assemble)
    CHECK(assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_bf16") != nullptr);
  if (have_program("g++"))
    check_launcher_builds(dir, "gemm_bf16", "gemm_bf16(0, 0, 0, 0, 1, 1, 1, 0)");

  Result f16 = aot("--emit=ptx,header --dtype=f16 --out-dtype=f16 --target=sm_80 --name=gemm_f16 --output-dir=.",
                   dir.path);
  INFO(f16.err);
  REQUIRE(f16.status == 0);
  std::string f16_ptx = read_file(dir / "gemm_f16.ptx");
  CHECK(f16_ptx.find("cvt.rn.f16.f32") != std::string::npos);
  CHECK(read_file(dir / "gemm_f16.h").find("coalesce_f16_deviceptr A") != std::string::npos);
  if (assemble)
    CHECK(assemble_ptx(f16_ptx, parse_gpu_target("sm_80")).find("gemm_f16") != nullptr);

  // tf32: f32 buffers, multiplied on tf32 tensor cores.
  Result tf32 = aot("--emit=ptx,header --dtype=tf32 --mma=warp --name=gemm_tf32 --output-dir=.", dir.path);
  INFO(tf32.err);
  REQUIRE(tf32.status == 0);
  std::string tf32_ptx = read_file(dir / "gemm_tf32.ptx");
  CHECK(tf32_ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(tf32_ptx.find("cvt.rna.tf32.f32") != std::string::npos);
  CHECK(read_file(dir / "gemm_tf32.h").find("CUresult gemm_tf32(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, "
                                            "CUdeviceptr out,") != std::string::npos);
  if (assemble)
    CHECK(assemble_ptx(tf32_ptx, parse_gpu_target("sm_90a")).find("gemm_tf32") != nullptr);

  // tf32 with few rows: --mma=auto takes the warp MMA on sm_90a too (no
  // copies of A and B made first); with many, the warpgroup MMA.
  Result few = aot("--emit=ptx --dtype=tf32 -M 16 -N 256 -K 64 --name=gemm_tf32_few --output-dir=.", dir.path);
  INFO(few.err);
  REQUIRE(few.status == 0);
  std::string few_ptx = read_file(dir / "gemm_tf32_few.ptx");
  CHECK(few_ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(few_ptx.find("wgmma.mma_async") == std::string::npos);
  Result many = aot("--emit=ptx --dtype=tf32 -M 129 -N 256 -K 64 --name=gemm_tf32_many --output-dir=.", dir.path);
  INFO(many.err);
  REQUIRE(many.status == 0);
  CHECK(read_file(dir / "gemm_tf32_many.ptx").find("wgmma.mma_async") != std::string::npos);

  // Mixed: 16-bit inputs, f32 output; the f32 default keeps CUdeviceptr.
  Result mixed = aot("--emit=header --dtype=f16", dir.path);
  CHECK(mixed.out.find("coalesce_f16_deviceptr A, coalesce_f16_deviceptr B, CUdeviceptr bias, CUdeviceptr out")
        != std::string::npos);
  Result plain = aot("--emit=header", dir.path);
  CHECK(plain.out.find("CUresult gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr out,") !=
        std::string::npos);
  CHECK(plain.out.find("typedef") == std::string::npos);
}

TEST_CASE("gemm: the default --mma=auto is the benchmark's instruction: warpgroup on sm_90a, warp elsewhere") {
  TempDir dir;
  for (const char *dtype : {"bf16", "f16", "tf32"}) {
    CAPTURE(dtype);
    Result hopper = aot(std::string("--emit=ptx --dtype=") + dtype, dir.path);
    INFO(hopper.err);
    REQUIRE(hopper.status == 0);
    CHECK(hopper.out.find("wgmma.mma_async") != std::string::npos);
    CHECK(hopper.out.find("cp.async.bulk.tensor.2d") != std::string::npos); // the TMA's copies
    Result ampere = aot(std::string("--emit=ptx --target=sm_80 --dtype=") + dtype, dir.path);
    REQUIRE(ampere.status == 0);
    CHECK(ampere.out.find("wgmma") == std::string::npos);
    CHECK(ampere.out.find("mma.sync.aligned") != std::string::npos);
  }
  // f32 stays on FFMA, and --help says what auto means.
  Result f32 = aot("--emit=ptx", dir.path);
  REQUIRE(f32.status == 0);
  CHECK(f32.out.find("mma.sync") == std::string::npos);
  CHECK(f32.out.find("wgmma") == std::string::npos);
  Result help = aot("--help", dir.path);
  CHECK(help.out.find("auto (the default)") != std::string::npos);
}

TEST_CASE("gemm: a kernel over 48 KiB of shared memory takes it dynamically, and its launcher opts in") {
  // 4 stages of a 128 x 128 bf16 tile, k step 32: 4 x 18,944 bytes (the
  // output stored directly: no staged tile beside them).
  TempDir dir;
  Result result =
      aot("--dtype=bf16 --out-dtype=bf16 --mma=warp --stages=4 --tile-stores=direct --name=gemm_deep --output-dir=.",
          dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string launcher = read_file(dir / "gemm_deep.cpp");
  CHECK(launcher.find("const int kDynamicShared[kKernels] = {75776};") != std::string::npos);
  CHECK(launcher.find("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES") != std::string::npos);
  CHECK(launcher.find(", 75776, stream, params_, nullptr);") != std::string::npos);
  std::string ptx = read_file(dir / "gemm_deep.ptx");
  CHECK(ptx.find(".extern .shared .align 16 .b8") != std::string::npos);
  CHECK(ptx.find("cp.async.wait_group \t2;") != std::string::npos); // stages - 2 groups left in flight
  if (can_assemble()) {
    const KernelResources *kernel = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_deep");
    REQUIRE(kernel != nullptr);
    CHECK(kernel->shared_bytes == 0); // no static tiles: all of it is dynamic
    CHECK_FALSE(kernel->spills());
  }
  if (have_program("g++"))
    check_launcher_builds(dir, "gemm_deep", "gemm_deep(0, 0, 0, 0, 1, 1, 1, 0)");
  // Two stages fit in 48 KiB: static tiles, launched with none.
  Result small =
      aot("--dtype=bf16 --out-dtype=bf16 --mma=warp --stages=2 --tile-stores=direct --name=gemm_small --output-dir=.",
          dir.path);
  REQUIRE(small.status == 0);
  std::string small_launcher = read_file(dir / "gemm_small.cpp");
  CHECK(small_launcher.find("const int kDynamicShared[kKernels] = {0};") != std::string::npos);
  CHECK(small_launcher.find("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES") == std::string::npos);
}

TEST_CASE("gemm: --mma=warpgroup writes a wgmma kernel with 1024-byte aligned dynamic tiles; f32 is refused") {
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --name=gemm_wg --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string ptx = read_file(dir / "gemm_wg.ptx");
  CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
  CHECK(ptx.find(".extern .shared .align 1024 .b8") != std::string::npos);
  std::string launcher = read_file(dir / "gemm_wg.cpp");
  // 4 stages of a 128 x 64 A tile and a 64 x 256 B tile, bf16 (the default
  // 128 x 256 tiling at 4096^3), the TMA's barriers at the next 1024-byte
  // boundary; the 128 x 264 output tile (gpu_tile_stores) takes the
  // slots' bytes after the main loop (SharedTileLayout.h).
  CHECK(launcher.find("const int kDynamicShared[kKernels] = {197632};") != std::string::npos);
  // The tensor maps: encoded for the call's pointers and sizes, passed after the arguments.
  CHECK(ptx.find("cp.async.bulk.tensor.2d.shared::cluster.global.tile") != std::string::npos);
  CHECK(launcher.find("cuTensorMapEncodeTiled(&map0_0_.map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2") != std::string::npos);
  CHECK(launcher.find("const cuuint32_t box[2] = {64, 128};") != std::string::npos);
  CHECK(launcher.find("&map0_0_.map, &map0_1_.map};") != std::string::npos);
  CHECK(launcher.find("A is not 16-byte aligned") != std::string::npos);
  // The output's tiles are stored in 16-byte vectors (gpu_tile_stores).
  CHECK(launcher.find("out is not 16-byte aligned; the kernel accesses it in 16-byte vectors") != std::string::npos);
  {
    // --tma=false: every thread's cp.async copies, no tensor maps.
    TempDir plain;
    Result copies = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --tma=false --name=gemm_cp --output-dir=.",
                        plain.path);
    REQUIRE(copies.status == 0);
    CHECK(read_file(plain / "gemm_cp.cpp").find("cuTensorMapEncodeTiled") == std::string::npos);
    CHECK(read_file(plain / "gemm_cp.cpp").find("const int kDynamicShared[kKernels] = {196608};") != std::string::npos);
  }
  if (can_assemble()) {
    const KernelResources *kernel = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_wg");
    REQUIRE(kernel != nullptr);
    CHECK_FALSE(kernel->spills());
  }
  check_refused("--dtype=f32 --mma=warpgroup", "has no warpgroup schedule");
}

TEST_CASE("gemm: --producer-warps gives the TMA copies warps of their own; without the TMA it is refused") {
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --producer-warps=1 --name=gemm_ws --output-dir=.",
                      dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string ptx = read_file(dir / "gemm_ws.ptx");
  CHECK(ptx.find("mbarrier.arrive.shared::cta.b64") != std::string::npos);
  CHECK(ptx.find(".maxntid 32, 9, 1") != std::string::npos);
  // The launch: eight MMA warps and the producer warp.
  CHECK(read_file(dir / "gemm_ws.cpp").find("32, 9, 1, ") != std::string::npos);
  for (const char *flags : {"--dtype=bf16 --mma=warp --producer-warps=1", "--dtype=bf16 --mma=warpgroup --tma=false --producer-warps=1"})
    check_refused(flags, "producer warps issue the TMA's copies");
}

TEST_CASE("gemm: --producer-registers and --persistent-blocks reach the warpgroup schedule; misuse is refused") {
  TempDir dir;
  Result realloc = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --producer-warps=4 --producer-registers=40 "
                       "--name=gemm_regs --output-dir=.",
                       dir.path);
  INFO(realloc.err);
  REQUIRE(realloc.status == 0);
  std::string ptx = read_file(dir / "gemm_regs.ptx");
  CHECK(ptx.find("setmaxnreg.dec.sync.aligned.u32 \t40;") != std::string::npos);
  CHECK(ptx.find("setmaxnreg.inc.sync.aligned.u32 \t232;") != std::string::npos);
  // The persistent grid: the launcher sizes it as the kernel's loop does.
  Result persistent =
      aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --persistent-blocks=132 --name=gemm_p --output-dir=.",
          dir.path);
  INFO(persistent.err);
  REQUIRE(persistent.status == 0);
  CHECK(read_file(dir / "gemm_p.cpp").find("std::min(") != std::string::npos);
  check_refused("--dtype=bf16 --mma=warpgroup --producer-warps=1 --producer-registers=40",
                "registers are reallocated per warpgroup, so it takes --producer-warps=4");
  check_refused("--persistent-blocks=8", "persistent grids are offered for the tensor-core schedules");
}

TEST_CASE("gemm: --cluster-blocks runs block rows in clusters sharing B's TMA copies; misuse is refused") {
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --cluster-blocks=2 --name=gemm_cl --output-dir=.",
                      dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string ptx = read_file(dir / "gemm_cl.ptx");
  CHECK(ptx.find(".reqnctapercluster 1, 2, 1") != std::string::npos);
  CHECK(ptx.find("multicast::cluster") != std::string::npos);
  // B's tensor map has boxes of half the rows: each block copies its half.
  std::string launcher = read_file(dir / "gemm_cl.cpp");
  CHECK(launcher.find("tensor map of B (boxes of 32 x 64") != std::string::npos);
  if (can_assemble()) {
    const KernelResources *kernel = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_cl");
    REQUIRE(kernel != nullptr);
    CHECK_FALSE(kernel->spills());
  }
  check_refused("--dtype=bf16 --mma=warpgroup --tma=false --cluster-blocks=2",
                "clusters share the TMA's copies of B, which this kernel does not use");
  check_refused("--dtype=bf16 --mma=warpgroup --cluster-blocks=1", "a cluster has 2 to 8 blocks");
  check_refused("--cluster-blocks=2", "only the warpgroup schedule has");
  // On a persistent grid the clusters walk the tiles together, along the
  // grid's one dimension; the grid is whole clusters.
  Result persistent = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --cluster-blocks=2 --persistent-blocks=132 "
                          "--producer-warps=4 --name=gemm_pc --output-dir=.",
                          dir.path);
  INFO(persistent.err);
  REQUIRE(persistent.status == 0);
  CHECK(read_file(dir / "gemm_pc.ptx").find(".reqnctapercluster 2, 1, 1") != std::string::npos);
  check_refused("--dtype=bf16 --mma=warpgroup --cluster-blocks=2 --persistent-blocks=131",
                "gpu_persistent_blocks(131): the grid's blocks walk the tiles by whole clusters, so it must be a "
                "multiple of 2 blocks; use gpu_persistent_blocks(130)");
}

TEST_CASE("gemm: fixed sizes whose B rows split the L2's sectors copy B alone; a view's rows are left alone") {
  // N = 3000 bf16: rows of 6,000 bytes, read by 40 block rows at M = 5000.
  TempDir dir;
  Result result = aot(
      "--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --name=gemm_b --output-dir=. -M=5000 -N=3000 -K=2000", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string launcher = read_file(dir / "gemm_b.cpp");
  CHECK(launcher.find("constexpr int kKernels = 2;") != std::string::npos);
  std::string ptx = read_file(dir / "gemm_b.ptx");
  CHECK(ptx.find(".entry coalesce_gemm_b_B_padded(") != std::string::npos);
  CHECK(ptx.find("A_padded") == std::string::npos);
  // B a view: its rows lie --ldb apart, which the rule does not read.
  TempDir views;
  Result view =
      aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --name=gemm_v --output-dir=. -M=5000 -N=3000 -K=2000 "
          "--views=b",
          views.path);
  INFO(view.err);
  REQUIRE(view.status == 0);
  CHECK(read_file(views / "gemm_v.cpp").find("constexpr int kKernels = 1;") != std::string::npos);
}

TEST_CASE("gemm: ragged rows get padded copies the TMA reads, kernels of their own, in the caller's workspace") {
  // --K=4097 fixed: A's rows are not whole 16 bytes, so the copies are on
  // by themselves; with run-time sizes, --tma-padded-copies asks for them.
  for (const char *flags : {"--K=4097", "--tma-padded-copies"}) {
    TempDir dir;
    Result result = aot(std::string("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --name=gemm_pad --output-dir=. ") +
                            flags,
                        dir.path);
    INFO(flags, "\n", result.err);
    REQUIRE(result.status == 0);
    std::string header = read_file(dir / "gemm_pad.h");
    CHECK(header.find("CUdeviceptr workspace, CUstream stream);") != std::string::npos);
    CHECK(header.find("size_t gemm_pad_workspace_bytes(") != std::string::npos);
    CHECK(header.find("kernel 'gemm_pad_A_padded'") != std::string::npos);
    std::string launcher = read_file(dir / "gemm_pad.cpp");
    CHECK(launcher.find("constexpr int kKernels = 3;") != std::string::npos);
    // The output's kernel reads the copies: its tensor maps are on the workspace.
    CHECK(launcher.find("reinterpret_cast<void *>(workspace0_), dims") != std::string::npos);
    CHECK(launcher.find("reinterpret_cast<void *>(workspace1_), dims") != std::string::npos);
    std::string ptx = read_file(dir / "gemm_pad.ptx");
    CHECK(ptx.find(".entry coalesce_gemm_pad_A_padded(") != std::string::npos);
    CHECK(ptx.find("cp.async.bulk.tensor.2d") != std::string::npos);
    if (can_assemble())
      for (const char *kernel : {"gemm_pad", "gemm_pad_A_padded", "gemm_pad_B_padded"}) {
        const KernelResources *assembled = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find(kernel);
        REQUIRE(assembled != nullptr);
        CHECK_FALSE(assembled->spills());
      }
  }
  check_refused("--dtype=bf16 --mma=warp --tma-padded-copies", "the padded copies are what the TMA reads");
}

TEST_CASE("gemm: --dtype=tf32 --mma=warpgroup writes a tf32 wgmma kernel fed by the TMA from rounded copies") {
  {
    TempDir dir;
    Result result = aot("--dtype=tf32 --mma=warpgroup --name=gemm_tf32_wg --output-dir=.", dir.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    std::string ptx = read_file(dir / "gemm_tf32_wg.ptx");
    CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32") != std::string::npos);
    CHECK(ptx.find("cp.async.bulk.tensor.2d") != std::string::npos);
    // The copies of A and B (rounded to tf32, B transposed) are kernels of
    // their own, in the caller's workspace, and the tensor maps read them.
    std::string header = read_file(dir / "gemm_tf32_wg.h");
    CHECK(header.find("CUdeviceptr workspace, CUstream stream);") != std::string::npos);
    CHECK(header.find("kernel 'gemm_tf32_wg_B_padded'") != std::string::npos);
    std::string launcher = read_file(dir / "gemm_tf32_wg.cpp");
    CHECK(launcher.find("constexpr int kKernels = 3;") != std::string::npos);
    CHECK(launcher.find("reinterpret_cast<void *>(workspace0_), dims") != std::string::npos);
    CHECK(launcher.find("reinterpret_cast<void *>(workspace1_), dims") != std::string::npos);
    CHECK(launcher.find("CU_TENSOR_MAP_DATA_TYPE_FLOAT32") != std::string::npos);
    if (can_assemble())
      for (const char *kernel : {"gemm_tf32_wg", "gemm_tf32_wg_A_padded", "gemm_tf32_wg_B_padded"}) {
        INFO(kernel);
        const KernelResources *assembled = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find(kernel);
        REQUIRE(assembled != nullptr);
        CHECK_FALSE(assembled->spills());
      }
  }
  {
    // --tma=false: every thread's cp.async copies (B transposed element by
    // element, rounded in shared memory), on 128 x 128 tiles.
    TempDir dir;
    Result result = aot("--dtype=tf32 --mma=warpgroup --tma=false --tile-m=128 --tile-n=128 --warp-m=64 "
                        "--warp-n=128 --stages=3 --min-blocks-per-sm=1 --name=gemm_tf32_wg --output-dir=.",
                        dir.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    std::string ptx = read_file(dir / "gemm_tf32_wg.ptx");
    CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") != std::string::npos);
    CHECK(ptx.find("cp.async.bulk.tensor") == std::string::npos);
    std::string launcher = read_file(dir / "gemm_tf32_wg.cpp");
    // 3 stages of a 128 x 32 A tile and B's 32 x 128 tile stored as 128 x 32, f32.
    CHECK(launcher.find("const int kDynamicShared[kKernels] = {98304};") != std::string::npos);
    CHECK(launcher.find("cuTensorMapEncodeTiled") == std::string::npos);
    if (can_assemble()) {
      const KernelResources *kernel = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_tf32_wg");
      REQUIRE(kernel != nullptr);
      CHECK_FALSE(kernel->spills());
    }
  }
  check_refused("--dtype=tf32 --mma=warpgroup --tma-padded-copies=false",
                "the tf32 warpgroup MMA reads A and B rounded to tf32 and B transposed, which only the copies make");
}

TEST_CASE("gemm: --split-k gives a launcher that takes the caller's workspace and says how large it is") {
  TempDir dir;
  Result result = aot("--split-k=3 --tile-m=64 --tile-n=64 --reg-m=4 --reg-n=4 --name=gemm_split --output-dir=.",
                      dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "gemm_split.h");
  CHECK(header.find("int M, int N, int K, CUdeviceptr workspace, CUstream stream);") != std::string::npos);
  CHECK(header.find("size_t gemm_split_workspace_bytes(int M, int N, int K);") != std::string::npos);
  CHECK(header.find("zeroed once") != std::string::npos);
  CHECK(header.find("grid (ceil(N/64), ceil(M/64), 3)") != std::string::npos);
  std::string launcher = read_file(dir / "gemm_split.cpp");
  CHECK(launcher.find("workspace is a null pointer") != std::string::npos);
  std::string ptx = read_file(dir / "gemm_split.ptx");
  CHECK(ptx.find("fence.acq_rel.gpu") != std::string::npos);
  if (can_assemble())
    CHECK_FALSE(assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_split")->spills());
  if (can_compile_launchers())
    check_launcher_builds(dir, "gemm_split", "gemm_split(0, 0, 0, 0, 1, 1, 1, 0, 0)");
  // Atomic slices and tensor cores take a workspace too.
  Result bf16 = aot("--dtype=bf16 --split-k=2 --split-k-mode=atomic --name=gemm_split_bf16 --output-dir=.", dir.path);
  INFO(bf16.err);
  REQUIRE(bf16.status == 0);
  CHECK(read_file(dir / "gemm_split_bf16.h").find("gemm_split_bf16_workspace_bytes") != std::string::npos);
  // 0 chooses from the shape, which must then be known.
  Result unknown = aot("--split-k=0 --emit=loops", dir.path);
  CHECK(unknown.status == 1);
  CHECK(unknown.contains("give --M, --N and --K"));
  Result chosen = aot("--split-k=0 --M=16 --N=4096 --K=4096 --emit=loops", dir.path);
  CHECK(chosen.status == 0);
  CHECK(chosen.contains("for kz in gpu_block.z"));
  Result unsplit = aot("--split-k=0 --M=4096 --N=4096 --K=4096 --emit=loops", dir.path);
  CHECK(unsplit.status == 0);
  CHECK_FALSE(unsplit.contains("gpu_block.z"));
}

TEST_CASE("gemm: --stages and --warp-layout reach the FFMA schedule's knobs") {
  TempDir dir;
  Result pipelined = aot("--stages=3 --warp-layout=4x8 --emit=loops", dir.path);
  INFO(pipelined.err);
  REQUIRE(pipelined.status == 0);
  CHECK(pipelined.contains("allocate A_shared[3]"));
  CHECK(pipelined.contains("for warp in gpu_thread.y(0, 8)"));
  CHECK(pipelined.contains("for lane in gpu_thread.x(0, 32)"));
  Result one_tile = aot("--stages=1 --emit=loops", dir.path);
  REQUIRE(one_tile.status == 0);
  CHECK_FALSE(one_tile.contains("A_shared[2]"));
  CHECK(one_tile.contains("for ti in gpu_thread.y"));
}

TEST_CASE("gemm: --block-groups and --min-blocks-per-sm reach the schedule's knobs") {
  TempDir dir;
  Result grouped = aot("--block-groups=4 --emit=loops", dir.path);
  INFO(grouped.err);
  CHECK(grouped.status == 0);
  CHECK(grouped.contains("for bi_grouped in gpu_block.y"));
  Result one_block = aot("--dtype=bf16 --min-blocks-per-sm=1 --name=one --output-dir=.", dir.path);
  INFO(one_block.err);
  REQUIRE(one_block.status == 0);
  CHECK(read_file(dir / "one.ptx").find(".minnctapersm 1") != std::string::npos);
  Result ffma = aot("--min-blocks-per-sm=1 --emit=loops", dir.path);
  CHECK(ffma.status == 1);
  CHECK(ffma.contains("leave the flag out for --dtype=f32"));
}

TEST_CASE("gemm: every knob of GemmTiling and MmaTiling has a flag: buffering, copies, padding, the SM count") {
  TempDir dir;
  auto loops = [&](const std::string &flags) {
    Result result = aot(flags + " --emit=loops", dir.path);
    INFO(flags, "\n", result.err);
    CHECK(result.status == 0);
    return result.out;
  };
  auto contains = [](const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; };
  // f32: the defaults, then one buffer, copies through registers, A unpadded.
  CHECK(contains(loops(""), "allocate A_shared[2][8][132] f32 in shared"));
  CHECK(contains(loops("--double-buffered=false --a-padding=0"), "allocate A_shared[8][128] f32 in shared"));
  CHECK(contains(loops("--async-copy=false"), "allocate A_fetch["));
  // Tensor cores: both paddings, one buffer (and so no deeper pipeline).
  CHECK(contains(loops("--dtype=bf16 --mma=warp --a-padding=16 --b-padding=0"), "allocate A_shared[3][128][48] bf16 in shared"));
  CHECK(contains(loops("--dtype=bf16 --mma=warp --a-padding=16 --b-padding=0"), "allocate B_shared[3][32][128] bf16 in shared"));
  CHECK(contains(loops("--dtype=bf16 --mma=warp --double-buffered=false"), "allocate A_shared[128][40] bf16 in shared"));
  // The shape-aware tile fills --sm-count multiprocessors, by default the
  // target's: 1024 x 1024 is 32 tiles of 128 x 256, fewer than an H200's
  // 132 multiprocessors (so 128 x 64 tiles, 128 of them), enough for 16.
  CHECK(contains(loops("--dtype=bf16 --M=1024 --N=1024"), "for bj in gpu_block.x(0, 16)"));
  CHECK(contains(loops("--dtype=bf16 --M=1024 --N=1024 --sm-count=16"), "for bj in gpu_block.x(0, 4)"));
  CHECK(contains(loops("--dtype=bf16 --M=1024 --N=1024 --target=sm_89"), "for bi in gpu_block.y(0, 8)"));
  // Flags a schedule has no knob for are refused, naming the way out.
  Result async = aot("--dtype=bf16 --async-copy=false --emit=loops", dir.path);
  CHECK(async.status == 1);
  CHECK(async.contains("the tensor-core schedules copy A and B with cp.async only"));
  Result b_padding = aot("--b-padding=4 --emit=loops", dir.path);
  CHECK(b_padding.status == 1);
  CHECK(b_padding.contains("leave the flag out for --dtype=f32"));
  Result deep = aot("--dtype=bf16 --double-buffered=false --stages=3 --emit=loops", dir.path);
  CHECK(deep.status == 1);
  CHECK(deep.contains("--stages=3 with --double-buffered=false"));
}

TEST_CASE("gemm: a bad --dtype or --out-dtype is an error that writes nothing") {
  for (const char *flag : {"--dtype=f64", "--out-dtype=int8", "--dtype=", "--out-dtype=BF16"}) {
    TempDir dir;
    Result result = aot(std::string(flag) + " --output-dir=out", dir.path);
    INFO(flag, "\n", result.err);
    CHECK(result.status == 1);
    bool input = std::string(flag).rfind("--dtype", 0) == 0;
    CHECK(result.contains(std::string(flag) + (input ? ": expected one of f32, tf32, tf32-truncated, bf16, f16"
                                                     : ": expected one of f32, bf16, f16")));
    CHECK(dir.entries().empty());
  }
}

TEST_CASE("gemm: --a=km stores A K x M: documented, read MN-major by the warpgroup MMA; misuse is refused") {
  TempDir dir;
  Result header = aot("--dtype=bf16 --out-dtype=bf16 --a=km --emit=header --name=column_major_a", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(header.out.find("A    input  bf16 [K][M]") != std::string::npos);
  CHECK(header.out.find("--a=km") != std::string::npos);
  Result loops = aot("--dtype=bf16 --out-dtype=bf16 --a=km --emit=loops --name=column_major_a", dir.path);
  REQUIRE(loops.status == 0);
  CHECK(loops.out.find("(A: stride 1024 B, mn-major;") != std::string::npos);
  check_refused("--a=km --dtype=e4m3 --b=nk", "the 8-bit warpgroup MMA reads A K-major");
  check_refused("--a=km --dtype=bf16 --epilogue=swiglu", "the SwiGLU's x is stored M x K");
  check_refused("--a=km --dtype=bf16 --autotune", "--a=km with --autotune");
  check_refused("--a=mn --dtype=bf16", "--a=mn: expected one of mk, km");
}
