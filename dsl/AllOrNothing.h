#pragma once
// Runs one schedule primitive all or nothing (used by dsl/Func.cpp and
// dsl/MmaSchedule.cpp, the two files that define primitives).

#include "dsl/Func.h"
#include "dsl/FuncContents.h"

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace coalesce {

// A primitive may change a schedule and then find a mistake (compute_at
// rewrites one stage's loops before it checks the next; mma_tile splits
// and fuses before a later step can fail); the caller catches the UserError
// and goes on, so the schedules of every Func it may touch are restored
// before the error leaves. Primitives that call others (tile,
// register_block, fuse_epilogue, mma_tile, mma) nest: the outermost
// restores all.
template <typename Body>
auto all_or_nothing(std::initializer_list<std::shared_ptr<internal::FuncContents>> funcs, Body body)
    -> decltype(body()) {
  std::vector<std::pair<std::shared_ptr<internal::FuncContents>, FuncSchedule>> saved;
  for (const auto &func : funcs)
    saved.emplace_back(func, func->schedule);
  try {
    return body();
  } catch (...) {
    for (auto &[func, schedule] : saved)
      func->schedule = std::move(schedule);
    throw;
  }
}

} // namespace coalesce
