// The ahead-of-time tool, run as a user runs it: good invocations write
// NAME.ptx (which ptxas accepts), NAME.h and NAME.cpp (which g++ compiles
// and links against the CUDA driver's stub library, without LLVM or
// Coalesce); bad ones exit non-zero, say why, and write nothing. The
// generated launcher is also run against a stand-in driver
// (runtime/aot/testing/fake_driver_check.cpp). The parts that need ptxas or
// g++ skip themselves, saying so, where those are missing.

#include "codegen/GpuTarget.h"
#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace coalesce;

namespace {

const std::string kTool = COALESCE_BINARY_DIR "/runtime/aot/coalesce-aot";
const std::string kExampleTool = COALESCE_BINARY_DIR "/runtime/aot/coalesce-aot-example";
const std::string kAotSources = COALESCE_SOURCE_DIR "/runtime/aot";

/// A fresh, empty directory, removed with its contents at scope exit.
struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "coalesce-aot-test-XXXXXX").string();
    path = mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
    REQUIRE_MESSAGE(!path.empty(), "cannot create a temporary directory");
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  /// The names of what the directory holds, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry &entry : fs::directory_iterator(path))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
  fs::path path;
};

std::string quote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

struct Result {
  int status = -1;
  std::string out, err;
  bool contains(const std::string &text) const {
    return out.find(text) != std::string::npos || err.find(text) != std::string::npos;
  }
};

/// Runs a shell command in `directory`, capturing stdout and stderr
/// (elsewhere, so that `directory` holds only what the command writes).
Result run(const std::string &command, const fs::path &directory) {
  TempDir logs;
  std::string line = "cd " + quote(directory.string()) + " && " + command + " >" +
                     quote(logs / "out") + " 2>" + quote(logs / "err");
  int raw = std::system(line.c_str());
  Result result;
  result.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = read_file(logs / "out");
  result.err = read_file(logs / "err");
  return result;
}

Result run_tool(const std::string &tool, const std::string &args, const fs::path &directory) {
  REQUIRE_MESSAGE(fs::exists(tool), tool, " is missing: build the coalesce-aot targets first");
  return run(quote(tool) + " " + args, directory);
}

Result aot(const std::string &args, const fs::path &directory) {
  return run_tool(kTool, args, directory);
}

bool have_program(const std::string &name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

std::string cuda_include() { return cuda_toolkit_path("include"); }
std::string cuda_stubs() { return cuda_toolkit_path("lib64/stubs"); }

/// g++ and the CUDA headers, to compile a launcher; else says why not.
bool can_compile_launchers() {
  if (!have_program("g++")) {
    MESSAGE("skipped: no g++ to compile the generated launcher");
    return false;
  }
  if (!fs::exists(cuda_include() + "/cuda.h")) {
    MESSAGE("skipped: no ", cuda_include(), "/cuda.h to compile the generated launcher");
    return false;
  }
  return true;
}

/// ptxas, to assemble generated PTX; else says why not.
bool can_assemble() {
  if (!ptxas_available())
    MESSAGE("skipped: no ptxas to assemble the generated PTX");
  return ptxas_available();
}

/// Compiles NAME.cpp (warnings are errors) and links it into a tiny main
/// against the driver's stub library: it builds with the Driver API alone.
void check_launcher_builds(const TempDir &dir, const std::string &name, const std::string &call) {
  Result compiled = run("g++ -std=c++17 -O2 -Wall -Wextra -Werror -c " + name + ".cpp -I" +
                            quote(cuda_include()) + " -o " + name + ".o",
                        dir.path);
  INFO(compiled.err);
  REQUIRE(compiled.status == 0);
  if (!fs::exists(cuda_stubs() + "/libcuda.so")) {
    MESSAGE("skipped linking: no ", cuda_stubs(), "/libcuda.so");
    return;
  }
  write_file(dir / "link_main.cpp",
             "#include \"" + name + ".h\"\nint main() { return " + call + " == CUDA_SUCCESS; }\n");
  Result linked = run("g++ -std=c++17 link_main.cpp " + name + ".o -I" + quote(cuda_include()) +
                          " -L" + quote(cuda_stubs()) + " -lcuda -o link_main",
                      dir.path);
  INFO(linked.err);
  CHECK(linked.status == 0);
}

} // namespace

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
  for (const char *value : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "none|relu|gelu|gelu_tanh",
                            "header", "launcher", "loops", "llvm", "passed at run time"}) {
    INFO(std::string(value));
    CHECK(help.contains(value));
  }
  CHECK(dir.entries().empty());
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
      {"--activation=swish", "--activation=swish: expected one of none, relu, gelu, gelu_tanh"},
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
  for (const char *activation : {"none", "relu", "gelu", "gelu_tanh"})
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
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --name=gemm_bf16 --output-dir=.", dir.path);
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
  Result tf32 = aot("--emit=ptx,header --dtype=tf32 --name=gemm_tf32 --output-dir=.", dir.path);
  INFO(tf32.err);
  REQUIRE(tf32.status == 0);
  std::string tf32_ptx = read_file(dir / "gemm_tf32.ptx");
  CHECK(tf32_ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(tf32_ptx.find("cvt.rna.tf32.f32") != std::string::npos);
  CHECK(read_file(dir / "gemm_tf32.h").find("CUresult gemm_tf32(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, "
                                            "CUdeviceptr out,") != std::string::npos);
  if (assemble)
    CHECK(assemble_ptx(tf32_ptx, parse_gpu_target("sm_90a")).find("gemm_tf32") != nullptr);

  // Mixed: 16-bit inputs, f32 output; the f32 default keeps CUdeviceptr.
  Result mixed = aot("--emit=header --dtype=f16", dir.path);
  CHECK(mixed.out.find("coalesce_f16_deviceptr A, coalesce_f16_deviceptr B, CUdeviceptr bias, CUdeviceptr out")
        != std::string::npos);
  Result plain = aot("--emit=header", dir.path);
  CHECK(plain.out.find("CUresult gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr out,") !=
        std::string::npos);
  CHECK(plain.out.find("typedef") == std::string::npos);
}

TEST_CASE("gemm: a kernel over 48 KiB of shared memory takes it dynamically, and its launcher opts in") {
  // 4 stages of a 128 x 128 bf16 tile, k step 32: 4 x 18,944 bytes.
  TempDir dir;
  Result result = aot("--dtype=bf16 --out-dtype=bf16 --stages=4 --name=gemm_deep --output-dir=.", dir.path);
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
  Result small = aot("--dtype=bf16 --out-dtype=bf16 --stages=2 --name=gemm_small --output-dir=.", dir.path);
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
  CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != std::string::npos);
  CHECK(ptx.find(".extern .shared .align 1024 .b8") != std::string::npos);
  std::string launcher = read_file(dir / "gemm_wg.cpp");
  // 3 stages of a 128 x 64 A tile and a 64 x 128 B tile, bf16, and the
  // TMA's barriers at the next 1024-byte boundary.
  CHECK(launcher.find("const int kDynamicShared[kKernels] = {99328};") != std::string::npos);
  // The tensor maps: encoded for the call's pointers and sizes, passed after the arguments.
  CHECK(ptx.find("cp.async.bulk.tensor.2d.shared::cluster.global.tile") != std::string::npos);
  CHECK(launcher.find("cuTensorMapEncodeTiled(&map0_0_.map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2") != std::string::npos);
  CHECK(launcher.find("const cuuint32_t box[2] = {64, 128};") != std::string::npos);
  CHECK(launcher.find("&map0_0_.map, &map0_1_.map};") != std::string::npos);
  CHECK(launcher.find("A is not 16-byte aligned") != std::string::npos);
  {
    // --tma=false: every thread's cp.async copies, no tensor maps.
    TempDir plain;
    Result copies = aot("--dtype=bf16 --out-dtype=bf16 --mma=warpgroup --tma=false --name=gemm_cp --output-dir=.",
                        plain.path);
    REQUIRE(copies.status == 0);
    CHECK(read_file(plain / "gemm_cp.cpp").find("cuTensorMapEncodeTiled") == std::string::npos);
    CHECK(read_file(plain / "gemm_cp.cpp").find("const int kDynamicShared[kKernels] = {98304};") != std::string::npos);
  }
  if (can_assemble()) {
    const KernelResources *kernel = assemble_ptx(ptx, parse_gpu_target("sm_90a")).find("gemm_wg");
    REQUIRE(kernel != nullptr);
    CHECK_FALSE(kernel->spills());
  }
  {
    TempDir other;
    Result refused = aot("--dtype=f32 --mma=warpgroup --output-dir=.", other.path);
    INFO(refused.err);
    CHECK(refused.status == 1);
    CHECK(refused.contains("has no warpgroup schedule"));
    CHECK(other.entries().empty());
  }
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
  for (const char *flags : {"--dtype=bf16 --producer-warps=1", "--dtype=bf16 --mma=warpgroup --tma=false --producer-warps=1"}) {
    TempDir other;
    Result refused = aot(std::string(flags) + " --output-dir=.", other.path);
    INFO(refused.err);
    CHECK(refused.status == 1);
    CHECK(refused.contains("producer warps issue the TMA's copies"));
    CHECK(other.entries().empty());
  }
}

TEST_CASE("gemm: --dtype=tf32 --mma=warpgroup writes a tf32 wgmma kernel with cp.async copies; --tma=true is refused") {
  TempDir dir;
  Result result = aot("--dtype=tf32 --mma=warpgroup --name=gemm_tf32_wg --output-dir=.", dir.path);
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
  TempDir other;
  Result refused = aot("--dtype=tf32 --mma=warpgroup --tma=true --output-dir=.", other.path);
  INFO(refused.err);
  CHECK(refused.status == 1);
  CHECK(refused.contains("which the TMA cannot copy"));
  CHECK(other.entries().empty());
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
  CHECK(contains(loops("--dtype=bf16 --a-padding=16 --b-padding=0"), "allocate A_shared[3][128][48] bf16 in shared"));
  CHECK(contains(loops("--dtype=bf16 --a-padding=16 --b-padding=0"), "allocate B_shared[3][32][128] bf16 in shared"));
  CHECK(contains(loops("--dtype=bf16 --double-buffered=false"), "allocate A_shared[128][40] bf16 in shared"));
  // The shape-aware tile fills --sm-count multiprocessors, by default the
  // target's: 1024 x 1024 is 64 tiles of 128 x 128, fewer than an H200's
  // 132 multiprocessors (so 64 x 64 tiles), enough for 16.
  CHECK(contains(loops("--dtype=bf16 --M=1024 --N=1024"), "for bi in gpu_block.y(0, 16)"));
  CHECK(contains(loops("--dtype=bf16 --M=1024 --N=1024 --sm-count=16"), "for bi in gpu_block.y(0, 8)"));
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
    CHECK(result.contains(std::string(flag) + (input ? ": expected one of f32, tf32, bf16, f16"
                                                     : ": expected one of f32, bf16, f16")));
    CHECK(dir.entries().empty());
  }
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
  Result built = run("g++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I. -I" +
                         quote(cuda_include()) + " " +
                         quote(kAotSources + "/testing/fake_driver_check.cpp") +
                         " gemm_check.cpp -o fake_driver_check",
                     dir.path);
  INFO(built.err);
  REQUIRE(built.status == 0);
  Result checked = run("./fake_driver_check", dir.path);
  INFO(checked.out);
  CHECK(checked.status == 0);
  CHECK(checked.out.find("launcher checks passed") != std::string::npos);
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

  Result built = run("g++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I. -I" + quote(cuda_include()) + " " +
                         quote(kAotSources + "/testing/fake_driver_cubin.cpp") + " gemm_cubin.cpp -o fake_driver_cubin",
                     dir.path);
  INFO(built.err);
  REQUIRE(built.status == 0);
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
  Result built = run("g++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I. -I" + quote(cuda_include()) + " " +
                         quote(kAotSources + "/testing/fake_driver_two_launchers.cpp") +
                         " gemm_relu_one.cpp gemm_gelu_two.cpp -o two_launchers",
                     dir.path);
  INFO(built.err);
  REQUIRE(built.status == 0);
  Result checked = run("./two_launchers", dir.path);
  INFO(checked.out);
  CHECK(checked.status == 0);
  CHECK(checked.out.find("launcher checks passed") != std::string::npos);
}

TEST_CASE("the launcher accepts K = 0 (out = epilogue(bias)) and empty outputs, and launches nothing for an empty grid") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=gemm_check --bias=true --activation=relu --tile-m=64 --tile-n=64 "
                         "--reg-m=4 --reg-n=4 --output-dir=.",
                         dir.path);
  REQUIRE(generated.status == 0);
  Result built = run("g++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I. -I" + quote(cuda_include()) + " " +
                         quote(kAotSources + "/testing/fake_driver_sizes.cpp") + " gemm_check.cpp -o fake_driver_sizes",
                     dir.path);
  INFO(built.err);
  REQUIRE(built.status == 0);
  Result checked = run("./fake_driver_sizes", dir.path);
  INFO(checked.out);
  CHECK(checked.status == 0);
  CHECK(checked.out.find("launcher size checks passed") != std::string::npos);
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

TEST_CASE("--tuning-db: the recorded tiling, the default with a note, or a clear error") {
  TempDir dir;
  write_file(dir / "db.json", R"({"format": "coalesce-tuning-db", "version": 1, "entries": [
 {"gpu": {"name": "NVIDIA H200", "sm": "sm_90a", "sm_count": 132},
  "problem": {"dtype": "f32", "out_dtype": "f32", "epilogue": "bias_gelu", "M": 1024, "N": 1024, "K": 1024},
  "schedule": {"family": "ffma", "block_m": 64, "block_n": 128, "threads_m": 16, "threads_n": 16, "k_step": 16,
               "double_buffered": true, "async_copy": true, "a_padding": 4, "block_group_rows": 8, "split_k": 1,
               "split_k_mode": "deterministic"},
  "ms": 0.12}]})");
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
}
