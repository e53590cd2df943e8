// The autotuner's search (runtime/Autotune.h) with an injected timing step
// in place of the GPU: it picks the fastest legal candidate, never times an
// illegal one, counts refusals by rule, keeps to max_candidates, and skips
// a candidate whose result is wrong. Also the search space and the
// progress line.

#include "dsl/Error.h"
#include "runtime/Autotune.h"
#include "runtime/TuneProgress.h"
#include "runtime/TuningSpace.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>

using namespace coalesce;

namespace {

GemmProblem f32_problem() {
  GemmProblem p;
  p.dtype = "f32";
  p.out_dtype = "f32";
  p.epilogue = "bias_relu";
  p.M = 200;
  p.N = 136;
  p.K = 72; // ragged: no extent a multiple of the tiles
  return p;
}

GemmCandidate ffma(int block_m, int block_n, int threads_m, int threads_n, int k_step = 8) {
  GemmCandidate c;
  c.ffma.block_m = block_m;
  c.ffma.block_n = block_n;
  c.ffma.threads_m = threads_m;
  c.ffma.threads_n = threads_n;
  c.ffma.k_step = k_step;
  return c;
}

/// Legal: 0 (the default), 1, 2, 5; illegal: 3 and 6 (too many threads per
/// block), 4 (a block tile that is not a multiple of the thread tile).
std::vector<GemmCandidate> candidates() {
  return {default_gemm_candidate(f32_problem(), "sm_90a"),
          ffma(128, 128, 16, 16),
          ffma(64, 64, 16, 16),
          ffma(256, 256, 64, 64),
          ffma(128, 128, 12, 16),
          ffma(64, 128, 8, 16, 16),
          ffma(256, 128, 64, 32)};
}

/// A fake GPU: a time per candidate index, counting its calls.
struct FakeTimer {
  /// Illegal candidates (3, 4, 6) would be the fastest, were they ever timed.
  std::map<size_t, double> ms = {{0, 3.0}, {1, 2.0}, {2, 1.0}, {3, 0.1}, {4, 0.1}, {5, 1.5}, {6, 0.1}};
  std::set<size_t> wrong;      ///< indices whose result does not match
  std::set<size_t> unloadable; ///< indices whose module does not load
  std::mutex prepared_mutex;   ///< prepare runs on the compile threads
  std::set<size_t> prepared;
  std::map<size_t, int> rank_calls;
  int confirm_calls = 0;
  double confirm_ms = 0.75;

  TimingSteps steps() {
    TimingSteps t;
    t.prepare = [this](CompiledCandidate &c) {
      std::lock_guard<std::mutex> lock(prepared_mutex);
      prepared.insert(c.index);
      if (unloadable.count(c.index))
        throw UserError("cuModuleLoadDataEx failed: too many resources requested");
    };
    t.rank = [this](CompiledCandidate &c) {
      {
        std::lock_guard<std::mutex> lock(prepared_mutex);
        CHECK(prepared.count(c.index) == 1); // prepared before it is timed
      }
      ++rank_calls[c.index];
      CHECK_FALSE(c.pipeline.ptx(c.target).empty()); // compiled before it is timed
      Measurement m;
      if (wrong.count(c.index)) {
        m.rule = "numerics";
        m.error = "relative error 0.5 on 16 sampled rows";
        return m;
      }
      m.ok = true;
      m.ms = ms.at(c.index);
      return m;
    };
    t.confirm = [this](CompiledCandidate &) {
      ++confirm_calls;
      Measurement m;
      m.ok = true;
      m.ms = confirm_ms;
      return m;
    };
    return t;
  }
};

AutotuneOptions options(size_t max_candidates = 50) {
  AutotuneOptions o;
  o.max_candidates = max_candidates;
  o.threads = 2;
  return o;
}

} // namespace

TEST_CASE("the search picks the fastest legal candidate and counts the illegal ones by rule") {
  FakeTimer fake;
  AutotuneResult result = autotune_gemm(f32_problem(), candidates(), fake.steps(), options());

  REQUIRE(result.best.has_value());
  CHECK(*result.best == 2);
  CHECK(result.best_candidate() == candidates()[2]);
  CHECK(result.best_ms == doctest::Approx(0.75)); // the confirmed time, not the ranking one
  CHECK(fake.confirm_calls == 1);
  REQUIRE(result.default_ms.has_value());
  CHECK(*result.default_ms == doctest::Approx(3.0));

  CHECK(result.legal == 4);
  CHECK(result.timed == 4);
  CHECK(result.illegal_by_rule == std::map<std::string, int>{{"check_gpu_limits", 2}, {"schedule_gemm", 1}});
  CHECK(result.failed_by_rule.empty());
  for (size_t n : {0, 1, 2, 5})
    CHECK(fake.rank_calls[n] == 1);
  for (size_t n : {3, 4, 6}) {
    CAPTURE(n);
    CHECK(fake.rank_calls.count(n) == 0);
    CHECK(result.results[n].status == CandidateStatus::Illegal);
    CHECK_FALSE(result.results[n].error.empty());
  }
  CHECK(result.results[4].error.find("multiple of the thread tile") != std::string::npos);

  std::string summary = result.summary();
  CHECK(summary.find("7 candidates, 3 refused by the legality rules, 4 legal, 4 compiled, 4 timed") !=
        std::string::npos);
  CHECK(summary.find("check_gpu_limits 2, schedule_gemm 1") != std::string::npos);
  // The ranking's time beside the default's, then the final timing's.
  CHECK(summary.find(": 1.000 ms (3.00x the default, quick timings); 0.750 ms in the final timing") !=
        std::string::npos);
}

TEST_CASE("a candidate with a wrong result is counted and never wins") {
  FakeTimer fake;
  fake.wrong = {2}; // the fastest
  AutotuneResult result = autotune_gemm(f32_problem(), candidates(), fake.steps(), options());
  REQUIRE(result.best.has_value());
  CHECK(*result.best == 5); // the next fastest
  CHECK(result.results[2].status == CandidateStatus::Failed);
  CHECK(result.results[2].rule == "numerics");
  CHECK(result.failed_by_rule == std::map<std::string, int>{{"numerics", 1}});
  CHECK(result.timed == 3);
}

TEST_CASE("a candidate that fails to load is counted under \"load\" and never timed") {
  FakeTimer fake;
  fake.unloadable = {2};
  AutotuneResult result = autotune_gemm(f32_problem(), candidates(), fake.steps(), options());
  CHECK(fake.prepared == std::set<size_t>{0, 1, 2, 5});
  CHECK(fake.rank_calls.count(2) == 0);
  CHECK(result.results[2].status == CandidateStatus::Failed);
  CHECK(result.failed_by_rule == std::map<std::string, int>{{"load", 1}});
  REQUIRE(result.best.has_value());
  CHECK(*result.best == 5);
}

TEST_CASE("max_candidates bounds what is compiled and timed; the default is among them") {
  FakeTimer fake;
  AutotuneResult result = autotune_gemm(f32_problem(), candidates(), fake.steps(), options(2));
  CHECK(result.legal == 4);
  CHECK(result.timed == 2);
  CHECK(fake.rank_calls[0] == 1);
  size_t not_sampled = 0;
  for (const CandidateResult &r : result.results)
    not_sampled += r.status == CandidateStatus::NotSampled;
  CHECK(not_sampled == 2);
  REQUIRE(result.best.has_value());
  CHECK(result.results[*result.best].ms <= 3.0);
}

TEST_CASE("no legal candidate: no winner, and best_candidate says why") {
  FakeTimer fake;
  std::vector<GemmCandidate> all = candidates();
  std::vector<GemmCandidate> illegal = {all[3], all[4]};
  AutotuneResult result = autotune_gemm(f32_problem(), illegal, fake.steps(), options());
  CHECK_FALSE(result.best.has_value());
  CHECK(fake.rank_calls.empty());
  CHECK_THROWS_WITH_AS(result.best_candidate(), doctest::Contains("no candidate"), UserError);
}

TEST_CASE("the search space: the default first, no repeats, the knobs of each family") {
  GemmProblem f32 = f32_problem();
  f32.M = f32.N = f32.K = 4096;
  GemmCandidate first = default_gemm_candidate(f32, "sm_90a");
  std::vector<GemmCandidate> list = enumerate_candidates(f32, default_tuning_space(f32, "sm_90a"), first);
  REQUIRE(list.size() > 50);
  CHECK(list.front() == first);
  for (size_t a = 0; a < list.size(); ++a)
    for (size_t b = a + 1; b < list.size(); ++b)
      REQUIRE_FALSE(list[a] == list[b]);
  std::set<int> k_steps, groups;
  for (const GemmCandidate &c : list) {
    CHECK(c.family == GemmFamily::Ffma);
    k_steps.insert(c.ffma.k_step);
    groups.insert(c.ffma.block_group_rows);
  }
  CHECK(k_steps == std::set<int>{8, 16});
  CHECK(groups == std::set<int>{0, 8});

  GemmProblem bf16 = f32;
  bf16.dtype = bf16.out_dtype = "bf16";
  auto families = [&](const std::string &sm) {
    std::set<GemmFamily> seen;
    for (const GemmCandidate &c :
         enumerate_candidates(bf16, default_tuning_space(bf16, sm), default_gemm_candidate(bf16, sm)))
      seen.insert(c.family);
    return seen;
  };
  CHECK(families("sm_90a") == std::set<GemmFamily>{GemmFamily::WarpMma, GemmFamily::WarpgroupMma});
  std::set<bool> tma;
  for (const GemmCandidate &c :
       enumerate_candidates(bf16, default_tuning_space(bf16, "sm_90a"), default_gemm_candidate(bf16, "sm_90a")))
    if (c.family == GemmFamily::WarpgroupMma)
      tma.insert(c.mma.tma);
  CHECK(tma == std::set<bool>{false, true});
  CHECK(families("sm_80") == std::set<GemmFamily>{GemmFamily::WarpMma});

  std::vector<GemmCandidate> sample = spread_sample(list, 10);
  REQUIRE(sample.size() == 10);
  CHECK(sample.front() == first);
  CHECK(sample.back() == list[1 + 8 * (list.size() - 1) / 9]);
}

TEST_CASE("spread_indices: all when they fit, else the first and evenly spaced ones") {
  CHECK(spread_indices(5, 10) == std::vector<size_t>{0, 1, 2, 3, 4});
  CHECK(spread_indices(10, 0).empty());
  CHECK(spread_indices(0, 5).empty());
  CHECK(spread_indices(100, 1) == std::vector<size_t>{0});
  std::vector<size_t> five = spread_indices(101, 5);
  CHECK(five == std::vector<size_t>{0, 1, 26, 51, 76});
  std::vector<size_t> many = spread_indices(331, 50);
  REQUIRE(many.size() == 50);
  for (size_t n = 1; n < many.size(); ++n)
    CHECK(many[n] > many[n - 1]);
  CHECK(many.back() < 331);
}

TEST_CASE("split-K counts enter the space where the tiles leave multiprocessors idle") {
  GemmProblem deep = f32_problem();
  deep.M = deep.N = 256;
  deep.K = 65536;
  std::set<int> splits;
  for (const GemmCandidate &c : enumerate_candidates(deep, default_tuning_space(deep, "sm_90a"),
                                                     default_gemm_candidate(deep, "sm_90a")))
    splits.insert(c.ffma.split_k);
  CHECK(splits.count(1) == 1);
  CHECK(splits.size() > 1);
}

TEST_CASE("the warpgroup MMA's split candidates combine in a kernel of their own, as its default does") {
  GemmProblem deep = f32_problem();
  deep.dtype = deep.out_dtype = "bf16";
  deep.M = deep.N = 256;
  deep.K = 65536;
  const GemmCandidate first = default_gemm_candidate(deep, "sm_90a");
  REQUIRE(first.family == GemmFamily::WarpgroupMma);
  CHECK(first.mma.split_k > 1);
  CHECK(first.mma.split_k_mode == SplitKMode::CombineKernel);
  size_t split_warpgroup = 0;
  for (const GemmCandidate &c : enumerate_candidates(deep, default_tuning_space(deep, "sm_90a"), first)) {
    if (c.family != GemmFamily::WarpgroupMma || c.mma.split_k <= 1)
      continue;
    ++split_warpgroup;
    CHECK(c.mma.split_k_mode == SplitKMode::CombineKernel);
  }
  CHECK(split_warpgroup > 0);
}

TEST_CASE("the progress line: done of total, the best so far, the time left") {
  CHECK(TuneProgress::line(0, 50, "", 0.0) ==
        "autotune [........................] 0/50  best -  left ~?");
  CHECK(TuneProgress::line(25, 50, "0.612 ms", 10.0) ==
        "autotune [############............] 25/50  best 0.612 ms  left ~10 s");
  CHECK(TuneProgress::line(50, 50, "0.5 ms", 20.0).find("50/50  best 0.5 ms  left ~0 s") != std::string::npos);

  std::FILE *file = std::tmpfile();
  REQUIRE(file != nullptr);
  {
    TuneProgress off(4, false, file);
    off.update(1, "1 ms");
  }
  CHECK(std::ftell(file) == 0); // disabled: nothing written
  {
    TuneProgress on(4, true, file);
    on.update(2, "1 ms");
  }
  CHECK(std::ftell(file) > 0);
  std::fclose(file);
}

TEST_CASE("the default bf16 space on sm_90a: legal candidates of both MMA families, refusals named by rule") {
  GemmProblem bf16;
  bf16.dtype = bf16.out_dtype = "bf16";
  bf16.M = bf16.N = bf16.K = 4096;
  std::vector<GemmCandidate> list =
      enumerate_candidates(bf16, default_tuning_space(bf16, "sm_90a"), default_gemm_candidate(bf16, "sm_90a"));
  FakeTimer fake;
  AutotuneResult result = autotune_gemm(bf16, list, fake.steps(), options(0)); // legality only
  CHECK(fake.rank_calls.empty());
  std::set<GemmFamily> legal_families;
  for (const CandidateResult &r : result.results)
    if (r.status == CandidateStatus::NotSampled)
      legal_families.insert(r.candidate.family);
  CHECK(legal_families == std::set<GemmFamily>{GemmFamily::WarpMma, GemmFamily::WarpgroupMma});
  CHECK(result.results[0].status == CandidateStatus::NotSampled); // the default is legal
  CHECK(result.legal >= 50);
  // Producer warpgroups on a persistent grid and in clusters, legal too.
  bool across = false, clusters = false, across_in_clusters = false;
  for (const CandidateResult &r : result.results)
    if (r.status == CandidateStatus::NotSampled && r.candidate.mma.producer_registers > 0) {
      across |= r.candidate.mma.persistent_blocks > 0;
      clusters |= r.candidate.mma.cluster_blocks > 1;
      across_in_clusters |= r.candidate.mma.persistent_blocks > 0 && r.candidate.mma.cluster_blocks > 1;
    }
  CHECK(across);
  CHECK(clusters);
  CHECK(across_in_clusters);
  // Tiles stored every way, legal: through shared memory beside three
  // stages at 128 x 256 (four leave no room: refused by the budget), and
  // the sums over the four stages' slots (the default).
  std::set<TileStores> stores;
  for (const CandidateResult &r : result.results)
    if (r.status == CandidateStatus::NotSampled && r.candidate.family == GemmFamily::WarpgroupMma &&
        r.candidate.mma.block_n == 256)
      stores.insert(r.candidate.mma.tile_stores);
  CHECK(stores == std::set<TileStores>{TileStores::Direct, TileStores::ThroughShared, TileStores::SumsThroughShared});
  CHECK_FALSE(result.illegal_by_rule.empty());
  for (const auto &[rule, count] : result.illegal_by_rule) {
    CAPTURE(rule);
    CHECK(rule.find(' ') == std::string::npos); // a name, not a message
  }
  MESSAGE(result.summary());
}

TEST_CASE("tf32 on sm_90a: the warpgroup MMA's candidates, k step 32 through the TMA's copies, legal") {
  GemmProblem tf32;
  tf32.dtype = "tf32";
  tf32.out_dtype = "f32";
  tf32.M = tf32.N = 4096;
  tf32.K = 4097; // rows that are not whole 16 bytes: the copies pad them
  GemmCandidate first = default_gemm_candidate(tf32, "sm_90a");
  CHECK(first.family == GemmFamily::WarpgroupMma);
  CHECK(first.mma.kind == MmaKind::TF32_wgmma_m64k8);
  CHECK(first.mma.uses_tma());
  CHECK(first.mma.tma_padded_copies == PaddedCopies::Both);
  CHECK(default_gemm_candidate(tf32, "sm_80").family == GemmFamily::WarpMma);
  // Few rows of A: the warp MMA on sm_90a too, no copies made first
  // (warpgroup_mma_by_default); the warpgroup MMA again from 129 rows.
  GemmProblem skinny = tf32;
  skinny.M = 128;
  CHECK(default_gemm_candidate(skinny, "sm_90a").family == GemmFamily::WarpMma);
  skinny.M = 129;
  CHECK(default_gemm_candidate(skinny, "sm_90a").family == GemmFamily::WarpgroupMma);
  std::vector<GemmCandidate> list = enumerate_candidates(tf32, default_tuning_space(tf32, "sm_90a"), first);
  size_t warpgroup = 0;
  for (const GemmCandidate &c : list)
    if (c.family == GemmFamily::WarpgroupMma) {
      ++warpgroup;
      CHECK(c.mma.k_step == 32);
      CHECK(c.mma.tma);
    }
  CHECK(warpgroup > 20);
  FakeTimer fake;
  AutotuneResult result = autotune_gemm(tf32, spread_sample(list, 12), fake.steps(), options(0)); // legality only
  CHECK(result.results[0].status == CandidateStatus::NotSampled); // the default is legal
  size_t legal_warpgroup = 0;
  for (const CandidateResult &r : result.results)
    legal_warpgroup += r.status == CandidateStatus::NotSampled && r.candidate.family == GemmFamily::WarpgroupMma;
  CHECK(legal_warpgroup >= 2);
  MESSAGE(result.summary());
}

TEST_CASE("a decode step with B stored N x K: the space's candidates read W(j, k) and are legal") {
  GemmProblem decode;
  decode.dtype = decode.out_dtype = "bf16";
  decode.M = 16;
  decode.N = decode.K = 4096;
  decode.b_layout = GemmBLayout::NK;
  std::vector<GemmCandidate> list =
      enumerate_candidates(decode, default_tuning_space(decode, "sm_90a"), default_gemm_candidate(decode, "sm_90a"));
  FakeTimer fake;
  AutotuneResult result = autotune_gemm(decode, spread_sample(list, 12), fake.steps(), options(0)); // legality only
  CHECK(result.results[0].status == CandidateStatus::NotSampled); // the default is legal
  CHECK(result.legal >= 6);
  Pipeline pipeline(build_scheduled_gemm(decode, result.results[0].candidate));
  // W's boxes start at the block's rows of N (bj), not at a K offset.
  CHECK(pipeline.loop_nest().find("tensor_copy B[bj*64, ") != std::string::npos);
  MESSAGE(result.summary());
}
