#pragma once
// Lowering pass, at launch: a program's kernels for scalar arguments that
// are multiples of 16, as Triton specializes its integer arguments. Each
// named argument X reads as (X / 16) * 16, which equals X at the launches
// that take the variant, and the simplifier folds what that decides: the
// test that the TMA can read the rows (K % 8 == 0 && N % 8 == 0) with the
// cp.async pipeline it guards, the vector copies' tests, a reduction's
// partial last step. The general program passed the verifiers; each branch
// the variant drops is one the general program would not take at these
// sizes, so the variant computes the same result for them.

#include "scheduler/LoweredFunc.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

/// The alignment a specialized argument is a multiple of.
constexpr int64_t kSpecializedMultiple = 16;

/// `program` for launches where each of `multiples` (scalar arguments) is a
/// multiple of kSpecializedMultiple. Only the kernels' bodies change: their
/// names, grids, blocks, shared memory and tensor maps stay the program's,
/// so a launch of the variant is set up as the program's is.
/// Nothing where those sizes decide nothing (no division or remainder by
/// a constant folds): the program itself is then the variant.
std::optional<GpuProgram> specialize_sizes(const GpuProgram &program, const std::vector<std::string> &multiples);

/// The scalar arguments of `program` whose values in `params` are positive
/// multiples of kSpecializedMultiple, in name order: the variant a
/// launch at `params` may take (empty: the general program, always with
/// COALESCE_SPECIALIZE=0, which turns specialization off for comparing).
std::vector<std::string> specializable_sizes(const GpuProgram &program, const std::map<std::string, int64_t> &params);
/// The same where `sizes` holds only scalar arguments (in name order).
std::vector<std::string> specializable_sizes(const std::map<std::string, int64_t> &sizes);

/// A variant's name in keys and reports: its sizes, "K, M, N".
std::string specialization_name(const std::vector<std::string> &multiples);

} // namespace coalesce
