// The tuning database (runtime/TuningDatabase.h): a round trip through its
// JSON file, merging, the lookup (exact shape, shape class, unknown problem),
// and clear errors for a corrupted, truncated or malformed file.

#include "dsl/Error.h"
#include "runtime/TuneGemm.h"
#include "runtime/TuningDatabase.h"
#include "TempDir.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace coalesce;

namespace {

using coalesce::testing::read_file;
using coalesce::testing::TempDir;
using coalesce::testing::write_file;

GemmProblem problem(const std::string &dtype, int64_t M, int64_t N, int64_t K) {
  GemmProblem p;
  p.dtype = dtype;
  p.out_dtype = dtype == "tf32" ? "f32" : dtype;
  p.epilogue = "bias_gelu";
  p.M = M;
  p.N = N;
  p.K = K;
  return p;
}

TuningRecord ffma_record(int64_t M, int64_t N, int64_t K, int block_n, double ms) {
  TuningRecord r;
  r.gpu = GpuIdentity{"NVIDIA H200", "sm_90a", 132};
  r.problem = problem("f32", M, N, K);
  r.schedule = default_gemm_candidate(r.problem, "sm_90a");
  r.schedule.ffma.block_n = block_n;
  r.schedule.ffma.threads_n = block_n / 8;
  r.schedule.ffma.block_group_rows = 8;
  r.ms = ms;
  r.default_ms = ms * 1.1;
  r.searched = 96;
  r.legal = 88;
  r.timed = 50;
  return r;
}

TuningRecord wgmma_record() {
  TuningRecord r;
  r.gpu = GpuIdentity{"NVIDIA H200", "sm_90a", 132};
  r.problem = problem("bf16", 4096, 4096, 4096);
  r.schedule = default_gemm_candidate(r.problem, "sm_90a");
  r.schedule.mma.stages = 4;
  r.schedule.mma.tma = true;
  r.schedule.mma.producer_warps = 1;
  r.schedule.mma.cluster_blocks = 2;
  r.schedule.mma.tma_padded_copies = PaddedCopies::B;
  r.schedule.mma.split_k = 2;
  r.schedule.mma.split_k_mode = SplitKMode::Atomic;
  r.ms = 0.6;
  return r;
}

std::string error_of(const std::function<void()> &step) {
  try {
    step();
  } catch (const UserError &error) {
    return error.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("the database round-trips through its file, every knob kept") {
  TempDir dir;
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  db.merge(wgmma_record());
  db.save(dir / "tuning.json");
  CHECK(dir.entries().size() == 1); // no temporary file left behind

  TuningDatabase back = TuningDatabase::load(dir / "tuning.json");
  REQUIRE(back.records().size() == 2);
  for (const TuningRecord &original : db.records()) {
    std::optional<TuningMatch> found = back.find(original.problem, "sm_90a", "NVIDIA H200");
    REQUIRE(found.has_value());
    CHECK(found->exact);
    CHECK(found->record->schedule == original.schedule);
    CHECK(found->record->schedule.mma.producer_warps == original.schedule.mma.producer_warps);
    CHECK(found->record->schedule.mma.cluster_blocks == original.schedule.mma.cluster_blocks);
    CHECK(found->record->schedule.mma.tma_padded_copies == original.schedule.mma.tma_padded_copies);
    CHECK(found->record->schedule.mma.tile_stores == original.schedule.mma.tile_stores);
    CHECK(found->record->ms == original.ms);
    CHECK(found->record->default_ms == original.default_ms);
    CHECK(found->record->gpu.sm_count == 132);
  }
  CHECK(back.to_json() == db.to_json());
  std::string text = read_file(dir / "tuning.json");
  CHECK(text.find("\"format\": \"coalesce-tuning-db\"") != std::string::npos);
  CHECK(text.find("\"shape_class\": \"~4096x~4096x~4096\"") != std::string::npos);
  CHECK(text.find("\"family\": \"warpgroup\"") != std::string::npos);
  CHECK(text.find("\"split_k_mode\": \"atomic\"") != std::string::npos);
  CHECK(text.find("\"tma\": true") != std::string::npos);
  // The default 128 x 256 bf16 tiling stages its sums in shared memory.
  CHECK(text.find("\"tile_stores\": \"sums\"") != std::string::npos);
}

TEST_CASE("tile_stores: an entry without it stores directly; an unknown value is an error naming it") {
  TempDir dir;
  TuningDatabase db;
  db.merge(wgmma_record());
  db.save(dir / "tuning.json");
  std::string text = read_file(dir / "tuning.json");
  size_t at = text.find("\"tile_stores\": \"sums\"");
  REQUIRE(at != std::string::npos);

  std::string without = text;
  without.replace(at, std::string("\"tile_stores\": \"sums\",").size(), "");
  write_file(dir / "old.json", without);
  TuningDatabase old = TuningDatabase::load(dir / "old.json");
  REQUIRE(old.records().size() == 1);
  CHECK(old.records()[0].schedule.mma.tile_stores == TileStores::Direct);

  std::string bad = text;
  bad.replace(at, std::string("\"tile_stores\": \"sums\"").size(), "\"tile_stores\": \"sideways\"");
  write_file(dir / "bad.json", bad);
  std::string message = error_of([&] { TuningDatabase::load(dir / "bad.json"); });
  CHECK(message.find("tile_stores") != std::string::npos);
  CHECK(message.find("expected \"direct\", \"shared\" or \"sums\"") != std::string::npos);
}

TEST_CASE(
    "tma_padded_copies: a name per choice, an older file's boolean read as both or none, anything else an error") {
  TempDir dir;
  TuningDatabase db;
  db.merge(wgmma_record());
  db.save(dir / "tuning.json");
  std::string text = read_file(dir / "tuning.json");
  const std::string written = "\"tma_padded_copies\": \"b\"";
  size_t at = text.find(written);
  REQUIRE(at != std::string::npos);
  auto load_with = [&](const std::string &value) {
    std::string changed = text;
    changed.replace(at, written.size(), "\"tma_padded_copies\": " + value);
    write_file(dir / "changed.json", changed);
    return TuningDatabase::load(dir / "changed.json");
  };
  CHECK(load_with("true").records()[0].schedule.mma.tma_padded_copies == PaddedCopies::Both);
  CHECK(load_with("false").records()[0].schedule.mma.tma_padded_copies == PaddedCopies::None);
  CHECK(load_with("\"a\"").records()[0].schedule.mma.tma_padded_copies == PaddedCopies::A);
  std::string message = error_of([&] { load_with("\"some\""); });
  CHECK(message.find("tma_padded_copies") != std::string::npos);
  CHECK(message.find("expected \"none\", \"a\", \"b\", \"both\" or \"where-ragged\"") != std::string::npos);
}

TEST_CASE("merging replaces the same problem's entry and keeps every other") {
  TempDir dir;
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  db.merge(ffma_record(1024, 1024, 1024, 64, 0.1));
  db.merge(wgmma_record());
  db.save(dir / "db.json");

  TuningDatabase again = TuningDatabase::load_or_empty(dir / "db.json");
  again.merge(ffma_record(4096, 4096, 4096, 128, 2.4)); // re-tuned
  TuningRecord other_gpu = ffma_record(4096, 4096, 4096, 64, 3.0);
  other_gpu.gpu = GpuIdentity{"NVIDIA A100", "sm_80", 108};
  again.merge(other_gpu);
  again.save(dir / "db.json");

  TuningDatabase merged = TuningDatabase::load(dir / "db.json");
  CHECK(merged.records().size() == 4);
  std::optional<TuningMatch> h200 = merged.find(problem("f32", 4096, 4096, 4096), "sm_90a", "NVIDIA H200");
  REQUIRE(h200.has_value());
  CHECK(h200->record->ms == 2.4);
  CHECK(h200->record->schedule.ffma.block_n == 128);
  std::optional<TuningMatch> a100 = merged.find(problem("f32", 4096, 4096, 4096), "sm_80");
  REQUIRE(a100.has_value());
  CHECK(a100->record->gpu.name == "NVIDIA A100");
  CHECK(merged.find(problem("f32", 1024, 1024, 1024), "sm_90a").has_value());
  CHECK(merged.find(problem("bf16", 4096, 4096, 4096), "sm_90a").has_value());
  CHECK(TuningDatabase::load_or_empty(dir / "absent.json").records().empty());
}

TEST_CASE("B's layout is part of the key: an N x K entry answers only N x K problems, and files without it read as K x N") {
  TempDir dir;
  TuningRecord kn = wgmma_record();
  TuningRecord nk = wgmma_record();
  nk.problem.b_layout = GemmBLayout::NK;
  nk.schedule.mma.stages = 6;
  nk.ms = 0.5;
  TuningDatabase db;
  db.merge(kn);
  db.merge(nk);
  REQUIRE(db.records().size() == 2); // two keys, not one replaced
  db.save(dir / "db.json");
  std::string text = read_file(dir / "db.json");
  CHECK(text.find("\"b\": \"nk\"") != std::string::npos);
  CHECK(text.find("\"b\": \"kn\"") != std::string::npos);

  TuningDatabase back = TuningDatabase::load(dir / "db.json");
  std::optional<TuningMatch> found_nk = back.find(nk.problem, "sm_90a", "NVIDIA H200");
  REQUIRE(found_nk.has_value());
  CHECK(found_nk->record->problem.b_layout == GemmBLayout::NK);
  CHECK(found_nk->record->schedule.mma.stages == 6);
  std::optional<TuningMatch> found_kn = back.find(kn.problem, "sm_90a", "NVIDIA H200");
  REQUIRE(found_kn.has_value());
  CHECK(found_kn->record->problem.b_layout == GemmBLayout::KN);
  // The nearest of the class stays within the layout.
  TuningDatabase only_nk;
  only_nk.merge(nk);
  GemmProblem near_kn = kn.problem;
  near_kn.M = 4000;
  CHECK_FALSE(only_nk.find(near_kn, "sm_90a").has_value());
  GemmProblem near_nk = nk.problem;
  near_nk.M = 4000;
  CHECK(only_nk.find(near_nk, "sm_90a").has_value());

  // An older file without "b": K x N. A value other than kn or nk: an error naming it.
  std::string older = text;
  for (size_t at; (at = older.find("\"b\": \"kn\",")) != std::string::npos;)
    older.erase(at, std::string("\"b\": \"kn\",").size());
  write_file(dir / "older.json", older);
  TuningDatabase old = TuningDatabase::load(dir / "older.json");
  REQUIRE(old.records().size() == 2);
  CHECK(old.find(kn.problem, "sm_90a").has_value());
  std::string bad = text;
  bad.replace(bad.find("\"b\": \"nk\""), std::string("\"b\": \"nk\"").size(), "\"b\": \"mn\"");
  write_file(dir / "bad.json", bad);
  std::string message = error_of([&] { TuningDatabase::load(dir / "bad.json"); });
  CHECK(message.find("expected \"kn\" or \"nk\"") != std::string::npos);
  CHECK(message.find("b") != std::string::npos);

  // f32 runs on FFMA, whose schedules take B stored K x N.
  GemmProblem f32_nk = problem("f32", 64, 64, 64);
  f32_nk.b_layout = GemmBLayout::NK;
  CHECK(error_of([&] { f32_nk.validate(); }).find("B stored N x K (b nk) runs on tensor cores") != std::string::npos);
  CHECK(nk.problem.str() == "bf16->bf16 bias_gelu 4096x4096x4096 B nk");
}

TEST_CASE("runs that merge into one database at the same time keep each other's entries") {
  TempDir dir;
  const std::string path = dir / "db.json";
  // Each thread opens the lock file itself, as another process would.
  std::vector<std::thread> runs;
  for (int t = 0; t < 8; ++t)
    runs.emplace_back([&, t] {
      for (int n = 0; n < 4; ++n)
        TuningDatabase::merge_into_file(path, ffma_record(256 * (t + 1), 128 * (n + 1), 512, 64, 1.0 + t));
    });
  for (std::thread &run : runs)
    run.join();
  TuningDatabase merged = TuningDatabase::load(path);
  CHECK(merged.records().size() == 32);
  for (int t = 0; t < 8; ++t)
    for (int n = 0; n < 4; ++n) {
      std::optional<TuningMatch> found = merged.find(problem("f32", 256 * (t + 1), 128 * (n + 1), 512), "sm_90a");
      REQUIRE(found.has_value());
      CHECK(found->exact);
    }
}

TEST_CASE("lookup: the exact shape, else the nearest of its class, else nothing") {
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  db.merge(ffma_record(4000, 4096, 4096, 128, 2.4));
  GemmProblem ragged = problem("f32", 4093, 4091, 4097);
  CHECK(ragged.shape_class() == "~4096x~4096x~4096");
  std::optional<TuningMatch> near = db.find(ragged, "sm_90a");
  REQUIRE(near.has_value());
  CHECK_FALSE(near->exact);
  CHECK(near->record->problem.M == 4096); // 4093 is nearer 4096 than 4000
  std::optional<TuningMatch> exact = db.find(problem("f32", 4000, 4096, 4096), "sm_90a");
  REQUIRE(exact.has_value());
  CHECK(exact->exact);
  CHECK(exact->record->schedule.ffma.block_n == 128);

  CHECK_FALSE(db.find(problem("f32", 1024, 1024, 1024), "sm_90a").has_value()); // another class
  CHECK_FALSE(db.find(problem("f32", 4096, 4096, 4096), "sm_80").has_value());  // another GPU
  CHECK_FALSE(db.find(problem("f32", 4096, 4096, 4096), "sm_90a", "NVIDIA H100").has_value());
  GemmProblem relu = problem("f32", 4096, 4096, 4096);
  relu.epilogue = "bias_relu";
  CHECK_FALSE(db.find(relu, "sm_90a").has_value()); // another epilogue
}

TEST_CASE("an unknown problem falls back to the default tiling, with a note") {
  TempDir dir;
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  db.save(dir / "db.json");

  std::string note;
  GemmProblem unknown = problem("f32", 512, 512, 512);
  GemmCandidate fallback = tuned_or_default_candidate(dir / "db.json", unknown, "sm_90a", "", 132, &note);
  CHECK(fallback == default_gemm_candidate(unknown, "sm_90a", 132));
  CHECK(note.find("has no entry for f32->f32 bias_gelu 512x512x512") != std::string::npos);
  CHECK(note.find("using the default tiling") != std::string::npos);

  GemmCandidate tuned =
      tuned_or_default_candidate(dir / "db.json", problem("f32", 4096, 4096, 4096), "sm_90a", "", 132, &note);
  CHECK(tuned.ffma.block_n == 64);
  CHECK(tuned.ffma.block_group_rows == 8);
  CHECK(note.find("using the entry for 4096x4096x4096") != std::string::npos);
}

TEST_CASE("a corrupted, truncated or malformed database is an error naming the file and the fault") {
  TempDir dir;
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  db.save(dir / "good.json");
  std::string good = read_file(dir / "good.json");

  write_file(dir / "truncated.json", good.substr(0, good.size() / 2));
  std::string truncated = error_of([&] { TuningDatabase::load(dir / "truncated.json"); });
  CHECK(truncated.find(dir / "truncated.json") != std::string::npos);
  CHECK(truncated.find("not valid JSON") != std::string::npos);

  write_file(dir / "garbage.json", "\x01\x02 not json");
  CHECK(error_of([&] { TuningDatabase::load(dir / "garbage.json"); }).find("not valid JSON") != std::string::npos);

  write_file(dir / "other.json", "{\"entries\": []}");
  CHECK(error_of([&] { TuningDatabase::load(dir / "other.json"); }).find("not a Coalesce tuning database") !=
        std::string::npos);

  std::string bad_knob = good;
  bad_knob.replace(bad_knob.find("\"block_m\": 128"), 14, "\"block_m\": \"big\"");
  write_file(dir / "bad_knob.json", bad_knob);
  std::string knob = error_of([&] { TuningDatabase::load(dir / "bad_knob.json"); });
  CHECK(knob.find(dir / "bad_knob.json") != std::string::npos);
  CHECK(knob.find("entries[0].schedule.block_m") != std::string::npos);

  std::string bad_dtype = good;
  bad_dtype.replace(bad_dtype.find("\"dtype\": \"f32\""), 14, "\"dtype\": \"f64\"");
  write_file(dir / "bad_dtype.json", bad_dtype);
  std::string dtype = error_of([&] { TuningDatabase::load(dir / "bad_dtype.json"); });
  CAPTURE(dtype);
  CHECK(dtype.find("entries[0].problem") != std::string::npos);
  CHECK(dtype.find("'f64'") != std::string::npos);

  CHECK(error_of([&] { TuningDatabase::load(dir / "missing.json"); }).find("cannot read it") != std::string::npos);

  // Merging into a corrupted file is refused before anything is written.
  CHECK(error_of([&] { TuningDatabase::load_or_empty(dir / "truncated.json"); }).find("not valid JSON") !=
        std::string::npos);
  CHECK(read_file(dir / "truncated.json") == good.substr(0, good.size() / 2));
}

TEST_CASE("saving into a directory that does not exist is an error, and writes nothing") {
  TempDir dir;
  TuningDatabase db;
  db.merge(ffma_record(4096, 4096, 4096, 64, 2.5));
  std::string error = error_of([&] { db.save(dir / "no/such/dir/db.json"); });
  CHECK(error.find("cannot write it") != std::string::npos);
  CHECK(dir.entries().empty());
}
