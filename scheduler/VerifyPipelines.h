#pragma once
// Defence in depth, after lowering: the mbarrier pipelines of the serial
// nest (StageWithTma.h) are checked as a whole, so that a pipeline that
// would hang or race on the GPU (where the CPU run, which ignores waits,
// cannot show it) fails with an internal error naming the output, the
// barrier and the rule. Staging builds every pipeline, so a failure here is
// a compiler bug. The rules:
//
//   bytes      every mbarrier_expect_tx(bar, n) is followed in its block by
//              TMA copies completing on bar whose boxes deliver n bytes,
//              and every TMA copy by such an expect_tx;
//   arrivals   every statement that arrives on a barrier (an expect_tx,
//              or mbarrier_arrive(bar[, C]), counted in each of the C
//              blocks of a cluster) is run by exactly as many threads as
//              the barrier's initialization expects per phase (the
//              threads are counted over the enclosing thread loops and
//              the guards on them): one statement completes one phase;
//   waits      every mbarrier_wait is on an initialized barrier that
//              something completes: TMA copies (announced by an
//              expect_tx), or arrivals by the other role (the producer
//              warps' loops, LoopRole::ProducerWarps, against the rest),
//              or arrivals of its own role that come before it (a wait
//              for the last releases); a role never waits for arrivals
//              only it makes later;
//   phases     run for one block at known sizes (PipelinePhases.h): on
//              each barrier slot, from its init, one role's waits
//              alternate parity (the same parity twice in a row: the
//              second wait finds the first's phase complete and reads a
//              slot not yet refilled, or refills one still read), and
//              every phase the waits reach completes (else a wait never
//              returns). Where the trace cannot know a bound or condition
//              around a barrier, this rule checks nothing;
//   order      in the same trace, where the MMA warps' waits pass from one
//              group of them to another (ConsumerSchedule::PingPong: the
//              groups take a persistent block's tiles in turn), the first
//              group arrives on a named barrier after its waits and the
//              second syncs on it before its own: else the second group's
//              first wait on a slot could run two phases ahead of the
//              first's, and the parity it waits for is the same.
//
// The GPU's role split checks separately that no barrier of the whole
// block follows the producer warps' exit (SplitWarpRoles.h).

#include "dsl/IR.h"

#include <string>

namespace coalesce {

void verify_pipelines(const Stmt &s, const std::string &output);

} // namespace coalesce
