#pragma once
// The catalog of example schedules: every schedule a lesson uses, by name,
// so that the tests check each one numerically (at ragged shapes too),
// compare its printed loop nest with a golden file and, for those mapped to
// the GPU, assemble its PTX with ptxas. Each entry applies its schedule to a
// fresh, unscheduled Gemm (examples/Gemm.h); loop lists are outermost first.

#include "examples/Gemm.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace coalesce::examples {

/// One named schedule of the Gemm algorithm, for one epilogue.
struct ExampleSchedule {
  std::string name;
  Epilogue epilogue;
  bool maps_to_gpu;
  std::function<void(Gemm &)> apply;
};

/// One thread per output element, 16x16 threads per block; each thread
/// computes its element's whole sum (acc at the innermost thread loop),
/// then the epilogue.
inline void schedule_naive_gpu(Gemm &g) {
  Var bi("bi"), bj("bj"), ti("ti"), tj("tj");
  g.out.tile(g.i, g.j, bi, bj, ti, tj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ti, tj});
  g.acc.compute_at(g.out, tj);
}

/// The same blocks, but acc is computed per block tile: its reduction loop k
/// runs outside the thread loops, so all threads of a block take step k
/// together (the shape that shared-memory staging needs later).
inline void schedule_tiled(Gemm &g) {
  Var bi("bi"), bj("bj"), ti("ti"), tj("tj");
  g.out.tile(g.i, g.j, bi, bj, ti, tj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ti, tj});
  g.out.fuse_epilogue(g.acc, bj);
  g.acc.update().reorder({g.k, ti, tj});
}

/// A block tile of tile x tile elements, 16x16 threads, each thread holding a
/// reg x reg block of acc in registers (tile = 16 * reg). K is split by 8 and
/// the inner step unrolled; A and B are read from global memory.
inline void schedule_register_blocked(Gemm &g, int tile = 64, int reg = 4) {
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RVar ko("ko"), ki("ki");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, tile, tile)
      .gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, reg, reg)
      .gpu_threads({ti, tj});
  g.out.fuse_epilogue(g.acc, bj);
  g.acc.update().split(g.k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
}

/// register_blocked, with the A and B tiles of each K step (8 wide) copied
/// into shared memory once per step and read by every thread from there.
inline void schedule_shared_staged(Gemm &g, int tile = 64, int reg = 4) {
  schedule_register_blocked(g, tile, reg);
  RVar ko("ko");
  g.acc.update().stage_in_shared(g.A, ko).stage_in_shared(g.B, ko);
}

/// shared_staged, with the bias folded into acc's initial value: acc starts
/// from bias(j) instead of 0, and the epilogue reads acc alone.
inline void schedule_bias_folded(Gemm &g) {
  schedule_shared_staged(g);
  g.out.fold_bias_into_init();
}

/// Every schedule a lesson uses, by name.
inline std::vector<ExampleSchedule> example_schedules() {
  return {
      // No schedule: acc at root (a full M x N buffer), then out over it.
      {"naive", Epilogue::None, false, [](Gemm &) {}},
      // No schedule, with the epilogue: the unfused chain on the CPU.
      {"naive_gelu", Epilogue::BiasGelu, false, [](Gemm &) {}},
      {"naive_gpu", Epilogue::BiasGelu, true, schedule_naive_gpu},
      {"tiled", Epilogue::BiasGelu, true, schedule_tiled},
      {"register_blocked", Epilogue::None, true, [](Gemm &g) { schedule_register_blocked(g); }},
      {"shared_staged", Epilogue::None, true, [](Gemm &g) { schedule_shared_staged(g); }},
      {"fused_bias", Epilogue::Bias, true, [](Gemm &g) { schedule_shared_staged(g); }},
      {"fused_relu", Epilogue::BiasRelu, true, [](Gemm &g) { schedule_shared_staged(g); }},
      {"fused_gelu", Epilogue::BiasGelu, true, [](Gemm &g) { schedule_shared_staged(g); }},
      {"fused_gelu_tanh", Epilogue::BiasGeluTanh, true, [](Gemm &g) { schedule_shared_staged(g); }},
      {"bias_folded", Epilogue::BiasGelu, true, schedule_bias_folded},
      {"fused_gelu_128x128", Epilogue::BiasGelu, true, [](Gemm &g) { schedule_shared_staged(g, 128, 8); }},
  };
}

/// The catalog entry called `name`; throws std::out_of_range if there is none.
inline ExampleSchedule find_schedule(const std::string &name) {
  for (ExampleSchedule &s : example_schedules())
    if (s.name == name)
      return s;
  throw std::out_of_range("no example schedule named '" + name + "'");
}

/// A fresh Gemm with the named schedule applied.
inline Gemm scheduled_gemm(const ExampleSchedule &s) {
  Gemm g = make_gemm(s.epilogue);
  s.apply(g);
  return g;
}

} // namespace coalesce::examples
