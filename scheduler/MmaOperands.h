#pragma once
// Analysis shared by the passes that check, stage and tensorize an MMA
// stage (check_mma, stage_inputs_in_shared, pad_tma_inputs,
// tensorize_mma): which inputs the stage reads as the instruction's A and B,
// how each lies in shared memory, and how many groups of warpgroup MMAs a
// k step leaves running. One place, so that the passes agree by
// construction instead of through each other's headers.

#include "scheduler/Environment.h"

#include <string>

namespace coalesce {

/// The inputs an MMA stage reads as A(i, k) and as B: B(k, j) from a K x N
/// input, or W(j, k) from an N x K one (nn.Linear's weight, K contiguous);
/// and which of them is the instruction's first (row) operand: A, or B
/// where mma_tile laid the tile's rows along j (swap-AB).
struct MmaOperands {
  std::string a, b;
  int b_k_dim = 0; ///< which of B's last two dimensions k indexes: 0 for B(k, j), 1 for W(j, k)
  int a_k_dim = 1; ///< which of A's last two dimensions k indexes: 1 for A(i, k), 0 for A(k, i) (stored K x M)
  /// Batch dimensions: out(b..., i, j); A and B each read the batch
  /// variables they depend on before their own two (A(b, i, k), or A(i, k)
  /// for an A shared by the whole batch).
  int batch_dims = 0;
  int a_rank = 2, b_rank = 2; ///< A's and B's dimensions, batch ones included
  /// The dimension of B (batch ones counted) that k indexes.
  int b_k_dimension() const { return b_rank - 2 + b_k_dim; }
  /// The tile's rows run along j (mma_tile's rows_dim 1, swap-AB): B's rows
  /// fill the instruction's M, A's its N.
  bool rows_along_j = false;
  bool b_k_contiguous() const { return b_k_dim == 1; }
  bool a_k_contiguous() const { return a_k_dim == 1; }
  /// The dimension of A (batch ones counted) that k indexes.
  int a_k_dimension() const { return a_rank - 2 + a_k_dim; }
  /// The input whose rows fill the instruction's M (its first operand), and
  /// the one whose rows fill its N.
  const std::string &row_operand() const { return rows_along_j ? b : a; }
  const std::string &column_operand() const { return rows_along_j ? a : b; }
};
/// Whether the compiler must transpose `input` while staging it: the
/// instruction reads its operands K-major (tf32's warpgroup MMA) and
/// `input` is B stored K x N or A stored K x M.
bool mma_staged_transposed(MmaKind kind, const MmaOperands &operands, const std::string &input);
/// Whether the instruction's first operand (row_operand()) lies K-major in
/// shared memory: where it is stored with k contiguous (A M x K, B N x K)
/// or the compiler transposes it. Otherwise MN-major (A stored K x M, or B
/// stored K x N under swap-AB), which the 16-bit warpgroup MMA reads with
/// its transpose flag.
bool row_operand_staged_k_major(MmaKind kind, const MmaOperands &operands);
/// Whether the instruction's second operand (column_operand()) lies K-major
/// in shared memory, as for the first. Otherwise it is MN-major (B stored
/// K x N, or A stored K x M under swap-AB, staged as it lies), which the
/// descriptor reads in 64-column atoms.
bool column_operand_staged_k_major(MmaKind kind, const MmaOperands &operands);
/// For a stage that check_mma accepted.
MmaOperands mma_operands(const FuncContents &func, size_t stage);

/// The groups of warpgroup MMAs a k step leaves running when it ends: with a
/// pipeline of 3 or more stages, 1 (the step waits for the previous step's
/// MMAs, not its own, and the pipeline refills the slot two steps back,
/// which that wait freed), else 0. Staging and tensorize_mma both follow it.
int mma_groups_in_flight(bool warpgroup_mma, int stages);

} // namespace coalesce
