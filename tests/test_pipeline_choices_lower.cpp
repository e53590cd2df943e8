// Every combination of the warpgroup kernel's pipeline choices, bf16, tf32
// and FP8 (the copies:
// cp.async, the TMA, producer warps with and without register reallocation,
// padded copies; the output's tile stores; a persistent grid; clusters;
// split-K; two tile shapes) at every kind of extent (left to run time, fixed to whole
// tiles, fixed and ragged, only K fixed) lowers to a GPU program or is
// refused by a rule with a UserError. An internal error is a compiler bug
// and fails the test: a legal schedule at fixed whole tiles with producers
// that reallocate registers was one, which no test with run-time extents
// could reach. The same for a batch of products, with and without strided
// views. Lowering only (no LLVM), so the whole matrix runs in seconds;
// the kernels' numbers and ptxas are the other tests' and the GPU check's.
// COALESCE_PIPELINE_MATRIX_PTXAS=N also assembles every N-th lowered
// schedule with ptxas (sm_90a): a kernel ptxas rejects fails the test (the
// rules should have refused its schedule); spills and "Potential
// Performance Loss" reports are counted and listed.

#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/Error.h"
#include "examples/BatchedGemm.h"
#include "scheduler/LoweredFunc.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <sstream>

using namespace coalesce;
using coalesce::examples::Epilogue;
using coalesce::examples::Gemm;

namespace {

enum class Extents { RunTime, WholeTiles, Ragged, OnlyK };
const char *extents_name(Extents e) {
  switch (e) {
  case Extents::RunTime: return "extents at run time";
  case Extents::WholeTiles: return "fixed whole tiles 256x512x192";
  case Extents::Ragged: return "fixed ragged 200x300x100";
  case Extents::OnlyK: return "K fixed to 192";
  }
  return "?";
}

// bf16 in and out; f32 in and out for tf32; e4m3 in, bf16 out and B
// stored N x K (the 8-bit MMA reads both operands K-major) for FP8.
Gemm gemm_with(Extents e, MmaKind kind) {
  const bool fp8 = kind == MmaKind::E4M3_wgmma_m64k32;
  const Type in = kind == MmaKind::TF32_wgmma_m64k8 ? Float(32) : fp8 ? Float8E4M3() : BFloat(16);
  const Type out = fp8 ? BFloat(16) : in;
  const examples::BLayout b = fp8 ? examples::BLayout::NK : examples::BLayout::KN;
  switch (e) {
  case Extents::RunTime: break;
  case Extents::WholeTiles: return examples::make_gemm_with_extents(Epilogue::BiasGelu, in, out, 256, 512, 192, b);
  case Extents::Ragged: return examples::make_gemm_with_extents(Epilogue::BiasGelu, in, out, 200, 300, 100, b);
  case Extents::OnlyK: return examples::make_gemm_with_extents(Epilogue::BiasGelu, in, out, Expr(), Expr(), 192, b);
  }
  return examples::make_gemm(Epilogue::BiasGelu, in, out, b);
}

constexpr MmaKind kKinds[] = {MmaKind::BF16_wgmma_m64k16, MmaKind::TF32_wgmma_m64k8, MmaKind::E4M3_wgmma_m64k32};

struct Copies {
  const char *name;
  bool tma;
  int producer_warps, producer_registers;
  bool padded;
};
const Copies kCopies[] = {{"cp.async", false, 0, 0, false},
                          {"TMA", true, 0, 0, false},
                          {"TMA, 1 producer warp", true, 1, 0, false},
                          {"TMA, 4 producer warps", true, 4, 0, false},
                          {"TMA, 4 producer warps keeping 40 registers", true, 4, 40, false},
                          {"TMA, padded copies", true, 0, 0, true}};

MmaTiling tiling_for(MmaKind kind, bool wide, const Copies &c, TileStores stores, int persistent, int cluster,
                     int split_k) {
  MmaTiling t = wide ? coalesce::testing::wide_producer_tiling(kind) : coalesce::testing::two_warpgroup_tiling(kind);
  t.stages = 3;
  t.tma = c.tma;
  t.producer_warps = c.producer_warps;
  t.producer_registers = c.producer_registers;
  t.tma_padded_copies = (c.padded) ? PaddedCopies::Both : PaddedCopies::None;
  t.tile_stores = stores;
  t.persistent_blocks = persistent;
  t.cluster_blocks = cluster;
  t.split_k = split_k;
  return t;
}

// Every N-th lowered schedule assembled with ptxas (0: none).
int ptxas_every() {
  const char *every = std::getenv("COALESCE_PIPELINE_MATRIX_PTXAS");
  return every && *every && ptxas_available() ? std::max(0, std::atoi(every)) : 0;
}

// Lowers each schedule it is given for a GPU and counts those lowered and
// those a rule refused; an internal error fails the test. Every
// ptxas_every()-th lowered schedule is assembled too: ptxas rejecting one
// fails the test, spills and performance losses are listed.
class Lowerings {
public:
  /// `schedule()` schedules and returns the output Func (a UserError from
  /// it is a refusal too); true where the schedule lowered.
  template <typename Schedule> bool lower(const std::string &what, Schedule schedule) {
    try {
      Pipeline pipeline(schedule());
      const bool has_kernels = !pipeline.gpu_program().kernels.empty();
      CHECK_MESSAGE(has_kernels, what);
      ++lowered_;
      maybe_assemble(pipeline, what);
      return true;
    } catch (const InternalError &error) {
      FAIL_CHECK("an internal error for a schedule of the recipe (" << what << "): " << error.what());
    } catch (const UserError &) {
      ++refused_; // a rule's refusal: legality is the other tests'
    }
    return false;
  }
  int lowered() const { return lowered_; }
  ~Lowerings() {
    MESSAGE(lowered_ << " lowered, " << refused_ << " refused");
    if (assembled_ == 0)
      return;
    MESSAGE(assembled_ << " assembled, " << degraded_.size() << " with spills or a performance loss");
    for (const std::string &d : degraded_)
      MESSAGE("  " << d);
  }

private:
  void maybe_assemble(Pipeline &pipeline, const std::string &what) {
    const int every = ptxas_every();
    if (every == 0 || (lowered_ - 1) % every != 0) // the first lowered, then every N-th
      return;
    ++assembled_;
    try {
      PtxasResult result = pipeline.assemble(parse_gpu_target("sm_90a"));
      bool spills = false;
      for (const KernelResources &kernel : result.kernels)
        spills |= kernel.spills();
      if (spills || !result.performance_losses().empty())
        degraded_.push_back(
            what + (spills ? " [spills]" : "") +
            (result.performance_losses().empty() ? "" : " [" + result.performance_losses().front() + "]"));
    } catch (const UserError &error) {
      FAIL_CHECK("ptxas rejected a schedule the rules accepted (" << what << "): " << error.what());
    }
  }

  int lowered_ = 0, refused_ = 0, assembled_ = 0;
  std::vector<std::string> degraded_;
};

} // namespace

TEST_CASE("every combination of the warpgroup kernel's pipeline choices lowers for a GPU or is refused by a rule") {
  Lowerings lowerings;
  std::map<std::string, int> accepted_by_copies;
  for (MmaKind kind : kKinds)
    for (Extents e : {Extents::RunTime, Extents::WholeTiles, Extents::Ragged, Extents::OnlyK})
      for (const Copies &c : kCopies)
        for (TileStores stores : kTileStores)
          for (int persistent : {0, 3})
            for (int cluster : {0, 2})
              for (int split_k : {1, 3})
                for (bool wide : {false, true}) {
                  MmaTiling t = tiling_for(kind, wide, c, stores, persistent, cluster, split_k);
                  std::ostringstream what;
                  what << extents_name(e) << "; " << c.name << "; " << t.str();
                  Gemm g = gemm_with(e, kind);
                  if (lowerings.lower(what.str(), [&] {
                        schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
                        return g.out;
                      }))
                    ++accepted_by_copies[std::string(mma_kind_name(kind)) + ", " + c.name];
                }
  // Each kind of copies lowers somewhere: a rule that refused every one of
  // them would leave the matrix checking nothing.
  for (MmaKind kind : kKinds)
    for (const Copies &c : kCopies) {
      // tf32 takes the TMA only through padded copies (rows rounded in a
      // kernel of their own).
      if (kind == MmaKind::TF32_wgmma_m64k8 && c.tma && !c.padded)
        continue;
      const std::string name = std::string(mma_kind_name(kind)) + ", " + c.name;
      CHECK_MESSAGE(accepted_by_copies[name] > 0, name);
    }
}

TEST_CASE("a batch's and strided views' pipeline choices lower for a GPU or are refused by a rule") {
  Lowerings lowerings;
  for (examples::BatchedOperands o : {examples::BatchedOperands::Both, examples::BatchedOperands::SharedWeightsNK})
    for (bool views : {false, true})
      for (const Copies &c : kCopies)
        for (TileStores stores : kTileStores)
          for (int persistent : {0, 3})
            for (bool wide : {false, true}) {
              MmaTiling t = tiling_for(MmaKind::BF16_wgmma_m64k16, wide, c, stores, persistent, 0, 1);
              std::ostringstream what;
              what << examples::batched_operands_name(o) << (views ? ", strided views" : "") << "; " << c.name << "; "
                   << t.str();
              examples::BatchedGemm g(BFloat(16), BFloat(16), o, true, views);
              lowerings.lower(what.str(), [&] {
                g.schedule_mma(t);
                return g.out;
              });
            }
  CHECK(lowerings.lowered() > 0);
}
