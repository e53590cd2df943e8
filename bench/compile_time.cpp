// coalesce-compile-time: where schedule-to-PTX time goes, for the two kernels
// the project ships as defaults. Each is declared, scheduled and compiled
// from scratch `--runs` times (10 by default), in a fresh Pipeline, with the
// compile cache off; the median of each phase and of the total is printed,
// then the first run's wall time (the process's first compile pays LLVM's
// one-time setup) and a compile that hits the disk cache.
//
//   fp32        make_gemm(BiasGelu), schedule_gemm at default_gemm_tiling(4096^3)
//   bf16        make_gemm(BiasGelu, bf16, bf16), schedule_gemm_mma at
//               default_mma_tiling(BF16_m16n8k16, 4096, 4096)
//   bf16-wgmma  the same on Hopper's warpgroup MMA (BF16_wgmma_m64k16), the
//               kernel the benchmark and coalesce-aot run on sm_90a
//   bf16-wgmma-sums  bf16-wgmma with its sums staged in shared memory and
//               the epilogue computed in the copy-out, a vector per step
//               (TileStores::SumsThroughShared)
//   tf32-wgmma  f32 inputs on the tf32 warpgroup MMA (the TMA reading
//               rounded copies: three kernels)
//   bf16-split-k  bf16-wgmma's default at 512 x 512 x 32768: 128 x 128
//               tiles, K split across blocks, the slices combined by a
//               kernel of its own
//   bf16-decode bf16-wgmma's default for a decode step, 16 x 4096 x 4096
//               with W stored N x K: swap-AB, 8-column tiles, K split
//
// (bf16-wgmma's default stages its sums too since they became the 16-bit
// default: bf16-wgmma-sums is kept as the table's reference row.)
// --kernels=a,b,... measures only those.
// --aligned measures instead the kernels a launch at the kernel's shape
// (4096^3 for the first five) compiles: the program specialized for sizes
// that are multiples of 16
// (scheduler/SpecializeSizes.h; the general one compiles only for a launch
// at other sizes).
// --ragged measures what a launch at a ragged shape near it compiles
// (M - 3 x N - 5 x K + 1: 4093 x 4091 x 4097, the benchmark's ragged row,
// for the first five), with the tiling the default picks
// for that shape (which may copy the inputs first, where the TMA cannot
// read their rows).
// --cpu-check measures instead what checking each kernel on the CPU costs:
// schedule to host code (the checking pipeline, codegen/OptimizeModule.h)
// and one run at 64 x 64 x 64, the "run" phase.
// --ptx-dir=DIR also writes each kernel's PTX there (fp32.ptx, bf16.ptx), to
// compare the code before and after a change to the compiler; --ir-dir=DIR
// the LLVM IR as emitted (NAME.ll, without libdevice) and as optimized
// (NAME.opt.ll), to try other pipelines with opt and llc.

#include "dsl/CompileProfile.h"
#include "dsl/Error.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Gemm.h"
#include "scheduler/SpecializeSizes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace coalesce;
using namespace coalesce::examples;

/// The multiprocessors the default target's GPU has (the tilings fill them).
const int kTargetSms = GpuTarget().sm_count();

struct Kernel {
  const char *name;
  /// The kernel with the default tiling for M x N x K.
  std::function<Func(int64_t M, int64_t N, int64_t K)> build;
  Type in, out; ///< A's and B's element type, out's
  int64_t M = 4096, N = 4096, K = 4096; ///< the shape its tiling is chosen for, and --aligned launches
};

Func fp32_kernel(int64_t M, int64_t N, int64_t K) {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(M, N, K, kTargetSms));
  return g.out;
}

/// The GEMM + bias + GELU of `in` inputs and an `out` output, on tensor
/// cores with tiling `t`.
Func mma_gemm(Type in, Type out, const MmaTiling &t, BLayout b = BLayout::KN) {
  Gemm g = make_gemm(Epilogue::BiasGelu, in, out, b);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g.out;
}

Func bf16_kernel(int64_t M, int64_t N, int64_t) {
  return mma_gemm(BFloat(16), BFloat(16), default_mma_tiling(MmaKind::BF16_m16n8k16, M, N, kTargetSms));
}

Func bf16_wgmma_kernel(int64_t M, int64_t N, int64_t K) {
  return mma_gemm(BFloat(16), BFloat(16), default_mma_tiling(MmaKind::BF16_wgmma_m64k16, M, N, K, kTargetSms));
}

Func bf16_wgmma_sums_kernel(int64_t M, int64_t N, int64_t K) {
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, M, N, K, kTargetSms);
  t.tile_stores = TileStores::SumsThroughShared;
  return mma_gemm(BFloat(16), BFloat(16), t);
}

Func tf32_wgmma_kernel(int64_t M, int64_t N, int64_t K) {
  return mma_gemm(Float(32), Float(32), default_mma_tiling(MmaKind::TF32_wgmma_m64k8, M, N, K, kTargetSms));
}

Func bf16_split_k_kernel(int64_t M, int64_t N, int64_t K) {
  return mma_gemm(BFloat(16), BFloat(16), default_mma_tiling(MmaKind::BF16_wgmma_m64k16, M, N, K, kTargetSms));
}

Func bf16_decode_kernel(int64_t M, int64_t N, int64_t K) {
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, M, N, K, kTargetSms);
  swap_ab_where_rows_are_few(t, M, N, K, kTargetSms);
  return mma_gemm(BFloat(16), BFloat(16), t, BLayout::NK);
}

/// The shape of a CPU check (--cpu-check): small, as a test's.
constexpr int kCheckExtent = 64;

/// Compiles `pipeline` for the host and runs it once on random inputs of
/// kCheckExtent^3 (A and B of type `in`, out of type `out`); the run's own
/// time goes to the phase "run" of the active profile.
void check_on_cpu(Pipeline &pipeline, Type in, Type out_type) {
  const int n = kCheckExtent;
  Buffer A({n, n}, in), B({n, n}, in), bias({n}), out({n, n}, out_type);
  A.fill_random(1);
  B.fill_random(2);
  bias.fill_random(3);
  CompileProfile *profile = active_compile_profile();
  double compile_ms = profile->total_ms(), compile_cpu_ms = profile->total_cpu_ms();
  auto start = std::chrono::steady_clock::now();
  double start_cpu = thread_cpu_ms();
  pipeline.realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", n}, {"N", n}, {"K", n}}, out);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double cpu_ms = thread_cpu_ms() - start_cpu;
  // What the compile phases inside realize_on_cpu did not take.
  profile->add("run", ms - (profile->total_ms() - compile_ms), cpu_ms - (profile->total_cpu_ms() - compile_cpu_ms));
}

/// The names in ",a,b," (empty: none).
std::vector<std::string> split_names(const std::string &list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    if (comma > start)
      names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

/// Wall milliseconds of `work`.
template <typename Work> double wall_ms(Work work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// A compile that hits the disk cache: the kernel declared, scheduled and
/// compiled with the cache on, in a directory of its own, then nine times
/// more, each timed (the key's lowering and hashing, then reading the PTX
/// back): their median; -1 where no temporary directory could be made.
double cache_hit_ms(const std::function<Func()> &build, const GpuTarget &target) {
  char pattern[] = "/tmp/coalesce-compile-time-XXXXXX";
  const char *dir = mkdtemp(pattern);
  if (!dir)
    return -1;
  setenv("COALESCE_CACHE", "1", 1);
  setenv("COALESCE_CACHE_DIR", dir, 1);
  // The first compile fills the cache; the median of the hits after it.
  Pipeline(build()).ptx(target);
  std::vector<double> hits;
  for (int hit = 0; hit < 9; ++hit)
    hits.push_back(wall_ms([&] { Pipeline(build()).ptx(target); }));
  std::sort(hits.begin(), hits.end());
  const double ms = hits[hits.size() / 2];
  setenv("COALESCE_CACHE", "0", 1);
  std::filesystem::remove_all(dir);
  return ms;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char **argv) {
  int runs = 10;
  std::string ptx_dir, ir_dir, only;
  bool cpu_check = false, aligned = false, ragged = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strncmp(argv[a], "--runs=", 7) == 0)
      runs = std::max(1, std::atoi(argv[a] + 7));
    else if (std::strncmp(argv[a], "--kernels=", 10) == 0)
      only = std::string(",") + (argv[a] + 10) + ",";
    else if (std::strncmp(argv[a], "--ptx-dir=", 10) == 0)
      ptx_dir = argv[a] + 10;
    else if (std::strncmp(argv[a], "--ir-dir=", 9) == 0)
      ir_dir = argv[a] + 9;
    else if (std::strcmp(argv[a], "--cpu-check") == 0)
      cpu_check = true;
    else if (std::strcmp(argv[a], "--aligned") == 0)
      aligned = true;
    else if (std::strcmp(argv[a], "--ragged") == 0)
      ragged = true;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--runs=N] [--kernels=fp32,bf16,bf16-wgmma,bf16-wgmma-sums,tf32-wgmma,bf16-split-k,bf16-decode] "
          "[--ptx-dir=DIR] "
          "[--ir-dir=DIR] [--cpu-check] [--aligned | --ragged]\n",
          argv[0]);
      return 2;
    }
  }
  if (aligned && ragged) {
    std::fprintf(stderr, "%s: --aligned and --ragged measure different launches: give one\n", argv[0]);
    return 2;
  }
  // Measure the compiler, not the cache.
  setenv("COALESCE_CACHE", "0", 1);

  const Kernel kernels[] = {{"fp32", fp32_kernel, Float(32), Float(32)},
                            {"bf16", bf16_kernel, BFloat(16), BFloat(16)},
                            {"bf16-wgmma", bf16_wgmma_kernel, BFloat(16), BFloat(16)},
                            {"bf16-wgmma-sums", bf16_wgmma_sums_kernel, BFloat(16), BFloat(16)},
                            {"tf32-wgmma", tf32_wgmma_kernel, Float(32), Float(32)},
                            {"bf16-split-k", bf16_split_k_kernel, BFloat(16), BFloat(16), 512, 512, 32768},
                            {"bf16-decode", bf16_decode_kernel, BFloat(16), BFloat(16), 16, 4096, 4096}};
  for (const std::string &name : split_names(only)) {
    bool known = std::any_of(std::begin(kernels), std::end(kernels), [&](const Kernel &k) { return name == k.name; });
    if (!known) {
      std::fprintf(stderr,
                   "%s: unknown kernel '%s' in --kernels (fp32, bf16, bf16-wgmma, bf16-wgmma-sums, tf32-wgmma, "
                   "bf16-split-k, bf16-decode)\n",
                   argv[0], name.c_str());
      return 2;
    }
  }
  GpuTarget target;
  bool first_in_process = true;
  for (const Kernel &kernel : kernels) {
    if (!only.empty() && only.find(std::string(",") + kernel.name + ",") == std::string::npos)
      continue;
    // The shape the tiling is chosen for, and a launch at it compiles for.
    const int64_t M = ragged ? kernel.M - 3 : kernel.M, N = ragged ? kernel.N - 5 : kernel.N,
                  K = ragged ? kernel.K + 1 : kernel.K;
    const std::function<Func()> build = [&] { return kernel.build(M, N, K); };
    std::vector<std::string> order;
    std::map<std::string, std::vector<double>> samples, cpu_samples;
    std::vector<double> totals, cpu_totals;
    std::string ptx;
    std::vector<double> walls; // each run whole, setup outside the phases included
    for (int run = 0; run < runs; ++run) {
      CompileProfile profile;
      walls.push_back(wall_ms([&] {
        ScopedCompileProfile scope(&profile);
        std::optional<Func> out;
        {
          PhaseTimer schedule("declare and schedule");
          out = build();
        }
        Pipeline pipeline(*out);
        if (cpu_check)
          check_on_cpu(pipeline, kernel.in, kernel.out);
        else if (aligned || ragged) // what a launch at the shape compiles (Pipeline::gpu_executable)
          ptx = pipeline.specialized_ptx(target,
                                         specializable_sizes(pipeline.gpu_program(), {{"M", M}, {"N", N}, {"K", K}}));
        else
          ptx = pipeline.ptx(target);
      }));
      for (const CompileProfile::Phase &phase : profile.phases()) {
        if (!samples.count(phase.name))
          order.push_back(phase.name);
        samples[phase.name].push_back(phase.ms);
        cpu_samples[phase.name].push_back(phase.cpu_ms);
      }
      totals.push_back(profile.total_ms());
      cpu_totals.push_back(profile.total_cpu_ms());
    }
    CompileProfile medians;
    for (const std::string &name : order) {
      std::vector<double> values = samples[name], cpu_values = cpu_samples[name];
      values.resize(runs, 0.0); // a phase absent from a run took no time there
      cpu_values.resize(runs, 0.0);
      medians.add(name, median(values), median(cpu_values));
    }
    if (cpu_check)
      std::printf("%s kernel, checked on the CPU at %d^3 (schedule to host code, then one run), median of %d:\n%s",
                  kernel.name, kCheckExtent, runs, medians.str().c_str());
    else
      std::printf("%s kernel, schedule to PTX for %s%s, median of %d (%zu bytes of PTX):\n%s", kernel.name,
                  target.sm().c_str(),
                  aligned  ? ", specialized for sizes that are multiples of 16"
                  : ragged ? str_cat(", tiled for and launched at ", M, " x ", N, " x ", K).c_str()
                           : "",
                  runs, ptx.size(), medians.str().c_str());
    std::printf("  %-44s %8.2f ms %8.2f ms  (wall min %.2f, max %.2f)\n", "median total", median(totals),
                median(cpu_totals), *std::min_element(totals.begin(), totals.end()),
                *std::max_element(totals.begin(), totals.end()));
    // The process's first compile also pays LLVM's one-time setup (targets,
    // libdevice): the first kernel measured shows it.
    std::printf("  %-44s %8.2f ms  (median of the runs %.2f)\n",
                first_in_process ? "first run, wall, the process's first" : "first run, wall", walls.front(),
                median(walls));
    first_in_process = false;
    if (!cpu_check) {
      double hit = cache_hit_ms(build, target);
      if (hit >= 0)
        std::printf("  %-44s %8.2f ms\n", "compile cache hit (wall)", hit);
      else
        std::printf("  %-44s not measured: no temporary directory\n", "compile cache hit (wall)");
    }
    std::printf("\n");
    if (!ptx_dir.empty() && !cpu_check)
      std::ofstream(ptx_dir + "/" + kernel.name + ".ptx") << ptx;
    if (!ir_dir.empty() && !cpu_check) {
      Pipeline pipeline(build());
      std::ofstream(ir_dir + "/" + kernel.name + ".ll") << pipeline.gpu_llvm_ir(target, false);
      std::ofstream(ir_dir + "/" + kernel.name + ".opt.ll") << pipeline.gpu_llvm_ir(target, true);
    }
  }
  return 0;
}
