// scheduler/StagedTileRegion: the span of a staged input's coordinate over
// the loops inside the staging loop. A coordinate is a sum of terms outside
// them (the tile's origin) and of constant multiples of an inner loop's
// variable, or of quotients and remainders of it by constants, each taken
// over its whole range: how fused thread loops read their parts (lane / 4,
// warp % 2), nested too (warp % 8 / 4: a warpgroup of warps whose rows are
// not one stride apart).

#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/StagedTileRegion.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace coalesce;
using coalesce::staging::LoopInfo;

namespace {

Expr var(const std::string &name) { return Variable::make(Int(32), name); }

std::map<std::string, LoopInfo> loops(std::initializer_list<std::pair<const char *, int>> extents, int min = 0) {
  std::map<std::string, LoopInfo> result;
  for (const auto &[name, extent] : extents)
    result[name] = LoopInfo{Expr(min), Expr(extent), ForKind::Serial, -1};
  return result;
}

// The span's extent, or -1 where the coordinate is refused.
int64_t span(const Expr &index, const std::map<std::string, LoopInfo> &inner, Expr *base = nullptr) {
  Expr b;
  int64_t extent = 0;
  if (!staging::affine_span(index, inner, &b, &extent))
    return -1;
  if (base)
    *base = b;
  return extent;
}

} // namespace

TEST_CASE("a coordinate's span: constant multiples of inner loops, their quotients and remainders") {
  Expr bi = var("bi"), warp = var("warp"), lane = var("lane"), mi = var("mi"), fi = var("fi");
  std::map<std::string, LoopInfo> inner = loops({{"warp", 8}, {"lane", 32}, {"mi", 2}, {"fi", 2}});
  Expr base;
  // Rows of a 64-row warpgroup tile: warp w's 16 rows one after another.
  CHECK(span(bi * 128 + warp % 8 * 16 + fi * 8 + lane / 4, inner, &base) == 128);
  CHECK(is_const(simplify(base - bi * 128), 0));
  // Two 64-row instructions per warpgroup, two warpgroups: warp w % 4 holds
  // 16 rows of each instruction's 64; the span is the 256 rows all the same.
  Expr rows = bi * 256 + warp % 8 / 4 * 128 + mi * 64 + warp % 8 % 4 * 16 + fi * 8 + lane / 4;
  CHECK(span(rows, inner, &base) == 256);
  CHECK(is_const(simplify(base - bi * 256), 0));
  // A remainder over part of its period keeps its values' range (2 and 3:
  // 2 elements); one that wraps takes the whole period.
  CHECK(span(var("w") % 4, loops({{"w", 2}}, 2)) == 2);
  CHECK(span(var("w") / 2 % 3, loops({{"w", 8}})) == 3);
  // Not a variable of an inner loop inside the quotient: refused.
  CHECK(span((warp + 3) % 4, inner) == -1);
  // A quotient or remainder of a loop that may start below 0: refused.
  CHECK(span(var("w") / 2, loops({{"w", 4}}, -2)) == -1);
}
