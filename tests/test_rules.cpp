// The rules a schedule cannot break (docs/schedule_language.md), each checked
// as one general property: names, all-or-nothing primitives, 32-bit sizes,
// aliasing, valid GPU targets, long loop names, reads inside an Input's
// extents, NaN through relu. Each test fails without the check it names.

#include <doctest/doctest.h>
#include <set>

#include "dsl/FuncContents.h"
#include "codegen/GpuTarget.h"
#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "runtime/Pipeline.h"
#include "scheduler/Lower.h"

#include <climits>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "ErrorCapture.h"
#include "ScheduleText.h"

using namespace coalesce;
using testing::schedule_text;
using testing::user_error_of;

namespace {

// C = relu(A*B + bias), as two Funcs; `out_name` names the output.
struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func acc{"acc"}, out;

  explicit Gemm(const std::string &out_name = "out") : out(out_name) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = relu(acc(i, j) + bias(j));
  }

  void schedule_fused(int tile = 16, int rb = 2, int kstep = 4) {
    out.tile(i, j, bi, bj, ii, jj, tile, tile)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, rb, rb)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update().split(k, ko, ki, kstep).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
    acc.update().stage_in_shared(A, ko).stage_in_shared(B, ko);
  }
};

// Deterministic small values.
Buffer filled(std::vector<int> shape, int seed) {
  Buffer b(std::move(shape));
  for (size_t e = 0; e < b.size(); ++e)
    b.data()[e] = static_cast<float>(static_cast<int>((e * 7 + seed * 13) % 11) - 5) / 4.0f;
  return b;
}

// relu(A*B + bias), computed plainly.
Buffer reference(const Buffer &A, const Buffer &B, const Buffer &bias, int M, int N, int K) {
  Buffer out({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = 0;
      for (int k = 0; k < K; ++k)
        sum += A(i, k) * B(k, j);
      out(i, j) = std::max(sum + bias.data()[j], 0.0f);
    }
  return out;
}

float max_difference(const Buffer &a, const Buffer &b) {
  float worst = 0;
  for (size_t e = 0; e < a.size(); ++e)
    worst = std::isnan(a.data()[e]) || std::isnan(b.data()[e]) ? INFINITY
                                                               : std::max(worst, std::fabs(a.data()[e] - b.data()[e]));
  return worst;
}

// Runs the GEMM on the CPU at M x N x K and returns the largest difference
// from the reference.
float run_gemm(Gemm &g, int M, int N, int K) {
  Buffer A = filled({M, K}, 1), B = filled({K, N}, 2), bias = filled({N}, 3), out({M, N});
  for (size_t e = 0; e < out.size(); ++e)
    out.data()[e] = std::numeric_limits<float>::quiet_NaN();
  Pipeline(g.out).realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}}, out);
  return max_difference(out, reference(A, B, bias, M, N, K));
}

} // namespace

// ------------------------------------------- 2: all-or-nothing primitives

TEST_CASE("a schedule primitive that raises a UserError leaves every schedule as it was") {
  Gemm g;
  g.schedule_fused();
  std::string acc_before = schedule_text(g.acc), out_before = schedule_text(g.out);
  std::string nest_before = Pipeline(g.out).loop_nest();

  // A second fuse_epilogue (which would re-place acc) at a loop out lacks.
  user_error_of([&] { g.out.fuse_epilogue(g.acc, Var("nowhere")); });
  CHECK(schedule_text(g.acc) == acc_before);
  // tile splits x, then fails on y's factor.
  user_error_of([&] { g.acc.update().tile(g.ki, g.ri, Var("x1"), Var("x2"), Var("x3"), Var("x4"), 2, 0); });
  CHECK(schedule_text(g.acc) == acc_before);
  // register_block splits and reorders before it finds an unknown loop.
  user_error_of([&] { g.out.register_block(g.ri, g.bj, Var("a1"), Var("a2"), Var("a3"), Var("a4"), 1, 2); });
  CHECK(schedule_text(g.out) == out_before);
  // gpu_threads maps the first loop before it finds the second is unknown.
  user_error_of([&] { g.out.gpu_threads({g.ri, Var("nowhere")}); });
  CHECK(schedule_text(g.out) == out_before);
  // compute_at of acc at a loop that out does not have.
  user_error_of([&] { g.acc.compute_at(g.out, Var("nowhere")); });
  CHECK(schedule_text(g.acc) == acc_before);

  CHECK(schedule_text(g.out) == out_before);
  CHECK(Pipeline(g.out).loop_nest() == nest_before);
  CHECK(run_gemm(g, 37, 35, 13) < 1e-4f);
}

TEST_CASE("a rejected pure definition leaves the Func undefined") {
  Var i("i");
  Func f("f");
  user_error_of([&] { f(i, i) = 1.0f; });
  CHECK_FALSE(f.contents()->defined);
  CHECK(f.contents()->pure_vars.empty());
}

// ------------------------------------------------- 3: 32-bit arithmetic

TEST_CASE("split factors over 2^30 are rejected, naming the limit") {
  Param N("N");
  Input A("A", Float(32), {N});
  Var i("i"), io("io"), ii("ii");
  Func out("out");
  out(i) = A(i);
  std::string message = user_error_of([&] { out.split(i, io, ii, INT_MAX); });
  CHECK_HAS(message, "split of 'i' by 2147483647");
  CHECK_HAS(message, "at most 2^30");
  // The schedule is unchanged and still runs.
  Buffer a = filled({5}, 1), o({5});
  Pipeline(out).realize_on_cpu({{"A", a}, {"N", 5}}, o);
  CHECK(max_difference(o, a) == 0);
}

TEST_CASE("extents and element counts over 2^30 are rejected before anything runs") {
  Gemm g;
  Buffer A({1, 1}), B({1, 1}), bias({1}), out({1, 1});
  std::string message = user_error_of([&] {
    Pipeline(g.out).realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", 2147483600}, {"N", 1}, {"K", 1}}, out);
  });
  CHECK_HAS(message, "extent 2147483600 (M)");
  CHECK_HAS(message, "at most 2^30");
  // Each extent fits, their product does not.
  message = user_error_of([&] {
    Pipeline(g.out).realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", 1 << 16}, {"N", 1}, {"K", 1 << 16}},
                                   out);
  });
  CHECK_HAS(message, "buffer 'A' would have M x K = 4294967296 elements");
  CHECK_HAS(message, "at most 2^30");
}

// --------------------------------------------------------- 4: aliasing

TEST_CASE("an output buffer that is also an input is rejected") {
  Param M("M"), N("N");
  Input A("A", Float(32), {M, N});
  Var i("i"), j("j");
  Func out("out");
  out(i, j) = A(i, j) * 2.0f;
  Buffer buffer = filled({4, 4}, 1);
  std::string message =
      user_error_of([&] { Pipeline(out).realize_on_cpu({{"A", buffer}, {"M", 4}, {"N", 4}}, buffer); });
  CHECK_HAS(message, "the output buffer 'out' overlaps input buffer 'A'");
  CHECK_HAS(message, "shares no memory");
}

// ------------------------------------------------------- 5: GPU targets

// A target for an architecture LLVM cannot compile for can no longer be
// written: only the default and GpuTarget::parse make one.
static_assert(!std::is_constructible_v<GpuTarget, std::string>);
static_assert(!std::is_constructible_v<GpuTarget, const char *>);
static_assert(!std::is_aggregate_v<GpuTarget>);

TEST_CASE("the MMA instruction table: each kind is found from its operand type and level, and names its facts") {
  const MmaKind kinds[] = {MmaKind::BF16_m16n8k16,         MmaKind::F16_m16n8k16,
                           MmaKind::TF32_m16n8k8,          MmaKind::BF16_wgmma_m64k16,
                           MmaKind::F16_wgmma_m64k16,      MmaKind::TF32_wgmma_m64k8,
                           MmaKind::E4M3_wgmma_m64k32,     MmaKind::E5M2_wgmma_m64k32,
                           MmaKind::TF32Truncated_m16n8k8, MmaKind::TF32Truncated_wgmma_m64k8};
  std::set<std::string> names;
  for (MmaKind kind : kinds) {
    const MmaInstruction &instruction = mma_instruction(kind);
    CAPTURE(instruction.name);
    // The type's instruction is the one that rounds (the truncating tf32
    // kinds are asked for by name).
    CHECK((mma_kind_for(instruction.operand, instruction.warpgroup) == kind) != mma_truncates_to_tf32(kind));
    CHECK(names.insert(instruction.name).second);
    CHECK(std::string(mma_kind_name(kind)) == instruction.name);
    CHECK(is_warpgroup_mma(kind) == (std::string(instruction.name).find("wgmma") != std::string::npos));
    CHECK(mma_reads_f32(kind) == (instruction.operand == Float(32)));
    CHECK(mma_reads_f32(kind) == (mma_rounds_to_tf32(kind) || mma_truncates_to_tf32(kind)));
    CHECK_FALSE((mma_rounds_to_tf32(kind) && mma_truncates_to_tf32(kind)));
    CHECK(mma_truncates_to_tf32(kind) == (std::string(instruction.name).find("truncated") != std::string::npos));
    // 32 bytes of each operand row per instruction.
    CHECK(mma_k(kind) * instruction.operand.bytes() == 32);
    CHECK(std::string(instruction.ptx_type) == (mma_reads_f32(kind) ? std::string("tf32") : instruction.operand.str()));
    // tf32's and the 8-bit floats' warpgroup MMAs have no transpose flag:
    // their B is read K-major.
    CHECK(warpgroup_mma_reads_b_k_major(kind) ==
          (kind == MmaKind::TF32_wgmma_m64k8 || kind == MmaKind::TF32Truncated_wgmma_m64k8 ||
           instruction.operand.is_fp8()));
  }
  CHECK(std::string(mma_kind_name(MmaKind::None)) == "none");
  CHECK_FALSE(is_warpgroup_mma(MmaKind::None));
  CHECK_HAS(user_error_of([] { mma_kind_for(Int(32), true); }), "no warpgroup MMA reads operands of type");
}

TEST_CASE("a target's capabilities come from its table, not from its name") {
  for (const char *name : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    CAPTURE(name);
    GpuTarget target = GpuTarget::parse(name);
    bool arch_specific = std::string(name) == "sm_90a";
    CHECK(target.has_warpgroup_mma() == arch_specific);
    CHECK(target.has_tma() == arch_specific);
    CHECK(target.has_clusters() == arch_specific);
    CHECK(target.is_hopper() == (std::string(name).rfind("sm_90", 0) == 0));
  }
}

TEST_CASE("GPU targets exist only valid") {
  CHECK(GpuTarget().sm() == "sm_90a");
  CHECK(GpuTarget::parse("sm_86").sm() == "sm_86");
  std::string message = user_error_of([] { GpuTarget::parse("sm_50"); });
  CHECK_HAS(message, "unknown GPU target 'sm_50'");
  CHECK_HAS(message, "sm_80, sm_86, sm_89, sm_90, sm_90a");
}

// ------------------------------------------------ 6: long qualified names

TEST_CASE("compute_at and fuse_epilogue work with long Func and loop names") {
  // "gemm_output.s0.tj" is past any short-string buffer: a reference to the
  // temporary that names the site used to dangle.
  Gemm g("gemm_output");
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 4, 4).split(g.jj, g.tj, g.rj, 2);
  g.acc.compute_at(g.out, g.tj);
  CHECK(run_gemm(g, 9, 11, 5) < 1e-4f);

  Gemm fused("a_rather_long_output_name");
  fused.schedule_fused();
  CHECK(run_gemm(fused, 37, 35, 13) < 1e-4f);
}

// ------------------------------------------------------------ 9: relu NaN

TEST_CASE("relu propagates NaN, as PyTorch's does") {
  Param N("N");
  Input A("A", Float(32), {N});
  Var i("i");
  Func out("out");
  out(i) = relu(A(i));
  Buffer a({4}), o({4});
  a.data()[0] = std::numeric_limits<float>::quiet_NaN();
  a.data()[1] = -2.0f;
  a.data()[2] = 3.0f;
  a.data()[3] = -std::numeric_limits<float>::quiet_NaN();
  Pipeline(out).realize_on_cpu({{"A", a}, {"N", 4}}, o);
  CHECK(std::isnan(o.data()[0]));
  CHECK(o.data()[1] == 0.0f);
  CHECK(o.data()[2] == 3.0f);
  CHECK(std::isnan(o.data()[3]));
}

TEST_CASE("a GEMM with a NaN input gives NaN through relu, in its row and column only") {
  Gemm g;
  g.schedule_fused();
  const int M = 20, N = 18, K = 7;
  Buffer A = filled({M, K}, 1), B = filled({K, N}, 2), bias = filled({N}, 3), out({M, N});
  A(3, 2) = std::numeric_limits<float>::quiet_NaN();
  Pipeline(g.out).realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}}, out);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      CHECK(std::isnan(out(i, j)) == (i == 3));
}

TEST_CASE("relu on the GPU is the NaN-propagating max") {
  Gemm g;
  g.schedule_fused();
  Pipeline pipeline(g.out);
  const std::string &ptx = pipeline.ptx();
  CHECK(ptx.find("max.NaN.f32") != std::string::npos);
}

// ------------------------------------------------------------ 1: names

TEST_CASE("a Var, RDom or split loop named like a Param, Input or Func is rejected, naming both") {
  {
    Param M("M"), N("N"), K("K");
    Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N});
    Var i("i"), j("j");
    RDom r(0, K, "K");
    Func acc("acc");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, r) * B(r, j);
    std::string message = user_error_of([&] { lower_loop_nest(acc); });
    CHECK_HAS(message, "the RDom 'K' of Func 'acc' has the name of the Param 'K'");
    CHECK_HAS(message, "unique among the pipeline's Params, Inputs, Funcs, Vars, RDoms and loops");
  }
  {
    Param M("M"), N("N");
    Input A("A", Float(32), {M, N});
    Var i("i"), j("N");
    Func out("out");
    out(i, j) = A(i, j);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "the Var 'N' of Func 'out' has the name of the Param 'N'");
  }
  {
    Param M("M"), K("K");
    Input A("A", Float(32), {M});
    Var i("i"), yi("yi"), named_k("K");
    Func out("out");
    out(i) = A(i) * cast(Float(32), K);
    out.split(i, named_k, yi, 4);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "the loop 'K' of Func 'out' has the name of the Param 'K'");
  }
  {
    Param M("M");
    Input A("A", Float(32), {M});
    Var i("i"), a("A");
    Func out("out");
    out(a) = A(a);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "the Var 'A' of Func 'out' has the name of the Input 'A'");
  }
}

TEST_CASE("a Func named like a staging buffer is rejected") {
  Gemm g("B_shared");
  g.schedule_fused();
  std::string message = user_error_of([&] { lower_loop_nest(g.out); });
  CHECK_HAS(message, "'B_shared' is the Func 'B_shared', but Coalesce names the shared-memory copy of Input 'B'");
  CHECK_HAS(message, "rename the Func 'B_shared'");
}

TEST_CASE("names are ASCII identifiers that start with a letter, for every kind") {
  CHECK_HAS(user_error_of([] { Func("_"); }), "invalid Func name '_'");
  CHECK_HAS(user_error_of([] { Func("__nv_erff"); }), "starts with a letter");
  CHECK_HAS(user_error_of([] { Input("in put", Float(32), {4}); }), "invalid Input name 'in put'");
  CHECK_HAS(user_error_of([] { Var("x.y"); }), "ASCII letters (a-z, A-Z), digits (0-9) and '_'");
  CHECK_HAS(user_error_of([] { RDom(0, 4, "_k"); }), "invalid RVar name '_k'");
  CHECK_HAS(user_error_of([] { Param("\xc3\xa9t\xc3\xa9"); }), "invalid Param name");
}

TEST_CASE("a Param named like a compiler temporary keeps its value") {
  // The staging copy's per-thread index is a let named flat; a Param of
  // that name used to be hidden by it inside the copy.
  Param M("M"), N("N"), K("flat");
  Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N}), bias("bias", Float(32), {N});
  Var i("i"), j("j"), bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj"), e("e");
  RDom k(0, K, "k");
  RVar ko("ko"), ki("ki");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = relu(acc(i, j) + bias(j));
  out.tile(i, j, bi, bj, ii, jj, 16, 16).gpu_blocks({bi, bj}).register_block(ii, jj, ti, tj, ri, rj, 2, 2)
      .gpu_threads({ti, tj});
  out.fuse_epilogue(acc, bj);
  acc.update().split(k, ko, ki, 4).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
  acc.update().stage_in_shared(A, ko).stage_in_shared(B, ko);
  const int m = 21, n = 19, kk = 9;
  Buffer a = filled({m, kk}, 1), b = filled({kk, n}, 2), c = filled({n}, 3), o({m, n});
  Pipeline(out).realize_on_cpu({{"A", a}, {"B", b}, {"bias", c}, {"M", m}, {"N", n}, {"flat", kk}}, o);
  CHECK(max_difference(o, reference(a, b, c, m, n, kk)) < 1e-4f);
}

TEST_CASE("an output named like a C library function the generated code calls still computes its own values") {
  for (const char *name : {"tanhf", "erff", "expf", "malloc", "free"}) {
    INFO(name);
    Param M("M"), N("N");
    Input A("A", Float(32), {M, N});
    Var i("i"), j("j");
    Func tmp("tmp"), out(name);
    tmp(i, j) = A(i, j) * 2.0f;
    tmp.compute_root(); // a heap buffer: malloc and free are called
    out(i, j) = gelu_tanh(tmp(i, j)) + gelu(tmp(i, j)) + exp(tmp(i, j));
    Buffer a = filled({3, 5}, 1), o({3, 5});
    Pipeline(out).realize_on_cpu({{"A", a}, {"M", 3}, {"N", 5}}, o);
    for (size_t e = 0; e < o.size(); ++e) {
      float x = a.data()[e] * 2.0f;
      float want = 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))) +
                   0.5f * x * (1.0f + std::erf(x * 0.70710678f)) + std::exp(x);
      CHECK(std::fabs(o.data()[e] - want) < 1e-4f * (1.0f + std::fabs(want)));
    }
  }
}

TEST_CASE("kernel and host symbols are derived from the Func name, never equal to it") {
  for (const char *name : {"WARP_SZ", "erff", "sm_90a", "ptr"}) {
    INFO(name);
    Gemm g(name);
    g.schedule_fused();
    Pipeline pipeline(g.out);
    const std::string &ptx = pipeline.ptx();
    CHECK(ptx.find(".entry coalesce_" + std::string(name) + "(") != std::string::npos);
    CHECK(ptx.find(".entry " + std::string(name) + "(") == std::string::npos);
    if (ptxas_available()) // a rejected PTX is a UserError here
      CHECK(pipeline.assemble().find(name) != nullptr);
  }
}

// ------------------------------------------- 7: reads inside the extents

TEST_CASE("an Input read past its extent is rejected with the bound it exceeds") {
  Param M("M"), N("N");
  Input A("A", Float(32), {M, N}), bias("bias", Float(32), {N});
  Var i("i"), j("j");
  {
    Func out("out");
    out(i, j) = A(i, j) + bias(j + 1);
    std::string message = user_error_of([&] { lower_loop_nest(out); });
    CHECK_HAS(message, "'out' reads bias(j + 1): coordinate 0 of 'bias', j + 1 (j in [0, N)), reaches N");
    CHECK_HAS(message, "not provably below the extent N of 'bias'");
  }
  {
    Func out("out");
    out(i, j) = A(i, j) + bias(j - 1);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "can be as low as -1, below 0");
  }
  {
    Func out("out");
    out(i, j) = A(i, j) * A(j, i); // N may exceed M
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "reaches N - 1, which is not provably below the extent M");
  }
  {
    Func out("out");
    out(i, j) = A(i, j * j);
    out.bound(i, M).bound(j, N);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(out); }), "is not provably inside the extent [0, N) of 'A'");
  }
  {
    // In range: a shift inside a bound() domain, and a reduction's domain.
    Func out("out");
    out(i, j) = A(i, j + 1) + bias(j + 1);
    out.bound(i, M).bound(j, N - 1);
    CHECK_NOTHROW(lower_loop_nest(out));
  }
}
