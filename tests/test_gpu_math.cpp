// erf and erfc on the GPU are straight-line code (codegen/GpuErf.h): a thread's
// unrolled erfs (and gelu's erfcs) share no branch, so ptxas can interleave
// their FMA chains.
// Its accuracy is checked on the GPU (coalesce-gpu-check's math functions:
// at most 2 ulp over four million inputs); the host's erf is the C
// library's.

#include "runtime/Coalesce.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <string>

using namespace coalesce;
using coalesce::testing::occurrences;

namespace {

// out(i) = f(x(i) / 2) with 8 elements per thread, unrolled.
std::string ptx_of(Expr (*f)(Expr)) {
  Param n("n");
  Input x("x", Float(32), {n});
  Var i("i"), io("io"), e("e"), bi("bi"), ti("ti");
  Func out("out");
  out(i) = f(x(i) * 0.5f);
  out.split(i, io, e, 8).split(io, bi, ti, 128).reorder({bi, ti, e}).unroll(e);
  out.gpu_blocks({bi}).gpu_threads({ti});
  return Pipeline(out).ptx();
}

} // namespace

TEST_CASE("erf on the GPU adds no branch per element") {
  const std::string one = ptx_of([](Expr v) { return erf(v); });
  const std::string two = ptx_of([](Expr v) { return erf(v) + erf(v * 3.0f); });
  INFO("two erfs per element:\n", two);
  CHECK(occurrences(two, "ex2.approx") >= 16);
  // The same nest, its guards' branches, and no more: libdevice's erff
  // branches once per call.
  CHECK(occurrences(two, "bra") == occurrences(one, "bra"));
  CHECK(occurrences(two, "call") == 0);
}

TEST_CASE("erfc on the GPU adds no branch per element, and gelu takes it") {
  const std::string one = ptx_of([](Expr v) { return erfc(v); });
  const std::string two = ptx_of([](Expr v) { return erfc(v) + erfc(v * 3.0f); });
  INFO("two erfcs per element:\n", two);
  CHECK(occurrences(two, "ex2.approx") >= 16);
  CHECK(occurrences(two, "rcp.approx") >= 16);
  CHECK(occurrences(two, "bra") == occurrences(one, "bra"));
  CHECK(occurrences(two, "call") == 0);
  // gelu = 0.5 x erfc(-x / sqrt(2)): as many reciprocals and 2^x as one
  // erfc per element.
  const std::string gelus = ptx_of([](Expr v) { return gelu(v); });
  CHECK(occurrences(gelus, "rcp.approx") == occurrences(one, "rcp.approx"));
  CHECK(occurrences(gelus, "ex2.approx") == occurrences(one, "ex2.approx"));
  CHECK(occurrences(gelus, "call") == 0);
}
