// A nest the GPU path cannot turn into kernels is rejected on every target,
// before anything runs, with the message the GPU path gives: the CPU run
// does not quietly compute what the GPU would refuse. The schedule checks
// stop every known way to build such a nest, so the check's cases are built
// by hand; a pipeline with a producer in the consumer's kernel shows the
// check lets a good one through on both targets.

#include "runtime/Coalesce.h"
#include "scheduler/CheckGpuStructure.h"
#include "ErrorCapture.h"

#include <doctest/doctest.h>

using namespace coalesce;
using coalesce::testing::user_error_of;

namespace {

Expr v(const char *name) { return Variable::make(Int(32), name); }

// for b in gpu_block.x(0, 2): <body>, with out and f allocated as needed.
Stmt kernel(Stmt body) { return For::make("out.s0.b", 0, 2, ForKind::GpuBlock, body, 0); }

} // namespace

TEST_CASE("thread loops of one kernel that disagree on a dimension are refused on the serial nest") {
  Stmt producer = For::make("f.s0.t", 0, 32, ForKind::GpuThread, Store::make("f", {v("f.s0.t")}, Expr(1.0f)), 0);
  Stmt consumer = For::make("out.s0.t", 0, 64, ForKind::GpuThread,
                            Store::make("out", {v("out.s0.t")}, Load::make(Float(32), "f", {Expr(0)})), 0);
  Stmt nest = kernel(Allocate::make("f", Float(32), MemoryType::Shared, {Expr(32)}, Block::make({producer, consumer})));
  CHECK_HAS(user_error_of([&] { check_gpu_structure(nest, "out"); }),
            "the thread loops of one kernel must agree on each dimension: 't' of 'f' has 32 threads in x but 't' of "
            "'out' has 64");
}

TEST_CASE("a store outside every thread loop of a kernel with threads is refused on the serial nest") {
  Stmt producer = Store::make("f", {Expr(0)}, Expr(1.0f));
  Stmt consumer = For::make("out.s0.t", 0, 64, ForKind::GpuThread,
                            Store::make("out", {v("out.s0.t")}, Load::make(Float(32), "f", {Expr(0)})), 0);
  Stmt nest = kernel(Allocate::make("f", Float(32), MemoryType::Shared, {Expr(1)}, Block::make({producer, consumer})));
  CHECK_HAS(user_error_of([&] { check_gpu_structure(nest, "out"); }),
            "the store to 'f' is outside every gpu_threads loop of its kernel");
}

TEST_CASE("a nest without GPU loops is a host nest, and passes") {
  Stmt nest = For::make("out.s0.x", 0, 8, ForKind::Serial, Store::make("out", {v("out.s0.x")}, Expr(1.0f)));
  CHECK_NOTHROW(check_gpu_structure(nest, "out"));
}

TEST_CASE("a producer in its consumer's kernel, on the consumer's threads, runs on the CPU and compiles for the GPU") {
  Param n("n");
  Input A("A", Float(32), {n});
  Var x("x"), xo("xo"), xi("xi");
  Func f("f"), out("out");
  f(x) = A(x) * 2.0f;
  out(x) = f(x) + 1.0f;
  out.split(x, xo, xi, 64).gpu_blocks({xo}).gpu_threads({xi});
  f.compute_at(out, xo);
  Pipeline pipeline(out);
  Buffer a({100}), result({100});
  for (int i = 0; i < 100; ++i)
    a(i) = float(i);
  pipeline.realize_on_cpu({{"A", a}, {"n", 100}}, result);
  for (int i = 0; i < 100; ++i)
    CHECK(result(i) == 2.0f * float(i) + 1.0f);
  CHECK(pipeline.ptx().find(".entry") != std::string::npos);
}
