// Findings of outside testing, each fixed as a general property checked in
// one place: a Func computed at a consumer's loop runs on the consumer's
// loops (and threads); no reduction reads its own value through other Funcs;
// an epilogue through an inline Func, an elementwise stage after a sum and
// empty outputs are legal; unrolling is bounded. Each test fails without
// its fix.

#include <doctest/doctest.h>

#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "dsl/IROperator.h"
#include "runtime/Pipeline.h"
#include "scheduler/CheckThreadOwnership.h"
#include "scheduler/Lower.h"

#include <chrono>
#include <cmath>

#include "ErrorCapture.h"

using namespace coalesce;
using testing::user_error_of;

namespace {

struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func acc{"acc"}, out{"out"};

  Gemm(bool define_out = true) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    if (define_out)
      out(i, j) = relu(acc(i, j) + bias(j));
  }
  // The finding's schedule: 32 x 8 tiles, 8 x 2 register blocks, acc fused.
  // Block and thread loops mapped to the GPU (the GPU path's structure, which
  // every target checks), or, with `gpu` false, the same tiles run serially.
  void schedule_fused(bool gpu = true) {
    out.tile(i, j, bi, bj, ii, jj, 32, 8);
    out.register_block(ii, jj, ti, tj, ri, rj, 8, 2);
    if (gpu)
      out.gpu_blocks({bi, bj}).gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
  }
};

float value(size_t e, int seed) { return static_cast<float>(static_cast<int>((e * 7 + seed * 13) % 11) - 5) / 4.0f; }

// The largest difference between `f` run on the CPU and relu(A*B + bias),
// or -1 when the pipeline's output is acc alone.
double run(const Func &f, int M, int N, int K, bool gelu_of_acc = false) {
  Buffer A({M, K}), B({K, N}), bias({N}), out({M, N});
  for (size_t e = 0; e < A.size(); ++e)
    A.data()[e] = value(e, 1);
  for (size_t e = 0; e < B.size(); ++e)
    B.data()[e] = value(e, 2);
  for (size_t e = 0; e < bias.size(); ++e)
    bias.data()[e] = value(e, 3);
  Arguments args{{"A", A}, {"B", B}, {"M", M}, {"N", N}, {"K", K}};
  if (!gelu_of_acc)
    args.emplace("bias", bias);
  Pipeline(f).realize_on_cpu(args, out);
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0;
      for (int k = 0; k < K; ++k)
        sum += double(A(i, k)) * B(k, j);
      double expected = gelu_of_acc ? 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0)))
                                    : std::max(sum + bias.data()[j], 0.0);
      worst = std::max(worst, std::fabs(expected - out(i, j)));
    }
  return worst;
}

} // namespace

// ------------------------------------- 1: a producer at a site keeps its loops

TEST_CASE("reordering a fused producer's mirrored loops is rejected, naming the consumer") {
  Gemm g;
  g.schedule_fused();
  g.acc.pure().reorder({g.ri, g.ti, g.tj, g.rj}); // was accepted, and off by 0.92 on the CPU
  std::string message = user_error_of([&] { Pipeline(g.out).loop_nest(); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "loop 'bj' of 'out'");
  CHECK_HAS(message, "here they are ri (unrolled), ti (gpu_thread.y)");
  CHECK_HAS(message, "Schedule those loops on 'out'");
}

TEST_CASE("a producer's update mapped to other threads than its consumer is rejected") {
  Gemm g;
  g.schedule_fused(true);
  g.acc.update().gpu_threads({g.tj, g.ti}); // right on the CPU, wrong on the GPU
  std::string message = user_error_of([&] { Pipeline(g.out).gpu_program(); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "'ti' is mapped differently here: ti (gpu_thread.x) instead of ti (gpu_thread.y)");
}

TEST_CASE("splitting, unrolling or fusing a mirrored loop, or an update added after compute_at, is a UserError") {
  Var a("a"), b("b");
  {
    Gemm g;
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
    g.out.fuse_epilogue(g.acc, g.bj);
    g.acc.update().split(g.ii, a, b, 4); // was "no extent for loop"
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "'ii' is split here into 'a' and 'b'");
  }
  {
    Gemm g;
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
    g.out.fuse_epilogue(g.acc, g.bj);
    g.acc.update().unroll(g.jj);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }),
              "'jj' is mapped differently here: jj (unrolled) instead of jj (serial)");
  }
  {
    Gemm g;
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
    g.out.fuse_epilogue(g.acc, g.bj);
    g.acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j); // update 1: its own loops, no extent at the site
    std::string message = user_error_of([&] { Pipeline(g.out).loop_nest(); });
    CHECK_HAS(message, "in schedule for 'acc' (update 1)");
    CHECK_HAS(message, "define every update first, then call compute_at");
  }
}

TEST_CASE("compute_root, compute_inline or a new compute_at after compute_at starts from the Func's own loops") {
  {
    Gemm g;
    // Serial tiles: acc at root would need a GPU kernel of its own, which
    // every target refuses for a GPU-mapped output.
    g.schedule_fused(false);
    g.acc.update().split(g.k, g.ko, g.ki, 4); // kept: it is acc's own
    g.acc.compute_root();                     // was "no extent for loop"
    CHECK(run(g.out, 37, 19, 13) < 1e-4);
  }
  {
    Gemm g;
    g.schedule_fused();
    g.acc.compute_root();
    CHECK_HAS(user_error_of([&] { run(g.out, 37, 19, 13); }),
              "'acc' is computed at root, which on the GPU would need its own kernel");
  }
  {
    Gemm g(false);
    Func mid("mid");
    mid(g.i, g.j) = g.acc(g.i, g.j) + g.bias(g.j);
    g.out(g.i, g.j) = relu(mid(g.i, g.j));
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
    mid.compute_at(g.out, g.bj);
    mid.compute_inline(); // back to inline: out reads acc through it
    CHECK(run(g.out, 20, 21, 5) < 1e-4);
  }
  {
    Gemm g;
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
    g.out.fuse_epilogue(g.acc, g.bj);
    g.out.fuse_epilogue(g.acc, g.ii); // a second placement replaces the first
    CHECK(run(g.out, 20, 21, 5) < 1e-4);
  }
}

TEST_CASE("a register tile read by another thread than the one that wrote it is rejected on the serial nest") {
  // Built by hand: the schedule checks stop every known way to get here.
  Func acc("acc");
  Var x("x");
  acc(x) = 0.0f;
  Environment env;
  env.funcs.push_back(*acc.contents());
  auto v = [](const char *name) { return Variable::make(Int(32), name); };
  Stmt produce = For::make("acc.s0.t", 0, 4, ForKind::GpuThread, Store::make("acc", {v("acc.s0.t")}, Expr(1.0f)), 1);
  Stmt consume = For::make("out.s0.t", 0, 4, ForKind::GpuThread,
                           Store::make("out", {v("out.s0.t")}, Load::make(Float(32), "acc", {v("out.s0.t")})), 0);
  Stmt nest = For::make("out.s0.b", 0, 2, ForKind::GpuBlock,
                        Allocate::make("acc", Float(32), MemoryType::Register, {Expr(4)}, Block::make({produce, consume})),
                        0);
  std::string message = user_error_of([&] { check_thread_ownership(nest, env); });
  CHECK_HAS(message, "'acc' is computed inside a GPU kernel and indexed in dimension 0 by thread loop 't' of 'acc' "
                     "(thread y) in one place and by thread loop 't' of 'out' (thread x) in another");
}

// ----------------------------------- 2: no reduction reads its own value

TEST_CASE("a reduction that reads its running value through a helper Func is rejected with the chain") {
  for (bool root : {false, true}) {
    Gemm g(false);
    Func gate("gate");
    gate(g.i, g.j) = select(g.acc(g.i, g.j) > 0.0f, 1.0f, 0.5f);
    g.acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j) * gate(g.i, g.j); // update 1
    g.out(g.i, g.j) = relu(g.acc(g.i, g.j) + g.bias(g.j));
    if (root)
      gate.compute_root(); // was an internal error
    std::string message = user_error_of([&] { Pipeline(g.out).loop_nest(); });
    CHECK_HAS(message, "'acc' reads its own value through other Funcs (acc -> gate -> acc)");
  }
}

// ------------------------------------------------ 3: legal programs accepted

TEST_CASE("fuse_epilogue through an inline intermediate Func") {
  Gemm g(false);
  Func mid("mid");
  mid(g.i, g.j) = g.acc(g.i, g.j) + g.bias(g.j);
  g.out(g.i, g.j) = relu(mid(g.i, g.j));
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
  g.out.fuse_epilogue(g.acc, g.bj); // was "'out' does not call 'acc'"
  CHECK(run(g.out, 37, 19, 13) < 1e-4);
}

TEST_CASE("an elementwise stage after the reduction is legal; a neighbour read is not") {
  Gemm g(false);
  g.acc(g.i, g.j) = gelu(g.acc(g.i, g.j)); // no reduction variable: acts on the finished sum
  CHECK(run(g.acc, 13, 9, 7, true) < 1e-4);

  Gemm h(false);
  h.acc(h.i, h.j) = h.acc(h.i, h.j) + h.acc(h.j, h.i);
  CHECK_HAS(user_error_of([&] { Pipeline(h.acc).loop_nest(); }), "update 1 of 'acc' reads acc(j, i)");
}

TEST_CASE("zero-sized outputs compute nothing; an empty reduction gives the epilogue of the initial value") {
  Gemm g;
  g.schedule_fused();
  CHECK(run(g.out, 0, 16, 5) == 0);
  CHECK(run(g.out, 16, 0, 5) == 0);
  // K = 0: out = relu(0 + bias), as cuBLAS computes it (tests/test_empty_reduction.cpp has the rest).
  CHECK(run(g.out, 16, 16, 0) == 0);
  CHECK_HAS(user_error_of([] { Buffer({-1, 2}); }), "Buffer extents must be zero or positive, got -1");
}

// -------------------------------------------------- 4: bounded unrolling

TEST_CASE("unrolling past kMaxUnrolledCopies is rejected at once, naming the loops") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 64, 64)
      .gpu_blocks({g.bi, g.bj})
      .register_block(g.ii, g.jj, g.ti, g.tj, g.ri, g.rj, 8, 8)
      .gpu_threads({g.ti, g.tj});
  g.out.fuse_epilogue(g.acc, g.bj);
  g.acc.update().split(g.k, g.ko, g.ki, 32).reorder({g.ko, g.ti, g.tj, g.ki, g.ri, g.rj}).unroll(g.ki);
  auto start = std::chrono::steady_clock::now();
  std::string message = user_error_of([&] { Pipeline(g.out).host_llvm_ir(); }); // took minutes
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_HAS(message, "'ki' (32) x 'ri' (8) x 'rj' (8) make 2048 copies of their body, over the limit of 1024");

  Param N("N");
  Input A("A", Float(32), {N});
  Var x("x"), xo("xo"), xi("xi");
  Func out("out");
  out(x) = A(x);
  out.split(x, xo, xi, 100000).unroll(xi);
  CHECK_HAS(user_error_of([&] { Pipeline(out).host_llvm_ir(); }), "'xi' (100000) make 100000 copies");
}

// ------------------------------------------- found by the schedule fuzzer

TEST_CASE("fuzz seed 356: a reduction loop named like a consumer's loop at the site is rejected") {
  // out's split variable 'ko' (split again into ti, ri) and acc's reduction
  // loop 'ko' met in acc's nest at the site: one variable, two meanings,
  // and a wrong result.
  Gemm g;
  Var ko_pure("ko");
  g.out.tile(g.i, g.j, g.bi, g.bj, ko_pure, g.jj, 8, 8).split(ko_pure, g.ti, g.ri, 2);
  g.out.fuse_epilogue(g.acc, g.bj);
  g.acc.update().split(g.k, g.ko, g.ki, 4);
  CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }),
            "in schedule for 'acc' (update 0): 'ko' names a variable of 'acc' and a loop of 'out' below loop 'bj'");
}
