// The table of MMA instructions (dsl/IR.h: MmaInstruction). A new kind
// gets its row here, and the switch below does not compile until it has
// one (-Werror=switch).
#include "dsl/Error.h"
#include "dsl/IR.h"

namespace coalesce {

const MmaInstruction &mma_instruction(MmaKind kind) {
  // name, operand, tf32, warpgroup, m, n, k, b_major, ptx_type
  constexpr Tf32Operands none = Tf32Operands::NotTf32, nearest = Tf32Operands::RoundedToNearest,
                         truncated = Tf32Operands::Truncated;
  static const MmaInstruction bf16{"bf16 m16n8k16", BFloat(16), none, false, 16, 8, 16, OperandMajor::MN, "bf16"};
  static const MmaInstruction f16{"f16 m16n8k16", Float(16), none, false, 16, 8, 16, OperandMajor::MN, "f16"};
  static const MmaInstruction tf32{"tf32 m16n8k8", Float(32), nearest, false, 16, 8, 8, OperandMajor::MN, "tf32"};
  static const MmaInstruction bf16_group{"bf16 wgmma", BFloat(16), none, true, 16, 8, 16, OperandMajor::MN, "bf16"};
  static const MmaInstruction f16_group{"f16 wgmma", Float(16), none, true, 16, 8, 16, OperandMajor::MN, "f16"};
  static const MmaInstruction tf32_group{"tf32 wgmma", Float(32), nearest, true, 16, 8, 8, OperandMajor::K, "tf32"};
  // The 8-bit floats: wgmma only (sm_90a has no mma.sync for them), both
  // operands K-major (no transpose flag).
  static const MmaInstruction e4m3_group{"e4m3 wgmma", Float8E4M3(), none, true, 16, 8, 32, OperandMajor::K, "e4m3"};
  static const MmaInstruction e5m2_group{"e5m2 wgmma", Float8E5M2(), none, true, 16, 8, 32, OperandMajor::K, "e5m2"};
  // The same tf32 instructions fed the f32 bits as they lie.
  static const MmaInstruction tf32_truncated{"tf32 (truncated) m16n8k8", Float(32), truncated, false, 16, 8, 8,
                                             OperandMajor::MN,           "tf32"};
  static const MmaInstruction tf32_truncated_group{"tf32 (truncated) wgmma", Float(32), truncated, true, 16, 8, 8,
                                                   OperandMajor::K,          "tf32"};
  switch (kind) {
  case MmaKind::BF16_m16n8k16: return bf16;
  case MmaKind::F16_m16n8k16: return f16;
  case MmaKind::TF32_m16n8k8: return tf32;
  case MmaKind::BF16_wgmma_m64k16: return bf16_group;
  case MmaKind::F16_wgmma_m64k16: return f16_group;
  case MmaKind::TF32_wgmma_m64k8: return tf32_group;
  case MmaKind::E4M3_wgmma_m64k32: return e4m3_group;
  case MmaKind::E5M2_wgmma_m64k32: return e5m2_group;
  case MmaKind::TF32Truncated_m16n8k8: return tf32_truncated;
  case MmaKind::TF32Truncated_wgmma_m64k8: return tf32_truncated_group;
  case MmaKind::None: break;
  }
  internal_error("mma_instruction of MmaKind::None (no MMA)");
}

MmaKind mma_kind_for(Type operand, bool warpgroup) {
  for (MmaKind kind : {MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16, MmaKind::TF32_m16n8k8, MmaKind::BF16_wgmma_m64k16,
                       MmaKind::F16_wgmma_m64k16, MmaKind::TF32_wgmma_m64k8, MmaKind::E4M3_wgmma_m64k32,
                       MmaKind::E5M2_wgmma_m64k32}) {
    const MmaInstruction &instruction = mma_instruction(kind);
    if (instruction.operand == operand && instruction.warpgroup == warpgroup)
      return kind;
  }
  user_error("no ", warpgroup ? "warpgroup" : "warp", " MMA reads operands of type ", operand,
             "; the tensor cores take bf16, f16, or f32 rounded to tf32",
             operand.is_fp8() ? "; e4m3 and e5m2 only at the warpgroup level (Hopper's wgmma)" : "");
}

const char *mma_kind_name(MmaKind kind) { return kind == MmaKind::None ? "none" : mma_instruction(kind).name; }
int mma_m(MmaKind kind) { return kind == MmaKind::None ? 16 : mma_instruction(kind).m; }
int mma_n(MmaKind kind) { return kind == MmaKind::None ? 8 : mma_instruction(kind).n; }
int mma_k(MmaKind kind) { return kind == MmaKind::None ? 16 : mma_instruction(kind).k; }
bool is_warpgroup_mma(MmaKind kind) { return kind != MmaKind::None && mma_instruction(kind).warpgroup; }
bool mma_rounds_to_tf32(MmaKind kind) {
  return kind != MmaKind::None && mma_instruction(kind).tf32 == Tf32Operands::RoundedToNearest;
}
bool mma_truncates_to_tf32(MmaKind kind) {
  return kind != MmaKind::None && mma_instruction(kind).tf32 == Tf32Operands::Truncated;
}
bool mma_reads_f32(MmaKind kind) {
  return kind != MmaKind::None && mma_instruction(kind).tf32 != Tf32Operands::NotTf32;
}
bool warpgroup_mma_reads_b_k_major(MmaKind kind) {
  return is_warpgroup_mma(kind) && mma_instruction(kind).b_major == OperandMajor::K;
}

} // namespace coalesce
