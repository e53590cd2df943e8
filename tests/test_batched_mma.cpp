// A batch of products on tensor cores: out(b, i, j) = gelu(sum over k of
// A(b, i, k) * B(b, k, j) + bias(j)), the batch an outer block dimension.
// Either operand may lack the batch (a batch stride of 0: one weight for
// the whole batch, or one A for many weights), and B may be stored N x K
// (nn.Linear's weight). On the CPU, which runs the statements the GPU runs:
// each product of the batch gives the bits of the same schedule on that
// product alone, at ragged shapes and the K = 0 / 1 / 3 cases, and one case
// against the double reference; the legality rules; the refusal for a GPU
// until the GPU check has run it; the PTX assembled by ptxas.

#include "AssembledCleanly.h"
#include "BatchedReference.h"
#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

using examples::BatchedGemm;
using examples::BatchedOperands;

/// How a case copies its tiles onto which instruction.
enum class Path { WarpMma, WarpgroupAsync, WarpgroupTma };

const char *path_name(Path p) {
  switch (p) {
  case Path::WarpMma: return "warp MMA";
  case Path::WarpgroupAsync: return "warpgroup MMA, cp.async copies";
  case Path::WarpgroupTma: return "warpgroup MMA, TMA copies";
  }
  return "";
}

MmaTiling tiling(Path path, MmaKind kind) {
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, 132);
  if (path != Path::WarpMma)
    t.tma = path == Path::WarpgroupTma;
  return t;
}

struct Shape {
  int batch, M, N, K;
};

/// Runs the batched product and each product alone on the CPU, both
/// scheduled with `t`; every element of the batch has the bits of its
/// product alone.
void check_against_each_product(const MmaTiling &t, BatchedOperands o, const Shape &s) {
  INFO(t.str(), ", ", examples::batched_operands_name(o), ", ", s.batch, " x ", s.M, " x ", s.N, " x ", s.K);
  Type in = mma_instruction(t.kind).operand;
  BatchedGemm batched(in, BFloat(16), o), alone(in, BFloat(16), o, false);
  batched.schedule_mma(t);
  alone.schedule_mma(t);
  coalesce::testing::check_each_product_alone(batched, alone, in, BFloat(16), s.batch, s.M, s.N, s.K);
}

void check_against_each_product(Path path, MmaKind kind, BatchedOperands o, const Shape &s) {
  INFO(path_name(path));
  check_against_each_product(tiling(path, kind), o, s);
}

/// `path`'s tiling on a persistent grid of `blocks` blocks. The output's
/// tile in shared memory no longer takes the slots' bytes there (a block's
/// next tile may need them): fit_output_tile_beside_stages leaves room for
/// it (three stages, the values' tile rather than the sums').
MmaTiling persistent(Path path, MmaKind kind, int blocks) {
  MmaTiling t = tiling(path, kind);
  t.persistent_blocks = blocks;
  t.stages = std::min(t.stages, 3);
  stage_values_where_sums_do_not_fit(t);
  fit_output_tile_beside_stages(t);
  return t;
}

/// The TMA's tiling on a persistent grid of `blocks` whose producer
/// warpgroup keeps 40 registers: its pipeline runs across the block's
/// tiles, the batch's included, and the producers leave after the last.
MmaTiling persistent_with_producers(int blocks) {
  MmaTiling t = persistent(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16, blocks);
  t.block_n = t.warp_n = 256;
  t.min_blocks_per_sm = 1;
  t.stages = 4;
  t.producer_warps = 4;
  t.producer_registers = 40;
  t.tile_stores = TileStores::Direct; // four stages leave no room for the tile
  return t;
}

} // namespace

TEST_CASE("each product of a batch on tensor cores has the bits of that product alone") {
  const Shape ragged{3, 70, 75, 37};
  for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                            BatchedOperands::SharedWeightsNK}) {
    check_against_each_product(Path::WarpMma, MmaKind::BF16_m16n8k16, o, ragged);
    check_against_each_product(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16, o, ragged);
  }
  // The TMA reads rows of whole 16-byte vectors (K and N multiples of 8
  // here); its boxes are 1 x rows x columns of the batch's input.
  for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::SharedA, BatchedOperands::SharedWeightsNK})
    check_against_each_product(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16, o, {3, 70, 264, 72});
  // Rows the TMA cannot describe take the cp.async copies at run time.
  check_against_each_product(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16, BatchedOperands::Both, ragged);
  check_against_each_product(Path::WarpMma, MmaKind::TF32_m16n8k8, BatchedOperands::Both, ragged);
  // tf32's TMA copies read padded copies of 2-D inputs: a batch takes
  // the cp.async copies instead (the recipe's choice).
  check_against_each_product(Path::WarpgroupTma, MmaKind::TF32_wgmma_m64k8, BatchedOperands::Both, ragged);
  check_against_each_product(Path::WarpgroupAsync, MmaKind::TF32_wgmma_m64k8, BatchedOperands::BothWeightsNK, ragged);
  check_against_each_product(Path::WarpgroupAsync, MmaKind::F16_wgmma_m64k16, BatchedOperands::Both, {2, 130, 264, 70});
}

TEST_CASE("a batch's epilogue runs once per element, after its whole reduction (K = 0 / 1 / 3)") {
  for (int K : {0, 1, 3}) {
    check_against_each_product(Path::WarpMma, MmaKind::BF16_m16n8k16, BatchedOperands::Both, {2, 33, 40, K});
    check_against_each_product(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16, BatchedOperands::SharedWeightsNK,
                               {2, 33, 40, K});
  }
}

TEST_CASE("a batch on tensor cores against the double reference") {
  BatchedGemm p(BFloat(16), Float(32), BatchedOperands::BothWeightsNK);
  p.schedule_mma(tiling(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16));
  // f32 sums of 45 exact products, in the instruction's order.
  CHECK(coalesce::testing::batched_error_against_double(p, BFloat(16), 3, 67, 72, 45) < 1e-4);
}

TEST_CASE("a batch's rules: the instruction's tile on the last two dimensions, batch variables before") {
  MmaTiling t = tiling(Path::WarpMma, MmaKind::BF16_m16n8k16);
  Param batch("Batch"), M("M"), N("N"), K("K");
  Var b("b"), i("i"), j("j");
  RDom k(0, K, "k");
  SUBCASE("an operand indexed by the batch after its own two") {
    Input A("A", BFloat(16), {M, K, batch}), B("B", BFloat(16), {batch, K, N});
    Func acc("acc"), out("out");
    acc(b, i, j) = 0.0f;
    acc(b, i, j) += A(i, k, b) * B(b, k, j);
    out(b, i, j) = acc(b, i, j);
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
    CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); }),
              "does not read its inputs as A(i, k) or A(k, i) and B(k, j)");
  }
  SUBCASE("an operand that reads the batch variable in another place than the output's") {
    Input A("A", BFloat(16), {batch, M, K}), B("B", BFloat(16), {batch, K, N});
    Func acc("acc"), out("out");
    acc(b, i, j) = 0.0f;
    acc(b, i, j) += A(i, i, k) * B(b, k, j);
    out(b, i, j) = acc(b, i, j);
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
    CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); }), "does not read its inputs");
  }
  SUBCASE("the instruction's rows along the batch") {
    Input A("A", BFloat(16), {batch, M, K}), B("B", BFloat(16), {batch, K, N});
    Func acc("acc"), out("out");
    acc(b, i, j) = 0.0f;
    acc(b, i, j) += A(b, i, k) * B(b, k, j);
    out(b, i, j) = acc(b, i, j);
    // The tile over (b, j), i outside it.
    schedule_gemm_mma(out, acc, A, B, b, j, k, t);
    std::string message = coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); });
    CHECK_HAS(message, "must be the last two dimensions, 'i' and 'j'");
  }
  SUBCASE("two batch dimensions: the recipe asks for one") {
    Param heads("Heads");
    Var h("h");
    Input A("A", BFloat(16), {batch, heads, M, K}), B("B", BFloat(16), {batch, heads, K, N});
    Func acc("acc"), out("out");
    acc(b, h, i, j) = 0.0f;
    acc(b, h, i, j) += A(b, h, i, k) * B(b, h, k, j);
    out(b, h, i, j) = acc(b, h, i, j);
    CHECK_HAS(coalesce::testing::user_error_of([&] { schedule_gemm_mma(out, acc, A, B, i, j, k, t); }),
              "has 2 batch dimensions before 'i'");
  }
}

TEST_CASE("the TMA's padded copies of a batch's 3-D input are refused, naming the input") {
  BatchedGemm p(BFloat(16), BFloat(16), BatchedOperands::Both);
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  p.out.tile(p.i, p.j, bi, bj, ii, jj, 128, 128)
      .gpu_blocks({p.b, bi, bj})
      .mma_tile(ii, jj, MmaKind::BF16_wgmma_m64k16, 64, 128, warp, lane, mi, nj, fi, fj);
  p.out.fuse_epilogue(p.acc, bj);
  TmaCopies tma;
  tma.stages = 3;
  tma.padded_copy = PaddedCopy::Always;
  RVar ko("ko"), kk("kk");
  p.acc.update()
      .mma(p.k, ko, kk, 64)
      .allow_reassociation()
      .stage_in_shared(p.A, ko, {}, tma)
      .stage_in_shared(p.B, ko, {}, tma);
  std::string message = coalesce::testing::user_error_of([&] { Pipeline(p.out).loop_nest(); });
  CHECK_HAS(message,
            "'A' is staged with TmaCopies with PaddedCopy::Always, whose copy kernel pads the rows of a 2-D input");
  CHECK_HAS(message, "'A' has 3 dimensions (a batch)");
}

TEST_CASE("for a GPU a batch on tensor cores is the grid's z, each block's sums staged in shared memory") {
  BatchedGemm p(BFloat(16), BFloat(16), BatchedOperands::Both);
  MmaTiling t = tiling(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16);
  REQUIRE(t.tile_stores == TileStores::SumsThroughShared);
  p.schedule_mma(t);
  Pipeline pipeline(p.out);
  // The tile is the last two dimensions; the copy stores at the block's b.
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "allocate acc_tile[128][264] f32 in shared");
  CHECK_HAS(nest, "out[b, bi*128 + flat/32, bj*256 + (warp*32 + lane) % 32*8] = load_vector(out_tile.vector[0], 8)");
  std::string ptx = pipeline.ptx();
  CHECK(ptx.find("%ctaid.z") != std::string::npos);
  CHECK(ptx.find("st.global.v4.b32") != std::string::npos);
}

TEST_CASE("a batch's default tiling counts the blocks of every product") {
  const MmaKind kind = MmaKind::BF16_wgmma_m64k16;
  // One 512 x 512 product fills the GPU only with small tiles; 64 of them
  // fill it with the widest.
  MmaTiling one = default_mma_tiling(kind, 512, 512, 512, 132);
  MmaTiling batch = default_batched_mma_tiling(kind, 64, 512, 512, 512, 132);
  CHECK(one.block_m * one.block_n < 128 * 256);
  CHECK(batch.block_m == 128);
  CHECK(batch.block_n == 256);
  CHECK(batch.tile_stores == TileStores::SumsThroughShared);
  CHECK(batch.split_k == 1);
  CHECK_FALSE(batch.groups_blocks());
  // A batch of one is the product's own tile.
  MmaTiling single = default_batched_mma_tiling(kind, 1, 512, 512, 512, 132);
  CHECK(single.block_m == default_mma_tiling(kind, 512, 512, 132).block_m);
  CHECK(single.block_n == default_mma_tiling(kind, 512, 512, 132).block_n);
  // Rows the TMA cannot read take its padded copies' flag, which the
  // recipe turns into cp.async copies for a batch.
  CHECK(default_batched_mma_tiling(kind, 4, 512, 512, 100, 132).tma_padded_copies == PaddedCopies::Both);
}

TEST_CASE("a persistent grid walks a batch's tiles: each product has the bits of that product alone") {
  // 3 products of 1 x 2 tiles (128 x 256 at 70 x 264; 128 x 128 ...): a
  // grid of fewer blocks than tiles walks several, each into the next
  // product; more blocks than tiles leave some without a tile.
  const Shape aligned{3, 70, 264, 72}, ragged{3, 70, 75, 37};
  for (int blocks : {2, 5, 1000}) {
    CAPTURE(blocks);
    check_against_each_product(persistent(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16, blocks),
                               BatchedOperands::Both, aligned);
    check_against_each_product(persistent(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16, blocks),
                               BatchedOperands::SharedWeightsNK, ragged);
    check_against_each_product(persistent(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16, blocks),
                               BatchedOperands::SharedA, ragged);
    check_against_each_product(persistent(Path::WarpMma, MmaKind::BF16_m16n8k16, blocks), BatchedOperands::Both,
                               ragged);
    // Producer warps: one pipeline across the block's tiles of every
    // product; rows the TMA cannot read take the cp.async copies.
    check_against_each_product(persistent_with_producers(blocks), BatchedOperands::Both, aligned);
    check_against_each_product(persistent_with_producers(blocks), BatchedOperands::SharedA, ragged);
  }
  // In clusters of two block rows sharing B's tiles: the clusters walk the
  // (product, row pair, column) tiles together, each product's odd row of
  // blocks in a cluster with one past its rows.
  for (int blocks : {2, 6}) {
    CAPTURE(blocks);
    MmaTiling clustered = persistent_with_producers(blocks);
    clustered.cluster_blocks = 2;
    check_against_each_product(clustered, BatchedOperands::Both, aligned);
    check_against_each_product(clustered, BatchedOperands::Both, {3, 200, 264, 136});
  }
}

TEST_CASE("on a persistent grid a batch's epilogue runs once per element, after its whole reduction (K = 0 / 1 / 3)") {
  for (int K : {0, 1, 3}) {
    check_against_each_product(persistent(Path::WarpgroupAsync, MmaKind::BF16_wgmma_m64k16, 3),
                               BatchedOperands::SharedWeightsNK, {3, 33, 40, K});
    check_against_each_product(persistent_with_producers(4), BatchedOperands::Both, {3, 33, 40, K});
  }
}

TEST_CASE("a persistent grid over a batch: the nest walks tile t of the order over (product, row, column)") {
  BatchedGemm p(BFloat(16), BFloat(16), BatchedOperands::Both);
  p.schedule_mma(persistent_with_producers(132));
  Pipeline pipeline(p.out);
  // Tile t of the row-major order over (product, row, column).
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "for b_persistent in gpu_block.x(0, min(Batch*(ceil(M/128)*(ceil(N/256))), 132)):");
  CHECK_HAS(nest, "let b = tile_index/(ceil(M/128)*(ceil(N/256)))");
  CHECK_HAS(nest, "let bi = tile_index/(ceil(N/256)) % (ceil(M/128))");
  CHECK_HAS(nest, "let bj = tile_index % (ceil(N/256))");
  // Its barriers count over the block's tiles: one pipeline across them.
  CHECK_HAS(nest, "b_tile*(ceil(K/64))");
}

namespace {

/// The strided batch (A and B views) against the same schedule on dense
/// copies: the same bits.
void check_strided_batch(Path path, BatchedOperands o, const Shape &s, const examples::BatchStrides &strides) {
  INFO(path_name(path), ", ", examples::batched_operands_name(o), ", ", s.batch, " x ", s.M, " x ", s.N, " x ", s.K,
       ", A rows ", strides.lda, " and products ", strides.stride_a, " apart, B ", strides.ldb, " and ",
       strides.stride_b);
  MmaTiling t = tiling(path, MmaKind::BF16_wgmma_m64k16);
  if (path == Path::WarpMma)
    t = tiling(path, MmaKind::BF16_m16n8k16);
  BatchedGemm views(BFloat(16), BFloat(16), o, true, true), dense(BFloat(16), BFloat(16), o);
  views.schedule_mma(t);
  dense.schedule_mma(t);
  Buffer a(views.a_shape(s.batch, s.M, s.K), BFloat(16)), b(views.b_shape(s.batch, s.N, s.K), BFloat(16));
  a.fill_random(61);
  b.fill_random(62);
  Buffer a_view = examples::strided_view(a, strides.stride_a, strides.lda),
         b_view = examples::strided_view(b, strides.stride_b, strides.ldb);
  Buffer bias({s.N});
  bias.fill_random(63);
  Buffer got(views.out_shape(s.batch, s.M, s.N), BFloat(16)), want(views.out_shape(s.batch, s.M, s.N), BFloat(16));
  got.poison();
  want.poison();
  Pipeline(views.out).realize_on_cpu(views.arguments(a_view, b_view, bias, s.batch, s.M, s.N, s.K, strides), got);
  Pipeline(dense.out).realize_on_cpu(dense.arguments(a, b, bias, s.batch, s.M, s.N, s.K), want);
  CHECK(coalesce::testing::same_bits(got, want));
}

} // namespace

TEST_CASE("a strided batch (A and B views, products and rows apart) has the bits of its dense copy") {
  // Rows of whole 16-byte vectors, products apart by a multiple of them
  // (the TMA describes them), and not (the cp.async copies at run time).
  const Shape s{3, 70, 136, 72};
  for (Path path : {Path::WarpMma, Path::WarpgroupAsync, Path::WarpgroupTma})
    for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                              BatchedOperands::SharedWeightsNK}) {
      const bool nk = o == BatchedOperands::BothWeightsNK || o == BatchedOperands::SharedWeightsNK;
      const int b_rows = nk ? s.N : s.K, b_lead = (nk ? s.K : s.N) + 8;
      check_strided_batch(path, o, s, {s.M * (s.K + 8) + 64, s.K + 8, b_rows * b_lead + 24, b_lead});
      check_strided_batch(path, o, s, {s.M * (s.K + 3) + 5, s.K + 3, b_rows * (b_lead + 1) + 7, b_lead + 1});
    }
  // K = 1 / 3: the epilogue once, after the whole reduction.
  for (int K : {1, 3})
    check_strided_batch(Path::WarpgroupTma, BatchedOperands::Both, {2, 33, 40, K}, {33 * 16 + 8, 16, K * 48, 48});
}

TEST_CASE("a strided batch's kernel reads its views through 3-D tensor maps and assembles cleanly") {
  BatchedGemm views(BFloat(16), BFloat(16), BatchedOperands::Both, true, true);
  views.schedule_mma(tiling(Path::WarpgroupTma, MmaKind::BF16_wgmma_m64k16));
  Pipeline pipeline(views.out);
  if (!ptxas_available())
    return;
  std::string ptx = pipeline.ptx();
  CHECK(ptx.find("cp.async.bulk.tensor.3d") != std::string::npos);
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("a batch's kernels assemble cleanly with ptxas") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  for (Path path : {Path::WarpMma, Path::WarpgroupAsync, Path::WarpgroupTma}) {
    INFO(path_name(path));
    MmaKind kind = path == Path::WarpMma ? MmaKind::BF16_m16n8k16 : MmaKind::BF16_wgmma_m64k16;
    BatchedGemm p(BFloat(16), BFloat(16), BatchedOperands::SharedWeightsNK);
    p.schedule_mma(tiling(path, kind));
    Pipeline pipeline(p.out);
    if (path == Path::WarpgroupTma) {
      // A's boxes are 1 x rows x columns of the batch; the one W's are 2-D.
      std::string ptx = pipeline.ptx();
      CHECK(ptx.find("cp.async.bulk.tensor.3d") != std::string::npos);
      CHECK(ptx.find("cp.async.bulk.tensor.2d") != std::string::npos);
    }
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
  // On a persistent grid with producer warps that reallocate registers.
  BatchedGemm p(BFloat(16), BFloat(16), BatchedOperands::SharedWeightsNK);
  p.schedule_mma(persistent_with_producers(132));
  Pipeline pipeline(p.out);
  CHECK(pipeline.ptx().find("setmaxnreg.dec") != std::string::npos);
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}
