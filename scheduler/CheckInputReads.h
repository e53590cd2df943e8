#pragma once
// The reads rule: the algorithm reads every Input only inside its extents.

#include "scheduler/Environment.h"

namespace coalesce {

/// For every Input call of every definition, proves from the domains of
/// the variables (a pure variable spans the output's extent in its
/// dimension, an RDom its [min, min + extent)) that each coordinate stays in
/// [0, extent). A read past an edge (bias(j + 1) with bias of extent N) is a
/// UserError naming the bound it exceeds; so is a coordinate whose range
/// cannot be proven (not a sum of variables times constants, Params and
/// constants, or a range that depends on how two sizes compare). Lowering
/// clamps reads into the extents only to keep a tile's overhang past a
/// ragged edge inside the buffer; without this check it would also turn a
/// read past the edge into a silent read of the edge value. Runs after
/// infer_domain.
void check_input_reads(const Environment &env);

} // namespace coalesce
