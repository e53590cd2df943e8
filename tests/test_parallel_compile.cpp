// Compiling independent kernels on several threads (runtime/ParallelCompile.h)
// gives the same PTX, byte for byte, as compiling them one by one, and an
// illegal schedule among them fails alone, with its own error and rule.

#include "runtime/GemmCandidate.h"
#include "runtime/ParallelCompile.h"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

GemmProblem problem(const std::string &dtype) {
  GemmProblem p;
  p.dtype = dtype;
  p.out_dtype = dtype == "tf32" ? "f32" : dtype;
  p.epilogue = "bias_gelu";
  p.M = p.N = p.K = 512;
  return p;
}

struct Item {
  GemmProblem problem;
  GemmCandidate candidate;
};

/// Four different legal schedules (FFMA, warp MMA, warpgroup MMA) and, third,
/// one with 64 x 64 threads per block, which check_gpu_limits refuses.
std::vector<Item> items() {
  std::vector<Item> list;
  GemmProblem f32 = problem("f32"), bf16 = problem("bf16");
  list.push_back({f32, default_gemm_candidate(f32, "sm_90a")});
  Item large{f32, default_gemm_candidate(f32, "sm_90a")}; // the default at 512^3 is 64 x 64
  large.candidate.ffma.block_m = large.candidate.ffma.block_n = 128;
  large.candidate.ffma.threads_m = large.candidate.ffma.threads_n = 16;
  list.push_back(large);
  Item too_many_threads{f32, default_gemm_candidate(f32, "sm_90a")};
  too_many_threads.candidate.ffma.block_m = too_many_threads.candidate.ffma.block_n = 256;
  too_many_threads.candidate.ffma.threads_m = too_many_threads.candidate.ffma.threads_n = 64;
  list.push_back(too_many_threads);
  list.push_back({bf16, default_gemm_candidate(bf16, "sm_90a")}); // warpgroup MMA
  Item warp{bf16, default_gemm_candidate(bf16, "sm_80")};
  list.push_back(warp);
  return list;
}

std::vector<Pipeline> pipelines(const std::vector<Item> &list) {
  std::vector<Pipeline> result;
  for (const Item &item : list)
    result.emplace_back(build_scheduled_gemm(item.problem, item.candidate));
  return result;
}

} // namespace

TEST_CASE("parallel compilation: the same PTX as one by one; an illegal schedule fails alone") {
  std::vector<Item> list = items();
  REQUIRE(list[3].candidate.family == GemmFamily::WarpgroupMma);
  REQUIRE(list[4].candidate.family == GemmFamily::WarpMma);
  GpuTarget target; // sm_90a: every item's instructions exist there

  std::vector<Pipeline> serial = pipelines(list);
  std::vector<CompileOutcome> one_by_one = compile_ptx_in_parallel(serial, target, 1);
  std::vector<Pipeline> concurrent = pipelines(list);
  std::vector<CompileOutcome> parallel = compile_ptx_in_parallel(concurrent, target, 4);

  REQUIRE(parallel.size() == list.size());
  for (size_t n = 0; n < list.size(); ++n) {
    CAPTURE(n);
    CHECK(parallel[n].ok() == one_by_one[n].ok());
    CHECK(parallel[n].ptx == one_by_one[n].ptx);
    CHECK(parallel[n].rule == one_by_one[n].rule);
  }
  for (size_t n : {0, 1, 3, 4}) {
    CAPTURE(n);
    CHECK(parallel[n].ok());
    CHECK(parallel[n].ptx.find(".entry") != std::string::npos);
  }
  CHECK(parallel[3].ptx.find("wgmma") != std::string::npos);
  CHECK_FALSE(parallel[2].ok());
  CHECK(parallel[2].rule == "check_gpu_limits");
  CHECK(parallel[2].error.find("threads") != std::string::npos);
  CHECK(parallel[2].ptx.empty());
  // Different schedules, different kernels: the comparison above is not
  // between equal texts.
  CHECK(parallel[0].ptx != parallel[1].ptx);
}

TEST_CASE("run_in_parallel calls each index once, on as many threads as asked") {
  for (int threads : {0, 1, 3, 16}) {
    CAPTURE(threads);
    std::vector<std::atomic<int>> calls(37);
    run_in_parallel(calls.size(), threads, [&](size_t index) { ++calls[index]; });
    for (const std::atomic<int> &count : calls)
      CHECK(count.load() == 1);
  }
  bool called = false;
  run_in_parallel(0, 4, [&](size_t) { called = true; });
  CHECK_FALSE(called);
}
