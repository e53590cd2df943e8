#pragma once
// Lowering pass, at launch: a program's kernels for scalar arguments that
// are multiples of 16, 8 or 4, as Triton specializes its integer arguments
// on multiples of 16. Each named argument X, a multiple of m, reads as
// (X / m) * m, which equals X at the launches that take the variant, and
// the simplifier folds what that decides: the test that the TMA can read
// the rows (K % 8 == 0 && N % 8 == 0 for 16-bit elements) with the
// cp.async pipeline it guards, the vector copies' tests, a reduction's
// partial last step. Multiples of 8 and 4 are what 16-byte rows of 16- and
// 32-bit elements need: sizes such as 5000 x 3000 x 2000 (multiples of 8,
// not of 16) take the TMA's pipeline alone, as 4096^3 does. The general program passed the verifiers; each branch
// the variant drops is one the general program would not take at these
// sizes, so the variant computes the same result for them.

#include "scheduler/LoweredFunc.h"
#include "scheduler/SizeMultiples.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

/// `program` for launches where each scalar argument of `multiples` is a
/// multiple of its value there. Only the kernels' bodies change: their
/// names, grids, blocks, shared memory and tensor maps stay the program's,
/// so a launch of the variant is set up as the program's is.
/// Nothing where those sizes decide nothing (no division or remainder by
/// a constant folds): the program itself is then the variant.
std::optional<GpuProgram> specialize_sizes(const GpuProgram &program, const SizeMultiples &multiples);

/// The scalar arguments of `program` whose values in `params` are positive
/// multiples of one of kSpecializedMultiples, each with the largest such:
/// the variant a launch at `params` may take (empty: the general program,
/// always with COALESCE_SPECIALIZE=0, which turns specialization off for
/// comparing).
SizeMultiples specializable_sizes(const GpuProgram &program, const std::map<std::string, int64_t> &params);
/// The same where `sizes` holds only scalar arguments.
SizeMultiples specializable_sizes(const std::map<std::string, int64_t> &sizes);

/// A variant's name in keys and reports: its sizes and their multiples,
/// "K % 16, M % 8, N % 16".
std::string specialization_name(const SizeMultiples &multiples);

} // namespace coalesce
