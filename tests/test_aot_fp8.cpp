// coalesce-aot's gemm with 8-bit float inputs (--dtype=e4m3|e5m2, --scales):
// PTX that ptxas accepts for sm_90a and a header typing the
// FP8 buffers as one-byte device pointers; a launcher that compiles with
// warnings as errors and passes the stand-in driver's checks
// (runtime/aot/testing/fake_driver_fp8.cpp: sizes and overlaps in bytes,
// the scales checked like the bias, UINT8 tensor maps with rows of K
// bytes); the flags an FP8 GEMM cannot take, refused by name with nothing
// written. The epilogues the flags choose (examples/Fp8Linear.h's forms)
// are checked on the CPU against a double reference.

#include "AotTool.h"
#include "AssembledCleanly.h"
#include "WarpgroupGemms.h"
#include "examples/Fp8Linear.h"

#include <cmath>

using namespace aot_testing;

namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("gemm --dtype=e5m2 generates its files") {
  TempDir dir;
  Result generated = aot("--dtype=e5m2 --b=nk --output-dir=out", dir.path);
  INFO(generated.err);
  CHECK(generated.status == 0);
  CHECK(dir.entries() == std::vector<std::string>{"out"});
}

TEST_CASE("coalesce-aot --help lists the FP8 dtypes and --scales") {
  TempDir dir;
  Result help = aot("--help", dir.path);
  CHECK(help.status == 0);
  for (const char *text : {"--scales=", "none|tensor|row", "f32|tf32|tf32-truncated|bf16|f16|e4m3|e5m2",
                           "accumulator keeps fewer bits than f32"}) {
    INFO(text);
    CHECK(help.contains(text));
  }
}

TEST_CASE("gemm: an FP8 flag combination it cannot take names the flags and writes nothing") {
  struct Bad {
    const char *args;
    const char *message;
  };
  const Bad cases[] = {
      {"--dtype=e4m3 --b=nk --target=sm_80", "--dtype=e4m3 --target=sm_80: sm_80 has no FP8 conversions"},
      {"--dtype=e5m2 --b=nk --target=sm_86", "--dtype=e5m2 --target=sm_86: sm_86 has no FP8 conversions"},
      {"--dtype=e4m3 --b=nk --target=sm_89", "which only sm_90a has: give --target=sm_90a"},
      {"--dtype=e4m3 --b=nk --target=sm_90", "--dtype=e4m3 --target=sm_90: the FP8 GEMM runs on Hopper's 8-bit "
                                             "warpgroup MMA"},
      {"--dtype=e4m3", "--dtype=e4m3 with --b=kn (the default): the 8-bit warpgroup MMA reads both operands K-major"},
      {"--dtype=e5m2 --b=kn", "--dtype=e5m2 with --b=kn: the 8-bit warpgroup MMA"},
      {"--dtype=e4m3 --b=nk --mma=warp", "--dtype=e4m3 --mma=warp: 8-bit floats run on the warpgroup MMA only"},
      {"--dtype=e4m3 --b=nk --k-step=32", "--k-step=32 with --dtype=e4m3: an FP8 k step is a multiple of the "
                                          "instruction's k (32) and at most one 128-byte swizzled row"},
      {"--dtype=e4m3 --b=nk --k-step=64", "give --k-step=128, or leave it out"},
      {"--dtype=e5m2 --b=nk --k-step=100", "--k-step=100 with --dtype=e5m2"},
      {"--dtype=e4m3 --b=nk --k-step=256", "--k-step=256: out of range"},
      {"--dtype=e4m3 --b=nk --residual", "--residual with --dtype=e4m3"},
      {"--dtype=e4m3 --b=nk --M=64 --N=64 --K=64 --tuning-db=db.json", "not --dtype=e4m3: leave them out"},
      {"--dtype=e4m3 --b=nk --warp-layout=4x8", "leave it out for e4m3 and e5m2"},
      {"--dtype=e4m3 --b=nk --scales=rows", "--scales=rows: expected one of none, tensor, row"},
      {"--dtype=e8m0 --b=nk", "--dtype=e8m0: expected one of f32, tf32, tf32-truncated, bf16, f16, e4m3, e5m2"},
      {"--scales=row", "--scales=row scales the sum of 8-bit float inputs: it takes --dtype=e4m3 or e5m2, not "
                       "--dtype=f32"},
      {"--dtype=bf16 --b=nk --scales=tensor", "not --dtype=bf16"},
      {"--dtype=bf16 --k-step=128", "--k-step=128: at most 64 for --dtype=bf16"},
  };
  for (const Bad &bad : cases)
    check_refused(bad.args, bad.message);
}

TEST_CASE("gemm --dtype=e4m3 --scales=row: one-byte buffer typedefs, f32 scales, UINT8 tensor maps, ptxas-clean PTX") {
  TempDir dir;
  Result result = aot("--dtype=e4m3 --b=nk --scales=row --out-dtype=bf16 --name=fp8_row --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(dir.entries() == std::vector<std::string>{"fp8_row.cpp", "fp8_row.h", "fp8_row.ptx"});
  std::string header = read_file(dir / "fp8_row.h");
  for (const char *line : {"typedef CUdeviceptr coalesce_e4m3_deviceptr;", "elements: 1 byte each",
                           "CUresult fp8_row(coalesce_e4m3_deviceptr A, coalesce_e4m3_deviceptr B, CUdeviceptr bias, "
                           "CUdeviceptr scale_a, CUdeviceptr scale_b, coalesce_bf16_deviceptr out,",
                           "//   A       input  e4m3 [M][K]", "//   B       input  e4m3 [N][K]",
                           "//   scale_a input  f32 [M]", "//   scale_b input  f32 [N]", "--dtype=e4m3 --scales=row"}) {
    INFO(line);
    CHECK(has(header, line));
  }
  CHECK_FALSE(has(header, "coalesce_e5m2_deviceptr"));
  std::string launcher = read_file(dir / "fp8_row.cpp");
  CHECK(has(launcher, "cuTensorMapEncodeTiled(&map0_0_.map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2"));
  CHECK(has(launcher, "const cuuint64_t strides[1] = {cuuint64_t(int64_t(K)) * 1};")); // rows of K bytes
  CHECK(has(launcher, "const cuuint32_t box[2] = {128, 128};"));                       // 128 one-byte elements of K
  // Overlaps in bytes: one per element of A, four per scale.
  CHECK(has(launcher, "out < (A + static_cast<CUdeviceptr>(A_elements_) * 1)"));
  CHECK(has(launcher, "out < (scale_a + static_cast<CUdeviceptr>(scale_a_elements_) * 4)"));
  std::string ptx = read_file(dir / "fp8_row.ptx");
  CHECK(has(ptx, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"));
  CHECK(has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile"));
  if (can_assemble())
    coalesce::testing::check_assembled_cleanly(assemble_ptx(ptx, parse_gpu_target("sm_90a")));
  if (can_compile_launchers())
    check_launcher_builds(dir, "fp8_row", "fp8_row(0, 0, 0, 0, 0, 0, 1, 1, 1, 0)");
}

TEST_CASE("gemm --dtype=e5m2: tensor scales are one f32 each, none take no argument; ragged K pads copies") {
  TempDir dir;
  Result tensor = aot("--dtype=e5m2 --b=nk --scales=tensor --bias=false --activation=relu --name=fp8_tensor "
                      "--output-dir=.",
                      dir.path);
  INFO(tensor.err);
  REQUIRE(tensor.status == 0);
  std::string header = read_file(dir / "fp8_tensor.h");
  CHECK(has(header, "CUresult fp8_tensor(coalesce_e5m2_deviceptr A, coalesce_e5m2_deviceptr B, CUdeviceptr scale_a, "
                    "CUdeviceptr scale_b, CUdeviceptr out,"));
  CHECK(has(header, "//   scale_a input  f32 [1]"));
  CHECK(has(header, "typedef CUdeviceptr coalesce_e5m2_deviceptr;"));
  std::string ptx = read_file(dir / "fp8_tensor.ptx");
  CHECK(has(ptx, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2"));
  if (can_assemble())
    coalesce::testing::check_assembled_cleanly(assemble_ptx(ptx, parse_gpu_target("sm_90a")));
  if (can_compile_launchers())
    check_launcher_builds(dir, "fp8_tensor", "fp8_tensor(0, 0, 0, 0, 0, 1, 1, 1, 0)");

  Result none = aot("--dtype=e4m3 --b=nk --emit=header --name=fp8_none", dir.path);
  REQUIRE(none.status == 0);
  CHECK(has(none.out, "CUresult fp8_none(coalesce_e4m3_deviceptr A, coalesce_e4m3_deviceptr B, CUdeviceptr bias, "
                      "CUdeviceptr out,"));
  CHECK_FALSE(has(none.out, "scale_a"));

  // K = 4100: rows of A and B are no 16-byte multiple, so kernels of their
  // own copy them first into the caller's workspace, rows padded.
  TempDir padded;
  Result ragged =
      aot("--dtype=e4m3 --b=nk --scales=row --M=256 --N=512 --K=4100 --name=fp8_pad --output-dir=.", padded.path);
  INFO(ragged.err);
  REQUIRE(ragged.status == 0);
  CHECK(has(read_file(padded / "fp8_pad.h"), "CUdeviceptr workspace, CUstream stream);"));
  std::string launcher = read_file(padded / "fp8_pad.cpp");
  CHECK(has(launcher, "constexpr int kKernels = 3;"));
  CHECK(has(launcher, "CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, reinterpret_cast<void *>(workspace0_)"));
  if (can_assemble())
    coalesce::testing::check_assembled_cleanly(
        assemble_ptx(read_file(padded / "fp8_pad.ptx"), parse_gpu_target("sm_90a")), 3);
}

TEST_CASE("the FP8 launchers pass the stand-in driver's checks: byte sizes, scales, UINT8 tensor maps") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  for (const char *flags : {"--name=gemm_fp8 --dtype=e4m3 --b=nk --scales=row --out-dtype=bf16 --output-dir=.",
                            "--name=gemm_fp8_tensor --dtype=e5m2 --b=nk --scales=tensor --bias=false "
                            "--activation=relu --out-dtype=f32 --K=256 --output-dir=."}) {
    Result generated = aot(flags, dir.path);
    INFO(flags, "\n", generated.err);
    REQUIRE(generated.status == 0);
  }
  check_fake_driver_passes(dir.path, "fake_driver_fp8", "gemm_fp8.cpp gemm_fp8_tensor.cpp",
                           "FP8 launcher checks passed");
}

TEST_CASE("the FP8 forms coalesce-aot generates match a double reference on the CPU (scales, bias, activation)") {
  using examples::Fp8Scales;
  struct Form {
    Fp8Scales scales;
    bool bias;
    const char *activation;
    Type out;
  };
  const Form forms[] = {{Fp8Scales::Tensor, false, "relu", Float(32)},
                        {Fp8Scales::None, true, "identity", Float(32)},
                        {Fp8Scales::Row, true, "silu", BFloat(16)}};
  const int M = 70, N = 72, K = 160;
  for (Type type : {Float8E4M3(), Float8E5M2()})
    for (const Form &f : forms) {
      CAPTURE(type);
      CAPTURE(f.activation);
      examples::Fp8LinearForm form;
      form.w_name = "B";
      form.a_scale_name = "scale_a";
      form.w_scale_name = "scale_b";
      form.scales = f.scales;
      form.bias = f.bias;
      form.activation = f.activation;
      form.out_type = f.out;
      examples::Fp8Linear layer(type, type, form);
      layer.schedule_mma(coalesce::testing::one_tile_tma_tiling(mma_kind_for(type, true)));
      const bool per_row = f.scales == Fp8Scales::Row;
      Buffer A({M, K}, type), B({N, K}, type), scale_a({per_row ? M : 1}), scale_b({per_row ? N : 1}), bias({N}),
          out({M, N}, f.out);
      A.fill_random(21);
      B.fill_random(22);
      bias.fill_random(23);
      for (size_t r = 0; r < scale_a.size(); ++r)
        scale_a.set(r, 0.25f + 0.125f * float(r % 5));
      for (size_t c = 0; c < scale_b.size(); ++c)
        scale_b.set(c, 3.0f - 0.5f * float(c % 3));
      out.poison();
      Arguments args{{"A", A}, {"B", B}, {"M", M}, {"N", N}, {"K", K}};
      if (f.scales != Fp8Scales::None) {
        args.emplace("scale_a", scale_a);
        args.emplace("scale_b", scale_b);
      }
      if (f.bias)
        args.emplace("bias", bias);
      Pipeline(layer.out).realize_on_cpu(args, out);
      double error = 0, norm = 0;
      for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
          double x = 0; // products of 8-bit values are exact in double
          for (int k = 0; k < K; ++k)
            x += double(A.at(r, k)) * double(B.at(c, k));
          if (f.scales != Fp8Scales::None)
            x *= double(scale_a.get(per_row ? size_t(r) : 0)) * double(scale_b.get(per_row ? size_t(c) : 0));
          if (f.bias)
            x += bias.get(size_t(c));
          const std::string act = f.activation;
          double want = act == "relu" ? std::max(x, 0.0) : act == "silu" ? x / (1 + std::exp(-x)) : x;
          double got = out.at(r, c);
          REQUIRE(std::isfinite(got));
          error += (got - want) * (got - want);
          norm += want * want;
        }
      // f32 sums of exact products; a bf16 output rounds once (2^-9).
      CHECK(std::sqrt(error / norm) < (f.out == Float(32) ? 1e-5 : 4e-3));
    }
}

TEST_CASE("the example app's FP8 driver (example_app/fp8_main.cpp) builds against generated FP8 launchers") {
  if (!can_compile_launchers())
    return;
  if (!fs::exists(cuda_stubs() + "/libcuda.so")) {
    MESSAGE("skipped: no ", cuda_stubs(), "/libcuda.so to link the example app against");
    return;
  }
  // As scripts/run_on_gpu.sh builds it on the GPU machine, with each kind of scales.
  for (const char *variant : {"E4M3 ROW --dtype=e4m3 --scales=row", "E5M2 TENSOR --dtype=e5m2 --scales=tensor"}) {
    TempDir dir;
    std::istringstream words(variant);
    std::string dtype, scales, dtype_flag, scales_flag;
    words >> dtype >> scales >> dtype_flag >> scales_flag;
    Result generated =
        aot("--name=gemm_bias_gelu --b=nk --out-dtype=bf16 " + dtype_flag + " " + scales_flag + " --output-dir=.",
            dir.path);
    INFO(variant, "\n", generated.err);
    REQUIRE(generated.status == 0);
    Result built = run("g++ -std=c++17 -O2 -Wall -Wextra -Werror -DCOALESCE_EXAMPLE_DTYPE_" + dtype +
                           " -DCOALESCE_EXAMPLE_SCALES_" + scales + " -I. -I" + quote(cuda_include()) + " " +
                           quote(kAotSources + "/example_app/fp8_main.cpp") + " gemm_bias_gelu.cpp -L" +
                           quote(cuda_stubs()) + " -lcuda -o example_app",
                       dir.path);
    INFO(built.err);
    CHECK(built.status == 0);
    CHECK(fs::exists(dir / "example_app"));
  }
}
