#pragma once
// Lowering pass (Func::fuse_reduction_with, right after build_loop_nest):
// two reductions computed at one site, one right after the other, share one
// loop nest for their updates:
//
//   allocate g ...; <g's init>                allocate g ...; <g's init>
//   for g.s1.ii ...: ... for g.s1.k ...:      allocate u ...; <u's init>
//     g[..] = g[..] + A(i, k)*Wg(j, k)   ->   for g.s1.ii ...: ... for g.s1.k ...:
//   allocate u ...; <u's init>                  g[..] = g[..] + A(i, k)*Wg(j, k)
//   for u.s1.ii ...: ... for u.s1.k ...:        u[..] = u[..] + A(i, k)*Wu(j, k)
//     u[..] = u[..] + A(i, k)*Wu(j, k)
//
// The second update's loop and let names become the first's, and the two
// nests merge loop by loop: equal loops (name, bounds, kind) and equal lets
// and guards become one, and the innermost bodies run one after the other.
// The first update moves past the second Func's allocation and
// initialization, which neither read nor write it. Each sum is computed in
// its own order, so the result does not change; what changes is that an
// input value both read (A(i, k)) is loaded once per step.
//
// Rules, each a UserError naming both Funcs: the two updates are adjacent
// at one site (only the second Func's allocation and init between them);
// neither reads the other; their loop nests match loop for loop (the same
// splits, order and kinds over the same reduction domain: a split of one but
// not the other is refused at the first loop that differs); neither maps
// onto tensor cores (mma) or is split across blocks (split_k): not built
// for fused reductions yet. Inputs either stages (stage_in_shared) are
// staged later, at the merged loops: an input both stage is copied once.

#include "scheduler/Environment.h"

namespace coalesce {

Stmt fuse_reduction_nests(const Stmt &s, const Environment &env);

} // namespace coalesce
