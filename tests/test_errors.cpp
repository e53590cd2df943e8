// Errors a user meets when writing an algorithm or calling a pipeline:
// arguments, shapes, types, targets and the absent GPU. Each is a UserError
// with a message that says what is wrong; none writes to the output.

#include <doctest/doctest.h>

#include "codegen/GpuTarget.h"
#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "runtime/CudaDriver.h"
#include "runtime/Pipeline.h"

#include <climits>
#include <cmath>
#include <string>

#include "ErrorCapture.h"

using namespace coalesce;

namespace {

using testing::user_error_of;

bool all_poisoned(const Buffer &buffer) {
  for (float v : buffer.values())
    if (!std::isnan(v))
      return false;
  return true;
}

// out = relu(A*B + bias) in 2 x 2 tiles (GPU blocks of 2 x 2 threads if
// asked for; the CPU runs either), and buffers of the right shapes for
// M x N x K = 3 x 5 x 4.
struct Setup {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"};
  RDom k{0, K, "k"};
  Func acc{"acc"}, out{"out"};
  static constexpr int m = 3, n = 5, kk = 4;
  Buffer a{{m, kk}}, b{{kk, n}}, c{{n}}, o{{m, n}};

  explicit Setup(bool gpu = false) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = relu(acc(i, j) + bias(j));
    out.tile(i, j, bi, bj, ii, jj, 2, 2);
    if (gpu)
      out.gpu_blocks({bi, bj}).gpu_threads({ii, jj});
    acc.compute_at(out, bj);
    a.fill_random(1);
    b.fill_random(2);
    c.fill_random(3);
    o.poison();
  }
  Arguments args() const { return {{"A", a}, {"B", b}, {"bias", c}, {"M", m}, {"N", n}, {"K", kk}}; }
  double expected(int x, int y) const {
    double sum = c.values()[y];
    for (int z = 0; z < kk; ++z)
      sum += double(a(x, z)) * b(z, y);
    return std::max(sum, 0.0);
  }
};

// A realize_on_cpu that must fail before writing anything.
std::string binding_error(Setup &call, const Arguments &args, Buffer &output) {
  Pipeline pipeline(call.out);
  output.poison();
  std::string message = user_error_of([&] { pipeline.realize_on_cpu(args, output); });
  CHECK_MESSAGE(all_poisoned(output), "the output was written although binding failed");
  return message;
}

} // namespace

// ----------------------------------------------------------- arguments

TEST_CASE("a correct call runs and fills the output") {
  Setup call;
  Pipeline(call.out).realize_on_cpu(call.args(), call.o);
  for (int x = 0; x < Setup::m; ++x)
    for (int y = 0; y < Setup::n; ++y)
      CHECK(call.o(x, y) == doctest::Approx(call.expected(x, y)).epsilon(1e-5));
}

TEST_CASE("a missing input buffer is rejected") {
  Setup call;
  Arguments args = call.args();
  args.erase("B");
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "missing input buffer 'B'");
}

TEST_CASE("an unknown argument name is rejected, listing the pipeline's arguments") {
  Setup call;
  Arguments args = call.args();
  args.emplace("C", call.a);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "unknown argument 'C'");
  CHECK_HAS(message, "the pipeline takes: A, B, bias");
  CHECK_HAS(message, "K, M, N");
}

TEST_CASE("the output passed among the arguments is rejected") {
  Setup call;
  Arguments args = call.args();
  args.emplace("out", call.o);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "'out' is the pipeline's output");
  CHECK_HAS(message, "pass its buffer as the output argument of realize");
}

TEST_CASE("an input of the wrong shape is rejected") {
  Setup call;
  Buffer wide({Setup::m, Setup::kk + 1});
  Arguments args = call.args();
  args.erase("A");
  args.emplace("A", wide);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "input buffer 'A' has shape 3 x 5 but the pipeline needs M x K = 3 x 4");
}

TEST_CASE("an input with the wrong number of dimensions is rejected") {
  Setup call;
  Buffer flat({Setup::n, 1});
  Arguments args = call.args();
  args.erase("bias");
  args.emplace("bias", flat);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "input buffer 'bias' has shape 5 x 1 but the pipeline needs N = 5");
}

TEST_CASE("an output of the wrong shape is rejected") {
  Setup call;
  Buffer transposed({Setup::n, Setup::m});
  std::string message = binding_error(call, call.args(), transposed);
  CHECK_HAS(message, "output buffer 'out' has shape 5 x 3 but the pipeline needs M x N = 3 x 5");
}

TEST_CASE("a parameter passed as a buffer is rejected") {
  Setup call;
  Arguments args = call.args();
  args.erase("K");
  args.emplace("K", call.c);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "parameter 'K' must be an integer, not a buffer");
}

TEST_CASE("an input passed as an integer is rejected") {
  Setup call;
  Arguments args = call.args();
  args.erase("A");
  args.emplace("A", 7);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "input 'A' must be a buffer, not an integer");
}

TEST_CASE("a missing parameter is rejected") {
  Setup call;
  Arguments args = call.args();
  args.erase("N");
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "missing parameter 'N'");
}

TEST_CASE("a parameter that makes an extent negative is rejected; K = 0 needs empty A and B") {
  Setup call;
  Arguments args = call.args();
  args.erase("K");
  args.emplace("K", -3);
  std::string message = binding_error(call, args, call.o);
  CHECK_HAS(message, "buffer 'A' would have extent -3 (K)");
  CHECK_HAS(message, "extents must be zero or positive");
  // K = 0 is legal (out = epilogue(bias), tests/test_empty_reduction.cpp),
  // but A must then be M x 0.
  args.erase("K");
  args.emplace("K", 0);
  message = binding_error(call, args, call.o);
  CHECK_HAS(message, "input buffer 'A' has shape 3 x 4 but the pipeline needs M x K = 3 x 0");
}

TEST_CASE("nothing is written to the output when binding fails") {
  // binding_error checks the poison in every case above; here the output
  // is also the one a later correct call fills.
  Setup call;
  Pipeline pipeline(call.out);
  Arguments bad = call.args();
  bad.erase("M");
  call.o.poison();
  user_error_of([&] { pipeline.realize_on_cpu(bad, call.o); });
  CHECK(all_poisoned(call.o));
  pipeline.realize_on_cpu(call.args(), call.o);
  CHECK(call.o(2, 4) == doctest::Approx(call.expected(2, 4)).epsilon(1e-5));
}

// -------------------------------------------------- buffers and inputs

TEST_CASE("a Buffer with a negative extent is rejected; an empty one is allowed") {
  CHECK(Buffer({4, 0}).size() == 0); // an empty result's buffer (M or N = 0)
  CHECK_HAS(user_error_of([] { Buffer({-2}); }), "Buffer extents must be zero or positive, got -2");
}

TEST_CASE("a Buffer too large to hold is a UserError naming its shape, not the standard library's") {
  std::string message = user_error_of([] { Buffer({INT_MAX, INT_MAX}); });
  CHECK_HAS(message, "Buffer of shape 2147483647 x 2147483647 has too many elements to hold in memory");
  CHECK_HAS(user_error_of([] { Buffer({INT_MAX, INT_MAX, INT_MAX}, BFloat(16)); }), "has too many elements");
}

TEST_CASE("a reduction over a negative run-time extent is refused, naming the parameter") {
  // The buffers' extents take K = 1; the reduction RDom(2, K - 2) would
  // run over -1 elements, and sum nothing without a word.
  Param M("M"), N("N"), K("K");
  Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N});
  Var i("i"), j("j");
  RDom k(2, K - 2, "k");
  Func acc("acc");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  Pipeline pipeline(acc);
  Buffer a({3, 1}), b({1, 5}), out({3, 5});
  out.poison();
  std::string message =
      user_error_of([&] { pipeline.realize_on_cpu({{"A", a}, {"B", b}, {"M", 3}, {"N", 5}, {"K", 1}}, out); });
  CHECK_HAS(message, "would run over -1 elements (K - 2 with K = 1)");
  CHECK_HAS(message, "a reduction's extent must be zero or positive: check the value of parameter 'K'");
  CHECK(all_poisoned(out));
  // K = 2 is an empty range: acc keeps its initial value.
  Buffer a2({3, 2}), b2({2, 5});
  pipeline.realize_on_cpu({{"A", a2}, {"B", b2}, {"M", 3}, {"N", 5}, {"K", 2}}, out);
  CHECK(out(2, 4) == 0.0f);
}

TEST_CASE("an Input with a zero extent is rejected") {
  std::string message = user_error_of([] { Input("A", Float(32), {0, 4}); });
  CHECK_HAS(message, "Input 'A': extent 0 is 0; extents must be positive");
  CHECK_HAS(user_error_of([] { Input("v", Float(32), {}); }), "Input 'v' needs at least one extent");
}

TEST_CASE("an Input called with the wrong number of coordinates is rejected") {
  Setup call;
  std::string message = user_error_of([&] { call.A(call.i); });
  CHECK_HAS(message, "Input 'A' has 2 dimensions but is called with 1 coordinates");
  message = user_error_of([&] { call.bias(call.i, call.j); });
  CHECK_HAS(message, "Input 'bias' has 1 dimensions but is called with 2 coordinates");
}

TEST_CASE("an Input indexed by a float is rejected") {
  Setup call;
  std::string message = user_error_of([&] { call.bias(call.A(call.i, call.j)); });
  CHECK_HAS(message, "Input 'bias' is indexed by A(i, j), which is not an i32 coordinate");
}

TEST_CASE("a Func called with the wrong number of coordinates is rejected") {
  Setup call;
  std::string message = user_error_of([&] { Expr e = call.acc(call.i); });
  CHECK_HAS(message, "Func 'acc' has 2 dimensions but is called with 1 coordinates");
}

TEST_CASE("mixing i32 and f32 without a cast is rejected") {
  Setup call;
  std::string message = user_error_of([&] { call.A(call.i, call.j) + call.i; });
  CHECK_HAS(message, "operator + combines f32 with i32");
  CHECK_HAS(message, "cast(f32, ...)");
  // With the cast it is accepted.
  CHECK_NOTHROW(call.A(call.i, call.j) + cast(Float(32), call.i));
  // An integer literal next to a float is converted.
  CHECK_NOTHROW(call.A(call.i, call.j) * 2);
}

TEST_CASE("a math function of an integer is rejected") {
  Setup call;
  std::string message = user_error_of([&] { erf(call.i); });
  CHECK_HAS(message, "erf() needs a floating-point argument, got i32");
}

TEST_CASE("an update of another type is rejected") {
  Setup call;
  Func f("f");
  f(call.i, call.j) = 0.0f;
  std::string message = user_error_of([&] { f(call.i, call.j) = call.i + call.j; });
  CHECK_HAS(message, "update of 'f' has type i32 but 'f' is f32");
}

TEST_CASE("invalid names and empty domains are rejected") {
  CHECK_HAS(user_error_of([] { Var("1x"); }), "invalid Var name '1x'");
  CHECK_HAS(user_error_of([] { Param("a-b"); }), "invalid Param name 'a-b'");
  CHECK_HAS(user_error_of([] { RDom(0, 0, "r"); }), "RDom 'r' has extent 0");
  CHECK_HAS(user_error_of([] { Expr e = RVar("ko"); }), "RVar 'ko' names a split reduction loop and has no domain");
}

// ------------------------------------------------------------- targets

TEST_CASE("unknown GPU targets are rejected with the accepted list") {
  for (const char *name : {"sm_75", "banana", "", "SM_90"}) {
    CAPTURE(name);
    std::string message = user_error_of([&] { parse_gpu_target(name); });
    CHECK_HAS(message, "unknown GPU target '" + std::string(name) + "'");
    CHECK_HAS(message, "expected one of sm_80, sm_86, sm_89, sm_90, sm_90a");
  }
}

TEST_CASE("every supported GPU target is accepted") {
  for (const char *name : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
    CAPTURE(name);
    CHECK(parse_gpu_target(name).sm() == name);
  }
  CHECK(std::string(supported_gpu_targets()) == "sm_80, sm_86, sm_89, sm_90, sm_90a");
}

// ------------------------------------------------------- no GPU here

TEST_CASE("realize_on_gpu without a GPU throws GpuUnavailable and writes nothing") {
  std::string why_not;
  if (gpu::gpu_available(&why_not)) {
    MESSAGE("a GPU is present; the no-GPU path is not exercised");
    return;
  }
  CHECK_FALSE(why_not.empty());
  Setup call(true);
  Pipeline pipeline(call.out);
  for (bool explicit_target : {false, true}) {
    CAPTURE(explicit_target);
    call.o.poison();
    try {
      if (explicit_target)
        pipeline.realize_on_gpu(call.args(), call.o, parse_gpu_target("sm_90a"));
      else
        pipeline.realize_on_gpu(call.args(), call.o);
      FAIL("realize_on_gpu ran without a GPU");
    } catch (const gpu::GpuUnavailable &e) {
      const UserError &as_user_error = e; // GpuUnavailable is a UserError
      std::string message = as_user_error.what();
      CHECK_HAS(message, "a GPU is required but unavailable");
      CHECK_HAS(message, why_not);
    } catch (const InternalError &e) {
      FAIL("an internal error: " << e.what());
    }
    CHECK(all_poisoned(call.o));
  }
}

TEST_CASE("realize without a GPU runs on the CPU and says why") {
  std::string why_not;
  if (gpu::gpu_available(&why_not)) {
    MESSAGE("a GPU is present; the CPU fallback is not exercised");
    return;
  }
  Setup call(true);
  std::string note;
  Device device = Pipeline(call.out).realize(call.args(), call.o, &note);
  CHECK(device == Device::Cpu);
  CHECK_HAS(note, "ran on the CPU");
  CHECK_HAS(note, why_not);
  for (int x = 0; x < Setup::m; ++x)
    for (int y = 0; y < Setup::n; ++y)
      CHECK(call.o(x, y) == doctest::Approx(call.expected(x, y)).epsilon(1e-5));
}
