// The intrinsic list (dsl/Intrinsics.h): the printed names the golden loop
// nests hold, and the checks Call::make_intrinsic makes, so that a pass that
// builds an intrinsic call wrongly fails at once with an internal error
// rather than at code generation.

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace coalesce;

TEST_CASE("every intrinsic has its own printed name") {
  std::set<std::string> names;
  int count = 0;
#define COALESCE_COUNT(name, printed, min_args, max_args, result)                                   \
  names.insert(intrinsic_name(Intrinsic::name));                                                   \
  CHECK(std::string(intrinsic_name(Intrinsic::name)) == printed);                                  \
  CHECK(intrinsic_min_args(Intrinsic::name) <= intrinsic_max_args(Intrinsic::name));               \
  ++count;
  COALESCE_FOR_EACH_INTRINSIC(COALESCE_COUNT)
#undef COALESCE_COUNT
  CHECK(static_cast<int>(names.size()) == count);
}

TEST_CASE("intrinsic calls print as before the list existed") {
  Expr x = Variable::make(Float(32), "x");
  CHECK(to_string(exp(x)) == "exp(x)");
  CHECK(to_string(Call::make_intrinsic(thread_id_intrinsic(1), Int(32), {})) == "thread_id.y()");
  CHECK(to_string(Call::make_intrinsic(block_id_intrinsic(0), Int(32), {})) == "block_id.x()");
  CHECK(to_string(Call::make_intrinsic(Intrinsic::AsyncWaitGroup, Int(32), {Expr(0)})) == "async_wait_group(0)");
  CHECK(to_string(Call::make_intrinsic(Intrinsic::RoundToTf32, Float(32), {x})) == "round_to_tf32(x)");
}

TEST_CASE("make_intrinsic checks the argument count and the result type") {
  Expr x = Variable::make(Float(32), "x");
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::Exp, Float(32), {}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::Exp, Float(32), {x, x}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::ThreadIdX, Int(32), {Expr(0)}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::AsyncWaitGroup, Int(32), {}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::AsyncLoadVector, Float(32), {x, Expr(4)}), InternalError);
  // async_load takes the read and, with zero_fill, an in-bounds test.
  CHECK_NOTHROW(Call::make_intrinsic(Intrinsic::AsyncLoad, Float(32), {x}));
  CHECK_NOTHROW(Call::make_intrinsic(Intrinsic::AsyncLoad, Float(32), {x, x > 0.0f}));
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::AsyncLoad, Float(32), {x, x > 0.0f, Expr(1)}), InternalError);
  // Types: i32 indices, the argument's type for math, f32 for tf32 rounding.
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::BlockIdY, Float(32), {}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::Sqrt, Int(32), {x}), InternalError);
  CHECK_THROWS_AS(Call::make_intrinsic(Intrinsic::RoundToTf32, Int(32), {Expr(1)}), InternalError);
  CHECK_THROWS_AS(thread_id_intrinsic(3), InternalError);
}

TEST_CASE("an intrinsic call cannot be made by name, and keeps its intrinsic when rebuilt") {
  Expr x = Variable::make(Float(32), "x");
  CHECK_THROWS_AS(Call::make(Float(32), "exp", {x}, CallType::Intrinsic), InternalError);
  Expr y = Variable::make(Float(32), "y");
  const auto *call = exp(x).as<Call>();
  REQUIRE(call);
  CHECK(call->intrinsic == Intrinsic::Exp);
  Expr rebuilt = call->with_args({y});
  CHECK(rebuilt.as<Call>()->intrinsic == Intrinsic::Exp);
  CHECK(equal(rebuilt, exp(y)));
  CHECK_FALSE(equal(exp(x), erf(x)));
}
