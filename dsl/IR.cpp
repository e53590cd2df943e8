#include "dsl/IR.h"

#include <algorithm>

#include "dsl/Error.h"

namespace coalesce {

Expr::Expr(int value) : Expr(IntImm::make(Int(32), value)) {}
Expr::Expr(float value) : Expr(FloatImm::make(Float(32), value)) {}
Expr::Expr(double value) : Expr(FloatImm::make(Float(32), value)) {}

Expr IntImm::make(Type type, int64_t value) {
  COALESCE_INTERNAL_ASSERT(type.is_int() || type.is_bool(), "IntImm of type ", type);
  return Expr(std::make_shared<const IntImm>(type, value));
}

Expr FloatImm::make(Type type, double value) {
  COALESCE_INTERNAL_ASSERT(type.is_float(), "FloatImm of type ", type);
  if (type.bits == 32)
    value = static_cast<float>(value);
  return Expr(std::make_shared<const FloatImm>(type, value));
}

Expr Variable::make(Type type, const std::string &name, VariableKind kind) {
  COALESCE_INTERNAL_ASSERT(!name.empty(), "variable without a name");
  return Expr(std::make_shared<const Variable>(type, name, kind, Expr(), Expr()));
}

Expr Variable::make_reduction(const std::string &name, Expr min, Expr extent) {
  COALESCE_INTERNAL_ASSERT(!name.empty() && min.defined() && extent.defined(),
                           "incomplete reduction variable");
  return Expr(std::make_shared<const Variable>(Int(32), name, VariableKind::Reduction,
                                               std::move(min), std::move(extent)));
}

Expr Cast::make(Type type, Expr value) {
  COALESCE_INTERNAL_ASSERT(value.defined(), "cast of undefined value");
  return Expr(std::make_shared<const Cast>(type, std::move(value)));
}

namespace {
bool is_comparison(IRNodeKind kind) {
  return kind == IRNodeKind::EQ || kind == IRNodeKind::NE || kind == IRNodeKind::LT ||
         kind == IRNodeKind::LE || kind == IRNodeKind::GT || kind == IRNodeKind::GE;
}
} // namespace

template <IRNodeKind K> Expr BinaryNode<K>::make(Expr a, Expr b) {
  COALESCE_INTERNAL_ASSERT(a.defined() && b.defined(), "binary node with undefined operand");
  COALESCE_INTERNAL_ASSERT(a.type() == b.type(), "binary node operand types differ: ",
                           a.type(), " vs ", b.type());
  Type result = is_comparison(K) ? Bool() : a.type();
  if (K == IRNodeKind::And || K == IRNodeKind::Or)
    COALESCE_INTERNAL_ASSERT(a.type().is_bool(), "logical operator on ", a.type());
  return Expr(std::make_shared<const BinaryNode<K>>(result, std::move(a), std::move(b)));
}

#define COALESCE_INSTANTIATE(name) template struct BinaryNode<IRNodeKind::name>;
COALESCE_INSTANTIATE(Add) COALESCE_INSTANTIATE(Sub) COALESCE_INSTANTIATE(Mul)
COALESCE_INSTANTIATE(Div) COALESCE_INSTANTIATE(Mod) COALESCE_INSTANTIATE(Min)
COALESCE_INSTANTIATE(Max) COALESCE_INSTANTIATE(EQ) COALESCE_INSTANTIATE(NE)
COALESCE_INSTANTIATE(LT) COALESCE_INSTANTIATE(LE) COALESCE_INSTANTIATE(GT)
COALESCE_INSTANTIATE(GE) COALESCE_INSTANTIATE(And) COALESCE_INSTANTIATE(Or)
#undef COALESCE_INSTANTIATE

Expr Not::make(Expr a) {
  COALESCE_INTERNAL_ASSERT(a.defined() && a.type().is_bool(), "Not of a non-boolean");
  return Expr(std::make_shared<const Not>(std::move(a)));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  COALESCE_INTERNAL_ASSERT(condition.defined() && condition.type().is_bool(),
                           "select condition must be boolean");
  COALESCE_INTERNAL_ASSERT(true_value.type() == false_value.type(),
                           "select arms differ in type: ", true_value.type(), " vs ",
                           false_value.type());
  Type type = true_value.type();
  return Expr(std::make_shared<const Select>(type, std::move(condition), std::move(true_value),
                                             std::move(false_value)));
}

Expr Load::make(Type type, const std::string &buffer, std::vector<Expr> indices) {
  for (const Expr &index : indices)
    COALESCE_INTERNAL_ASSERT(index.defined() && index.type() == Int(32),
                             "load index of '", buffer, "' is not i32");
  return Expr(std::make_shared<const Load>(type, buffer, std::move(indices)));
}

Expr Call::make(Type type, const std::string &name, std::vector<Expr> args, CallType call_type,
                std::shared_ptr<internal::FuncContents> func, std::shared_ptr<const InputContents> input) {
  COALESCE_INTERNAL_ASSERT(call_type != CallType::Func || func, "Func call without a callee");
  COALESCE_INTERNAL_ASSERT(call_type != CallType::Input || input, "Input call without a buffer");
  COALESCE_INTERNAL_ASSERT(call_type != CallType::Intrinsic, "intrinsic call '", name,
                           "' made by name: use Call::make_intrinsic");
  return Expr(std::make_shared<const Call>(type, name, std::move(args), call_type, std::nullopt,
                                           std::move(func), std::move(input)));
}

Expr Call::make_intrinsic(Intrinsic intrinsic, Type type, std::vector<Expr> args) {
  const char *name = intrinsic_name(intrinsic);
  int count = static_cast<int>(args.size());
  COALESCE_INTERNAL_ASSERT(count >= intrinsic_min_args(intrinsic) && count <= intrinsic_max_args(intrinsic),
                           name, " takes ", intrinsic_min_args(intrinsic), " to ", intrinsic_max_args(intrinsic),
                           " arguments, got ", count);
  for (const Expr &arg : args)
    COALESCE_INTERNAL_ASSERT(arg.defined(), "undefined argument of ", name);
  switch (intrinsic_result(intrinsic)) {
  case IntrinsicResult::SameAsArg0:
    COALESCE_INTERNAL_ASSERT(type == args.at(0).type(), name, " of ", args[0].type(), " typed ", type);
    break;
  case IntrinsicResult::Int32:
    COALESCE_INTERNAL_ASSERT(type == Int(32), name, " typed ", type);
    break;
  case IntrinsicResult::Float32:
    COALESCE_INTERNAL_ASSERT(type == Float(32), name, " typed ", type);
    break;
  }
  return Expr(std::make_shared<const Call>(type, name, std::move(args), CallType::Intrinsic, intrinsic,
                                           nullptr, nullptr));
}

Expr Call::with_args(std::vector<Expr> new_args) const {
  if (intrinsic)
    return make_intrinsic(*intrinsic, type, std::move(new_args));
  return make(type, name, std::move(new_args), call_type, func, input);
}

Expr Let::make(const std::string &name, Expr value, Expr body) {
  return Expr(std::make_shared<const Let>(name, std::move(value), std::move(body)));
}

const char *for_kind_name(ForKind kind) {
  switch (kind) {
  case ForKind::Serial: return "serial";
  case ForKind::Unrolled: return "unrolled";
  case ForKind::Vectorized: return "vectorized";
  case ForKind::GpuBlock: return "gpu_block";
  case ForKind::GpuThread: return "gpu_thread";
  }
  return "?";
}

const char *memory_type_name(MemoryType memory) {
  switch (memory) {
  case MemoryType::Auto: return "auto";
  case MemoryType::Register: return "register";
  case MemoryType::Shared: return "shared";
  case MemoryType::Heap: return "heap";
  }
  return "?";
}

Stmt For::make(const std::string &name, Expr min, Expr extent, ForKind kind, Stmt body,
               int gpu_dim, const std::vector<std::string> &reduction_of, LoopRole role) {
  COALESCE_INTERNAL_ASSERT(min.defined() && extent.defined() && body.defined(),
                           "incomplete loop '", name, "'");
  return Stmt(std::make_shared<const For>(name, std::move(min), std::move(extent), kind, gpu_dim,
                                          reduction_of, role, std::move(body)));
}

bool For::reduces(const std::string &func) const {
  return std::find(reduction_of.begin(), reduction_of.end(), func) != reduction_of.end();
}

Stmt Store::make(const std::string &buffer, std::vector<Expr> indices, Expr value) {
  for (const Expr &index : indices)
    COALESCE_INTERNAL_ASSERT(index.defined() && index.type() == Int(32),
                             "store index of '", buffer, "' is not i32");
  return Stmt(std::make_shared<const Store>(buffer, std::move(indices), std::move(value)));
}

Stmt Allocate::make(const std::string &name, Type type, MemoryType memory,
                    std::vector<Expr> extents, Stmt body, const std::string &staged_input) {
  return Stmt(std::make_shared<const Allocate>(name, type, memory, std::move(extents), staged_input,
                                               std::move(body)));
}

Stmt Block::make(const std::vector<Stmt> &stmts) {
  std::vector<Stmt> flat;
  for (const Stmt &s : stmts) {
    if (!s.defined())
      continue;
    if (const auto *block = s.as<Block>())
      flat.insert(flat.end(), block->stmts.begin(), block->stmts.end());
    else
      flat.push_back(s);
  }
  if (flat.size() == 1)
    return flat.front();
  return Stmt(std::make_shared<const Block>(std::move(flat)));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  COALESCE_INTERNAL_ASSERT(condition.defined() && condition.type().is_bool(),
                           "if condition must be boolean");
  return Stmt(std::make_shared<const IfThenElse>(std::move(condition), std::move(then_case),
                                                 std::move(else_case)));
}

Stmt LetStmt::make(const std::string &name, Expr value, Stmt body) {
  return Stmt(std::make_shared<const LetStmt>(name, std::move(value), std::move(body)));
}

Stmt Barrier::make(int threads) { return Stmt(std::make_shared<const Barrier>(threads)); }

Stmt Evaluate::make(Expr value) { return Stmt(std::make_shared<const Evaluate>(std::move(value))); }

Stmt WarpMma::make(MmaKind kind, Expr lane, Stmt update) {
  COALESCE_INTERNAL_ASSERT(kind != MmaKind::None && lane.defined() && update.as<Store>(),
                           "a warp MMA needs an instruction, a lane and one store");
  COALESCE_INTERNAL_ASSERT(!is_warpgroup_mma(kind), "a warpgroup MMA needs its warp and operand layouts");
  return Stmt(std::make_shared<const WarpMma>(kind, std::move(lane), std::move(update), Expr(), mma_n(kind),
                                              MmaSharedOperand{}, MmaSharedOperand{}));
}

Stmt WarpMma::make_warpgroup(MmaKind kind, Expr warp, Expr lane, int n, MmaSharedOperand a, MmaSharedOperand b,
                             Stmt update) {
  COALESCE_INTERNAL_ASSERT(is_warpgroup_mma(kind) && warp.defined() && lane.defined() && update.as<Store>(),
                           "a warpgroup MMA needs a warpgroup instruction, a warp, a lane and one store");
  COALESCE_INTERNAL_ASSERT(n > 0 && n % 8 == 0 && n <= kWarpgroupMmaMaxColumns, "warpgroup MMA with ", n,
                           " columns");
  return Stmt(std::make_shared<const WarpMma>(kind, std::move(lane), std::move(update), std::move(warp), n, a, b));
}

Stmt WarpMma::rebuild(Expr new_lane, Expr new_warp, Stmt new_update) const {
  if (is_warpgroup_mma(kind))
    return make_warpgroup(kind, std::move(new_warp), std::move(new_lane), n, a, b, std::move(new_update));
  return make(kind, std::move(new_lane), std::move(new_update));
}

Stmt TmaStaging::make(Stmt loop, Stmt fallback) {
  COALESCE_INTERNAL_ASSERT(loop.as<For>() && fallback.defined(), "a TMA staging mark needs its loop and its fallback");
  return Stmt(std::make_shared<const TmaStaging>(std::move(loop), std::move(fallback)));
}

Stmt PipelinedStaging::make(Stmt loop) {
  COALESCE_INTERNAL_ASSERT(loop.as<For>(), "a pipelined staging mark needs its loop");
  return Stmt(std::make_shared<const PipelinedStaging>(std::move(loop)));
}

Stmt ProducerBoundary::make(ProducerPoint point, Stmt producers, Stmt consumers, int registers, std::string stage,
                            std::string loop) {
  COALESCE_INTERNAL_ASSERT(producers.as<For>() && consumers.as<For>(),
                           "a producer boundary needs the thread loops of both roles");
  return Stmt(std::make_shared<const ProducerBoundary>(point, std::move(producers), std::move(consumers), registers,
                                                       std::move(stage), std::move(loop)));
}

Stmt TensorCopy::make(std::string input, std::vector<Expr> origin, std::vector<int> box, Expr destination,
                      Expr barrier, Stmt copy, int multicast) {
  COALESCE_INTERNAL_ASSERT(!input.empty() && !origin.empty() && origin.size() == box.size() &&
                               destination.as<Load>() && barrier.as<Load>() && copy.defined(),
                           "a tensor copy needs an input, a box of its rank, a destination, a barrier and a copy");
  for (int extent : box)
    COALESCE_INTERNAL_ASSERT(extent > 0 && extent <= 256, "a tensor copy's box extent of ", extent);
  // Each block's part starts at a 1024-byte atom of the 128-byte swizzle:
  // whole groups of 8 rows. The rows are the box's next-to-last dimension;
  // those before (a batch's) are 1.
  COALESCE_INTERNAL_ASSERT(box.size() >= 2, "a tensor copy of a ", box.size(), "-D box");
  const int rows = box[box.size() - 2];
  for (size_t d = 0; d + 2 < box.size(); ++d)
    COALESCE_INTERNAL_ASSERT(box[d] == 1, "a tensor copy whose box spans ", box[d], " in dimension ", d);
  COALESCE_INTERNAL_ASSERT(multicast >= 1 && multicast <= 8 && rows % (8 * multicast) == 0, "a tensor copy of ", rows,
                           " rows multicast to ", multicast, " blocks");
  return Stmt(std::make_shared<const TensorCopy>(std::move(input), std::move(origin), std::move(box),
                                                 std::move(destination), std::move(barrier), std::move(copy),
                                                 multicast));
}

std::vector<int> TensorCopy::issued_box() const {
  std::vector<int> issued = box;
  issued[issued.size() - 2] /= multicast; // the rows (a batch's dimension before them is 1)
  return issued;
}

int TensorCopy::bytes() const {
  int elements = 1;
  for (int extent : box)
    elements *= extent;
  return elements * destination.type().bytes();
}

} // namespace coalesce
