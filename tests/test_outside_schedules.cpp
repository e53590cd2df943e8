// Schedules and names found by testing from the outside: each case broke
// the promise (a wrong result, a GPU race the CPU run could not show, or an
// internal error) before the fix it names, and is checked against the
// double reference at ragged shapes and the K = 1 / K = 3 pair, or for the
// UserError that names what is wrong.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "ErrorCapture.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

const std::vector<std::array<int, 3>> kShapes = {{1, 1, 1}, {17, 15, 3}, {33, 47, 5}, {65, 63, 9}, {40, 40, 1},
                                                 {40, 40, 3}};

double cpu_error(Pipeline &pipeline, int M, int N, int K, Epilogue e) {
  GemmData data = make_data(M, N, K, 7);
  Buffer out({M, N});
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, e), out);
  return relative_error(out, reference(data, M, N, K, e));
}

// 16 x 16 tiles of 8 x 8 threads, 2 x 2 elements each, acc fused at bj and
// its reduction split across 3 blocks; the consumer's loops named by the
// caller.
Gemm split_k_gemm(const char *row_blocks, const char *register_columns, SplitKMode mode) {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  Var bi(row_blocks), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj(register_columns);
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16)
      .gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
      .gpu_threads({ti, tj});
  g.out.fuse_epilogue(g.acc, bj);
  g.acc.update().allow_reassociation();
  g.out.split_k(g.acc, g.k, Var("kz"), 3, mode);
  return g;
}

} // namespace

TEST_CASE("split_k's own names (last, kz_sum) capture no loop of the consumer named like them") {
  // The arrival flag was the let out.s0.last and the combine loop
  // out.s0.kz_sum: a block loop named last read the flag (0 or 1) as its
  // block index in the epilogue (nothing written past the first rows), and
  // a register loop named kz_sum indexed acc by the slice being added.
  for (auto [rows, columns] : std::vector<std::array<const char *, 2>>{{"last", "rj"}, {"bi", "kz_sum"}})
    for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic}) {
      CAPTURE(rows);
      CAPTURE(columns);
      CAPTURE(split_k_mode_name(mode));
      Gemm g = split_k_gemm(rows, columns, mode);
      Pipeline pipeline(g.out);
      for (auto [M, N, K] : kShapes) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(cpu_error(pipeline, M, N, K, Epilogue::BiasGelu) < 1e-5);
      }
    }
  // The printed nest keeps the short names where nothing is hidden.
  Gemm plain = split_k_gemm("bi", "rj", SplitKMode::Deterministic);
  std::string nest = Pipeline(plain.out).loop_nest();
  CHECK_HAS(nest, "let last = last_arrival(acc.tile_counters[bi, bj], 3)");
  CHECK_HAS(nest, "for kz_sum in serial(1, 2):");
}

TEST_CASE("a Param named like a hoisted load keeps its value") {
  // hoist_loads named its lets A_v0, A_v1, ...: with N called A_v0 the
  // second let's index read the first let (a float) as N, an internal
  // error (LLVM rejected the module).
  for (const char *name : {"N", "A_v0", "A_v3"}) {
    CAPTURE(name);
    Param N(name);
    Input A("A", Float(32), {2, N});
    Var i("i"), j("j");
    Func out("out");
    out(i, j) = A(i, j % N) * 2.0f; // j % N: proven inside A for the 2 x 3 domain
    out.bound(i, 2).bound(j, 3).unroll(i).unroll(j);
    Buffer a({2, 3}), o({2, 3});
    a.fill_random(1);
    o.poison();
    Pipeline(out).realize_on_cpu({{"A", a}, {name, 3}}, o);
    for (size_t e = 0; e < o.size(); ++e)
      CHECK(o.get(e) == 2.0f * a.get(e));
  }
}

TEST_CASE("a Func stored in shared memory inside a thread loop is refused: the block's threads would share it") {
  using coalesce::testing::user_error_of;
  // out = acc + scale, 16 x 16 tiles of 8 x 8 threads (2 x 2 each); scale at
  // the thread loop ti in shared memory was one [tj][ri][rj] tile per block
  // that all eight ti threads wrote with their own rows, while the CPU run
  // (each ti in turn) was right.
  auto scheduled = [](const char *site, MemoryType memory) {
    Gemm g = make_gemm(Epilogue::None);
    Func scale("scale"), out("out2");
    scale(g.i, g.j) = g.bias(g.j) + cast(Float(32), g.i);
    out(g.i, g.j) = g.acc(g.i, g.j) + scale(g.i, g.j);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(g.acc, bj);
    scale.compute_at(out, Var(site)).store_in(memory);
    return out;
  };
  const char *refusal = "'scale' is stored in shared memory, which a GPU block holds once for all its threads, but "
                        "it is computed inside thread loop 'ti' of 'out2' (thread y)";
  Func at_ti = scheduled("ti", MemoryType::Shared), at_tj = scheduled("tj", MemoryType::Shared),
       at_ri = scheduled("ri", MemoryType::Shared);
  CHECK_HAS(user_error_of([&] { Pipeline(at_ti).loop_nest(); }), refusal);
  CHECK_HAS(user_error_of([&] { Pipeline(at_tj).loop_nest(); }), refusal);
  CHECK_HAS(user_error_of([&] { Pipeline(at_ri).loop_nest(); }), refusal);
  // The same for the reduction itself.
  Gemm g = make_gemm(Epilogue::BiasGelu);
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16)
      .gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
      .gpu_threads({ti, tj});
  g.acc.compute_at(g.out, tj).store_in(MemoryType::Shared);
  CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "'acc' is stored in shared memory");
  // Legal: shared at the block loop (one tile per block, each thread its own
  // part), or registers at a thread loop.
  for (auto [site, memory] : std::vector<std::pair<const char *, MemoryType>>{{"bj", MemoryType::Shared},
                                                                              {"ti", MemoryType::Register}}) {
    CAPTURE(site);
    Func out = scheduled(site, memory);
    Pipeline pipeline(out);
    for (auto [M, N, K] : kShapes) {
      GemmData data = make_data(M, N, K, 3);
      Buffer o({M, N});
      o.poison();
      pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::Bias), o);
      Buffer want = reference(data, M, N, K, Epilogue::Bias);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
          want(i, j) += static_cast<float>(i);
      CHECK(relative_error(o, want) < 1e-5);
    }
  }
}

TEST_CASE("split_k's slice loop takes no name of a Param, Input, Func or staging buffer") {
  using coalesce::testing::user_error_of;
  // check_names knew the loops of the stages, not the slice loop split_k
  // adds: split_k(acc, k, K, 3) made a block loop named like the Param K.
  auto split_into = [](const char *slice) {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ii, jj});
    g.out.fuse_epilogue(g.acc, bj);
    g.acc.update().allow_reassociation();
    g.out.split_k(g.acc, g.k, Var(slice), 3);
    return g;
  };
  Gemm param = split_into("K"), input = split_into("bias"), func = split_into("acc"), staging = split_into("A_shared");
  CHECK_HAS(user_error_of([&] { Pipeline(param.out).loop_nest(); }),
            "the loop 'K' of Func 'out' has the name of the Param 'K'");
  CHECK_HAS(user_error_of([&] { Pipeline(input.out).loop_nest(); }),
            "the loop 'bias' of Func 'out' has the name of the Input 'bias'");
  CHECK_HAS(user_error_of([&] { Pipeline(func.out).loop_nest(); }),
            "the loop 'acc' of Func 'out' has the name of the Func 'acc'");
  CHECK_HAS(user_error_of([&] { Pipeline(staging.out).loop_nest(); }),
            "the loop 'A_shared' of Func 'out' has the name Coalesce gives the shared-memory copy of Input 'A'");
  // A new name still splits, and sums right.
  Gemm fine = split_into("kz");
  Pipeline pipeline(fine.out);
  for (auto [M, N, K] : kShapes) {
    CAPTURE(M);
    CAPTURE(K);
    CHECK(cpu_error(pipeline, M, N, K, Epilogue::BiasGelu) < 1e-5);
  }
}

TEST_CASE("gpu_block_groups over a split reduction names the slice loop it cannot group") {
  // The message said "loop 'bi' is gpu_block y around 'bj' (x)": the very
  // pair it asks for, without the third block loop that made it refuse.
  GemmTiling t;
  t.block_m = t.block_n = 32;
  t.threads_m = t.threads_n = 8;
  t.split_k = 3;
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  g.out.gpu_block_groups(2);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); }),
            "loop 'bi' is gpu_block y around 'bj' (x), which is around block loop 'kz' (z), a third block loop "
            "(split_k adds one for its slices)");
}

TEST_CASE("a Buffer made without a shape, passed as an input or the output, is named as such") {
  using coalesce::testing::user_error_of;
  // The message read "input buffer 'A' has shape  but the pipeline needs ...".
  Gemm g = make_gemm(Epilogue::BiasGelu);
  Pipeline pipeline(g.out);
  GemmData data = make_data(3, 3, 3, 1);
  Buffer none, out({3, 3});
  Arguments args = gemm_arguments(data, 3, 3, 3, Epilogue::BiasGelu);
  args.erase("A");
  args.emplace("A", none);
  CHECK_HAS(user_error_of([&] { pipeline.realize_on_cpu(args, out); }),
            "input buffer 'A' has no shape (a Buffer made without one) but the pipeline needs M x K = 3 x 3");
  CHECK_HAS(user_error_of([&] { pipeline.realize_on_cpu(gemm_arguments(data, 3, 3, 3, Epilogue::BiasGelu), none); }),
            "output buffer 'out' has no shape (a Buffer made without one) but the pipeline needs M x N = 3 x 3");
}

namespace {

// out = A B over k in [k_min, k_min + K), bf16 in and out, A of M x
// (K + a_extra) and B of (K + b_extra) x N, on the warp MMA's tiles.
Gemm offset_gemm(int k_min, int a_extra, int b_extra) {
  Param M("M"), N("N"), K("K");
  Gemm g{M, N, K,
         Input("A", BFloat(16), {M, K + a_extra}),
         Input("B", BFloat(16), {K + b_extra, N}),
         Input("bias", Float(32), {N}),
         Var("i"), Var("j"), RDom(k_min, K, "k"), Func("acc"), Func("out"), Epilogue::None, BFloat(16),
         BFloat(16)};
  g.acc(g.i, g.j) = 0.0f;
  g.acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j);
  g.out(g.i, g.j) = cast(BFloat(16), g.acc(g.i, g.j));
  g.out.bound(g.j, N);
  return g;
}

} // namespace

TEST_CASE("a tensor-core reduction that ends before its inputs do along k is refused: its last step would add them") {
  // zero_fill makes the last k step's overhang 0 past the input's end
  // only: with A K + 8 wide under a reduction over [0, K), columns
  // K .. K + 7 were added (relative error 0.2 to 6 at ragged shapes).
  for (MmaKind kind : {MmaKind::BF16_m16n8k16, MmaKind::BF16_wgmma_m64k16}) {
    CAPTURE(mma_kind_name(kind));
    Gemm g = offset_gemm(0, 8, 3);
    MmaTiling t = default_mma_tiling(kind, 64, 64, 132);
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); }),
              "those elements read as 0 only past the input's; 'A' extends to K + 8 along k (dimension 1)");
  }
}

TEST_CASE("a tensor-core reduction starting past column 0 copies its tiles element by element where they are not "
          "16-byte aligned") {
  // RDom(3, K): each tile starts at column 3 + 32 ko, so the 16-byte
  // copies (taken where K + 3 is a multiple of 8) read from a clamped,
  // shifted column (relative error 0.4 to 1.2 at 17 x 15 before).
  Gemm g = offset_gemm(3, 3, 3);
  MmaTiling t = default_mma_tiling(MmaKind::BF16_m16n8k16, 64, 64, 132);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  Pipeline pipeline(g.out);
  for (int K : {5, 13, 4, 1, 3}) {
    CAPTURE(K);
    const int M = 17, N = 15, W = K + 3;
    Buffer a({M, W}, BFloat(16)), b({W, N}, BFloat(16)), out({M, N}, BFloat(16));
    a.fill_random(11);
    b.fill_random(12);
    out.poison();
    pipeline.realize_on_cpu({{"A", a}, {"B", b}, {"M", M}, {"N", N}, {"K", K}}, out);
    double worst = 0, scale = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double sum = 0;
        for (int k = 3; k < W; ++k)
          sum += double(a.get(i * W + k)) * double(b.get(k * N + j));
        worst = std::max(worst, std::abs(double(out.get(i * N + j)) - sum));
        scale = std::max(scale, std::abs(sum));
      }
    CHECK(worst <= 1e-2 * std::max(scale, 1.0)); // one bf16 rounding of the sum
  }
}
