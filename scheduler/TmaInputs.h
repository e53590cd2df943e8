#pragma once
// Analysis: how the tensor memory accelerator reads an input. It reads the
// input itself where every row starts a whole 16 bytes into its buffer (a
// condition on the extents and strides, tested by the kernel at run time
// and by the launcher before it encodes a tensor map), or, with
// TmaCopies::padded_copy, a copy of it that pad_tma_inputs makes first
// (rows padded to 128 bytes, transposed and rounded where a tf32 MMA reads
// it). Staging, the copies' nests, the verifier of the copies, the
// workspace arguments and the AOT launcher all read these facts here.

#include "dsl/IR.h"
#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

#include <optional>
#include <string>
#include <vector>

namespace coalesce {

/// How one input is copied for the TMA.
struct TmaInputCopy {
  const InputContents *input = nullptr;
  /// Stored transposed (K-major): the B of a tf32 warpgroup MMA.
  bool transposed = false;
  /// Rounded to tf32: the operands of a tf32 warpgroup MMA.
  bool round_to_tf32 = false;
  /// Made only where the input's rows are not whole 16-byte multiples
  /// (PaddedCopy::WhereRowsAreRagged): elsewhere the copy has no rows, and
  /// each TMA copy reads the input instead (tma_describable picks).
  bool only_where_ragged = false;
};

/// The inputs some stage stages with a TmaCopies::padded_copy that is made
/// (find_tma_input_copy), each once, in name order, with how each is copied (the same for every stage
/// that stages it, or a UserError).
std::vector<TmaInputCopy> tma_input_copies(const Environment &env);

/// The copy of `input`, if one is made: none for PaddedCopy::Never, nor for
/// PaddedCopy::WhereRowsAreRagged where the input's rows are known to be
/// whole 16-byte multiples (its extents are constants).
std::optional<TmaInputCopy> find_tma_input_copy(const Environment &env, const std::string &input);
/// The copy of `input` (an internal error where none is made).
TmaInputCopy tma_input_copy(const Environment &env, const std::string &input);

/// The bytes a copy's rows are padded to a multiple of: a TMA box's row
/// under the 128-byte swizzle, so that each lies in one L2 line. Rows
/// padded only to 16 bytes split sectors wherever their pitch is not a
/// multiple of 32: on an H100, tf32 at 4093 x 4091 x 4097 (copies of
/// 4,100 floats a row) took 0.804 ms against 0.512 with rows padded to
/// 32 bytes and 0.498 to 128.
constexpr int kTmaCopyRowBytes = 128;

/// The extents of an input's copy, in the copy's own order (the input's,
/// reversed where it is transposed), the innermost rounded up to whole
/// kTmaCopyRowBytes; with only_where_ragged, no rows where the input's
/// rows are whole 16-byte multiples.
std::vector<Expr> tma_copy_extents(const TmaInputCopy &copy);

/// The workspace arguments of the copies (Argument::is_workspace: scratch
/// memory the runtime allocates, never bound by name).
std::vector<Argument> tma_padded_workspaces(const Environment &env);

/// Whether the TMA can describe a row-major input of `type` with these
/// extents: its innermost extent holds whole 16-byte rows. The kernel
/// tests it at run time; the AOT launcher encodes a tensor map only where
/// it holds (and the runtime, runtime/TensorMaps.h, on the extents' values).
Expr tma_describable(Type type, const std::vector<Expr> &extents);
/// The same for an input, a view (Input's strides) included: every row
/// starts a whole 16 bytes into its buffer (rows_start_at_multiples,
/// dsl/Input.h).
Expr tma_describable(const InputContents &input);

} // namespace coalesce
