#include "dsl/Intrinsics.h"

#include "dsl/Error.h"

#include <iterator>

namespace coalesce {

namespace {

struct IntrinsicInfo {
  const char *name;
  int min_args, max_args;
  IntrinsicResult result;
};

// Indexed by the enumerator: both come from the one list.
constexpr IntrinsicInfo kIntrinsics[] = {
#define COALESCE_INTRINSIC_INFO(name, printed, min_args, max_args, result)                         \
  {printed, min_args, max_args, IntrinsicResult::result},
    COALESCE_FOR_EACH_INTRINSIC(COALESCE_INTRINSIC_INFO)
#undef COALESCE_INTRINSIC_INFO
};

const IntrinsicInfo &info(Intrinsic intrinsic) {
  auto index = static_cast<size_t>(intrinsic);
  COALESCE_INTERNAL_ASSERT(index < std::size(kIntrinsics), "intrinsic ", index, " is not in the list");
  return kIntrinsics[index];
}

} // namespace

const char *intrinsic_name(Intrinsic intrinsic) { return info(intrinsic).name; }
int intrinsic_min_args(Intrinsic intrinsic) { return info(intrinsic).min_args; }
int intrinsic_max_args(Intrinsic intrinsic) { return info(intrinsic).max_args; }
IntrinsicResult intrinsic_result(Intrinsic intrinsic) { return info(intrinsic).result; }

bool is_math_intrinsic(Intrinsic intrinsic) {
  switch (intrinsic) {
  case Intrinsic::Exp:
  case Intrinsic::Erf:
  case Intrinsic::Erfc:
  case Intrinsic::Tanh:
  case Intrinsic::Sqrt:
  case Intrinsic::Abs:
    return true;
  // No default: a new intrinsic is sorted here by whoever adds it.
  case Intrinsic::RoundToTf32:
  case Intrinsic::TruncateToTf32:
  case Intrinsic::ThreadIdX:
  case Intrinsic::ThreadIdY:
  case Intrinsic::ThreadIdZ:
  case Intrinsic::BlockIdX:
  case Intrinsic::BlockIdY:
  case Intrinsic::BlockIdZ:
  case Intrinsic::AsyncLoad:
  case Intrinsic::AsyncLoadVector:
  case Intrinsic::LoadVector:
  case Intrinsic::AsyncWait:
  case Intrinsic::AsyncCommit:
  case Intrinsic::AsyncWaitGroup:
  case Intrinsic::LastArrival:
  case Intrinsic::AtomicAdd:
  case Intrinsic::BitXor:
  case Intrinsic::FenceProxyAsync:
  case Intrinsic::WgmmaFence:
  case Intrinsic::WgmmaCommit:
  case Intrinsic::WgmmaWait:
  case Intrinsic::MbarrierInit:
  case Intrinsic::MbarrierInitFence:
  case Intrinsic::MbarrierExpectTx:
  case Intrinsic::MbarrierWait:
  case Intrinsic::MbarrierInval:
  case Intrinsic::MbarrierArrive:
  case Intrinsic::RegistersDecrease:
  case Intrinsic::RegistersIncrease:
  case Intrinsic::ThreadExit:
  case Intrinsic::ClusterBarrier:
  case Intrinsic::GroupBarrierSync:
  case Intrinsic::GroupBarrierArrive: return false;
  }
  return false;
}

Intrinsic thread_id_intrinsic(int dim) {
  static constexpr Intrinsic kThreadIds[] = {Intrinsic::ThreadIdX, Intrinsic::ThreadIdY, Intrinsic::ThreadIdZ};
  COALESCE_INTERNAL_ASSERT(dim >= 0 && dim < 3, "GPU dimension ", dim);
  return kThreadIds[dim];
}

Intrinsic block_id_intrinsic(int dim) {
  static constexpr Intrinsic kBlockIds[] = {Intrinsic::BlockIdX, Intrinsic::BlockIdY, Intrinsic::BlockIdZ};
  COALESCE_INTERNAL_ASSERT(dim >= 0 && dim < 3, "GPU dimension ", dim);
  return kBlockIds[dim];
}

} // namespace coalesce
