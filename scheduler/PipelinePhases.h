#pragma once
// Part of verify_pipelines: the phases one block's mbarriers go through, as
// its roles run them. The serial nest is run at known values for one block:
// every parameter at one size (kPhaseTraceSize, so that k loops wrap their
// slots several times and a persistent block walks several tiles, of which
// the first four are run), every block loop at its first block, every thread loop at its first thread (a
// warp's first lane, the first producer thread), each statement attributed
// to its role (inside the producer warps' loop, LoopRole::ProducerWarps, or
// not). Only the parts that hold mbarrier operations are run; the rest (the
// MMAs, the epilogue) is skipped. Each wait is recorded with its slot and
// parity, each statement that arrives on a barrier (an expect_tx and its
// copies, an arrive) as one completed phase of its slot, which is what the
// arrivals rule makes it, and each init as the start of a fresh sequence.
// Named barriers between groups of consumer warps (group_barrier_sync /
// group_barrier_arrive, ConsumerSchedule::PingPong) are recorded too, with
// their id, and every event with the warp of the thread that ran it; so
// are the block's barriers between them.
//
// Where a loop bound, a condition or a barrier's slot around an mbarrier
// operation cannot be known at those values (a load, a last_arrival), the
// trace is abandoned and says so: the phases rule then checks nothing.

#include "dsl/IR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coalesce {

/// The size every parameter takes in the trace.
constexpr int64_t kPhaseTraceSize = 4096;

/// One event on one barrier slot, in the order its role runs it.
struct PhaseEvent {
  /// BlockSync: a barrier of the block's threads (Barrier: all of them,
  /// `slot` 0, or its first `slot` threads, the ones left after the
  /// producers' exit), which they pass after all they ran before.
  enum class Kind { Init, Wait, Complete, GroupSync, GroupArrive, BlockSync } kind;
  std::string array;     ///< the mbarrier array ("" for a named barrier)
  int64_t slot = 0;      ///< the named barrier's id for GroupSync and GroupArrive; BlockSync's threads
  int parity = 0;        ///< of a wait
  bool producer = false; ///< run by the producer warps
  int64_t warp = -1;     ///< the innermost thread loop along y's value (-1: none)
  std::string where;     ///< the statement, for messages
};

struct PhaseTrace {
  std::vector<PhaseEvent> events;
  bool complete = true; ///< false: abandoned (see above), `why` says where
  std::string why;
};

PhaseTrace trace_pipeline_phases(const Stmt &s);

} // namespace coalesce
