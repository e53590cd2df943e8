#pragma once
// The IR shared by every stage after the front end: immutable, reference
// counted nodes behind the value handles Expr and Stmt. One X-macro lists the
// node kinds; the visitor, the mutator and the printer are generated from it,
// so a new kind is flagged everywhere it must be handled.

#include "dsl/Intrinsics.h"
#include "dsl/Type.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

#define COALESCE_FOR_EACH_EXPR(X)                                                                  \
  X(IntImm) X(FloatImm) X(Variable) X(Cast) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) X(Max)      \
  X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or) X(Not) X(Select) X(Load) X(Call) X(Let)

#define COALESCE_FOR_EACH_STMT(X)                                                                                      \
  X(For)                                                                                                               \
  X(Store)                                                                                                             \
  X(Allocate)                                                                                                          \
  X(Block) X(IfThenElse) X(LetStmt) X(Barrier) X(Evaluate) X(WarpMma) X(TensorCopy) X(TmaStaging) X(ProducerBoundary)  \
      X(PipelinedStaging)

/// The tensor-core instructions a schedule can map a reduction onto. The
/// warp-level ones (mma.sync, sm_80 and later): D (16 x 8, f32) += A (16 x k)
/// * B (k x 8), executed by one warp. The warpgroup-level ones (wgmma,
/// sm_90a only): D (64 x N, f32) += A (64 x k) * B (k x N), executed by the
/// 4 warps of a warpgroup together, with A and B read from shared memory
/// (k = 16 for bf16/f16, 8 for tf32, 32 for the 8-bit floats, which read
/// both operands K-major).
enum class MmaKind : uint8_t {
  None,
  BF16_m16n8k16,     ///< bf16 operands, f32 accumulator
  F16_m16n8k16,      ///< f16 operands, f32 accumulator
  TF32_m16n8k8,      ///< f32 operands rounded to tf32 (10-bit mantissa, nearest, ties away)
  BF16_wgmma_m64k16, ///< warpgroup: bf16 operands in shared memory, f32 accumulator
  F16_wgmma_m64k16,  ///< warpgroup: f16 operands in shared memory, f32 accumulator
  TF32_wgmma_m64k8,  ///< warpgroup: f32 operands rounded to tf32, both K-major in shared memory
  E4M3_wgmma_m64k32, ///< warpgroup: e4m3 operands, both K-major in shared memory, f32 accumulator
  E5M2_wgmma_m64k32, ///< warpgroup: e5m2 operands, both K-major in shared memory, f32 accumulator
  /// f32 operands as the tensor cores read f32 bits: the top 19 (sign,
  /// exponent, 10 bits of mantissa), the rest dropped (truncated toward
  /// zero). No copy or instruction rounds them first.
  TF32Truncated_m16n8k8,
  TF32Truncated_wgmma_m64k8, ///< warpgroup: as TF32Truncated_m16n8k8, both K-major in shared memory
};

/// Which dimension of an operand is contiguous in shared memory: its k
/// (K-major) or its m / n (MN-major).
enum class OperandMajor : uint8_t { K, MN };

/// What an MMA does to f32 operands: nothing (the 16- and 8-bit kinds), or
/// tf32, rounded to nearest (ties away) before the instruction reads them,
/// or truncated by the instruction itself.
enum class Tf32Operands : uint8_t { NotTf32, RoundedToNearest, Truncated };

/// What the compiler knows of one MMA instruction, in one table
/// (dsl/MmaInstructions.cpp, a switch without a default, so a kind left out
/// does not compile): every pass that depends on the instruction asks here
/// rather than comparing kinds.
struct MmaInstruction {
  const char *name;      ///< as messages and tilings name it: "bf16 m16n8k16", "tf32 wgmma"
  Type operand;          ///< A and B as they are stored: bf16, f16, or f32 for tf32
  Tf32Operands tf32;     ///< how it multiplies f32 operands (tf32 kinds only)
  bool warpgroup;        ///< 4 warps together, A and B read from shared memory (sm_90a)
  int m, n, k;           ///< a warp's rows of the tile (16), a fragment's columns (8), the reduction depth
  /// How a warpgroup MMA can read B: MN-major ([k][n], a B stored K x N,
  /// through the 16-bit kinds' transpose flag) or K-major ([n][k]) alike, or
  /// K-major only (tf32, which has no transpose flag, so the compiler stores
  /// a K x N B transposed; a B stored N x K, W(j, k), is K-major already).
  OperandMajor b_major;
  const char *ptx_type;  ///< the operands' type in the PTX instruction: "bf16", "f16", "tf32", "e4m3", "e5m2"
};
/// The table's row of `kind` (not MmaKind::None).
const MmaInstruction &mma_instruction(MmaKind kind);
/// The instruction that reads operands of type `operand` (f32: tf32) at the
/// warp or the warpgroup level; a UserError for any other type.
MmaKind mma_kind_for(Type operand, bool warpgroup);

// The table's columns by kind (MmaKind::None: "none" and the warp shape).
const char *mma_kind_name(MmaKind kind);
int mma_m(MmaKind kind); ///< rows of one warp's part of the instruction's tile (16)
int mma_n(MmaKind kind); ///< columns of one fragment (8)
int mma_k(MmaKind kind); ///< reduction depth (16 for bf16/f16, 8 for tf32, 32 for e4m3/e5m2): 32 bytes of each operand row
/// Whether the instruction is a warpgroup MMA (4 warps, operands in shared).
bool is_warpgroup_mma(MmaKind kind);
/// Whether the instruction multiplies f32 operands rounded to tf32 (to
/// nearest, before it reads them: the copies or a cvt round them).
bool mma_rounds_to_tf32(MmaKind kind);
/// Whether the instruction multiplies f32 operands truncated to tf32 (it
/// reads their top 19 bits itself: nothing rounds them first).
bool mma_truncates_to_tf32(MmaKind kind);
/// Whether the instruction multiplies f32 operands (a tf32 kind, either way).
bool mma_reads_f32(MmaKind kind);
/// Whether a warpgroup MMA reads B K-major ([n][k] in shared memory).
bool warpgroup_mma_reads_b_k_major(MmaKind kind);
/// The rows of a warpgroup MMA's tile (64) and the most columns it takes (256).
inline constexpr int kWarpgroupMmaRows = 64;
inline constexpr int kWarpgroupMmaMaxColumns = 256;

/// The names WarpMma binds in its update: the element's row and column in
/// the instruction's tile and the step of its reduction. A '.' keeps them
/// apart from every user name.
inline const char *const kMmaRow = "mma.m";
inline const char *const kMmaColumn = "mma.n";
inline const char *const kMmaStep = "mma.k";
/// ... and, in the accumulator's index, which of this lane's fragment
/// registers the element is: row half (0 or 1) and column (0 or 1).
inline const char *const kMmaFragRow = "mma.fi";
inline const char *const kMmaFragColumn = "mma.fj";
/// ... and, for a warpgroup MMA, which 8-column fragment of the tile (n / 8).
inline const char *const kMmaFragBlock = "mma.fn";

enum class IRNodeKind : uint8_t {
#define COALESCE_KIND(name) name,
  COALESCE_FOR_EACH_EXPR(COALESCE_KIND) COALESCE_FOR_EACH_STMT(COALESCE_KIND)
#undef COALESCE_KIND
};

struct IRNode {
  explicit IRNode(IRNodeKind node_kind) : kind(node_kind) {}
  virtual ~IRNode() = default;
  const IRNodeKind kind;
};

struct BaseExprNode : IRNode {
  BaseExprNode(IRNodeKind node_kind, Type value_type) : IRNode(node_kind), type(value_type) {}
  const Type type;
};
struct BaseStmtNode : IRNode {
  using IRNode::IRNode;
};

/// A value handle on an immutable expression node (may be undefined).
class Expr {
public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const BaseExprNode> node) : node_(std::move(node)) {}
  Expr(int value);   // NOLINT: an i32 immediate
  Expr(float value); // NOLINT: an f32 immediate
  Expr(double value); // NOLINT: an f32 immediate (Coalesce has no f64 values)

  bool defined() const { return node_ != nullptr; }
  const BaseExprNode *get() const { return node_.get(); }
  Type type() const { return node_->type; }
  /// The node as T if it is one, else nullptr (no RTTI).
  template <typename T> const T *as() const {
    return node_ && node_->kind == T::node_kind ? static_cast<const T *>(node_.get()) : nullptr;
  }
  bool same_as(const Expr &other) const { return node_ == other.node_; }

private:
  std::shared_ptr<const BaseExprNode> node_;
};

/// A value handle on an immutable statement node (may be undefined).
class Stmt {
public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const BaseStmtNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const BaseStmtNode *get() const { return node_.get(); }
  template <typename T> const T *as() const {
    return node_ && node_->kind == T::node_kind ? static_cast<const T *>(node_.get()) : nullptr;
  }
  bool same_as(const Stmt &other) const { return node_ == other.node_; }

private:
  std::shared_ptr<const BaseStmtNode> node_;
};

// ---------------------------------------------------------------- expressions

struct IntImm : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::IntImm;
  IntImm(Type t, int64_t v) : BaseExprNode(node_kind, t), value(v) {}
  const int64_t value;
  static Expr make(Type type, int64_t value);
};

struct FloatImm : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::FloatImm;
  FloatImm(Type t, double v) : BaseExprNode(node_kind, t), value(v) {}
  const double value;
  static Expr make(Type type, double value);
};

/// What a variable names: a pure variable, loop or let binding; a reduction
/// variable (which carries its domain); or a scalar parameter.
enum class VariableKind : uint8_t { Loop, Reduction, Param };

struct Variable : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Variable;
  Variable(Type t, std::string n, VariableKind k, Expr mn, Expr ext)
      : BaseExprNode(node_kind, t), name(std::move(n)), variable_kind(k),
        reduction_min(std::move(mn)), reduction_extent(std::move(ext)) {}
  const std::string name;
  const VariableKind variable_kind;
  const Expr reduction_min, reduction_extent; ///< the domain of a Reduction variable
  static Expr make(Type type, const std::string &name, VariableKind kind = VariableKind::Loop);
  static Expr make_reduction(const std::string &name, Expr min, Expr extent);
};

struct Cast : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Cast;
  Cast(Type t, Expr v) : BaseExprNode(node_kind, t), value(std::move(v)) {}
  const Expr value;
  static Expr make(Type type, Expr value);
};

/// Binary nodes share one shape; each kind is its own struct.
template <IRNodeKind K> struct BinaryNode : BaseExprNode {
  static constexpr IRNodeKind node_kind = K;
  BinaryNode(Type t, Expr a_, Expr b_) : BaseExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  const Expr a, b;
  static Expr make(Expr a, Expr b);
};
#define COALESCE_BINARY(name) using name = BinaryNode<IRNodeKind::name>;
COALESCE_BINARY(Add) COALESCE_BINARY(Sub) COALESCE_BINARY(Mul) COALESCE_BINARY(Div)
COALESCE_BINARY(Mod) COALESCE_BINARY(Min) COALESCE_BINARY(Max) COALESCE_BINARY(EQ)
COALESCE_BINARY(NE) COALESCE_BINARY(LT) COALESCE_BINARY(LE) COALESCE_BINARY(GT)
COALESCE_BINARY(GE) COALESCE_BINARY(And) COALESCE_BINARY(Or)
#undef COALESCE_BINARY

struct Not : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Not;
  explicit Not(Expr a_) : BaseExprNode(node_kind, Bool()), a(std::move(a_)) {}
  const Expr a;
  static Expr make(Expr a);
};

struct Select : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Select;
  Select(Type t, Expr c, Expr tv, Expr fv)
      : BaseExprNode(node_kind, t), condition(std::move(c)), true_value(std::move(tv)),
        false_value(std::move(fv)) {}
  const Expr condition, true_value, false_value;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

/// A read of `buffer` at one index per dimension (one flat index after
/// storage flattening).
struct Load : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Load;
  Load(Type t, std::string b, std::vector<Expr> i)
      : BaseExprNode(node_kind, t), buffer(std::move(b)), indices(std::move(i)) {}
  const std::string buffer;
  const std::vector<Expr> indices;
  static Expr make(Type type, const std::string &buffer, std::vector<Expr> indices);
};

namespace internal {
struct FuncContents; // dsl/FuncContents.h
} // namespace internal

/// An input buffer of the algorithm: its name, element type and extents
/// (outermost first, row-major), which may mention Params.
struct InputContents {
  std::string name;
  Type type;
  std::vector<Expr> extents;
  /// Elements between consecutive coordinates of each dimension, outermost
  /// first, the last 1 (a view into a larger tensor: Input's strided
  /// constructor); empty: dense and row-major, the strides the extents give.
  std::vector<Expr> strides;
};

/// What a call refers to: another Func or an Input (front end only, replaced
/// by loads during lowering), or an intrinsic (dsl/Intrinsics.h).
enum class CallType : uint8_t { Func, Input, Intrinsic };

struct Call : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Call;
  Call(Type t, std::string n, std::vector<Expr> a, CallType c, std::optional<Intrinsic> in,
       std::shared_ptr<internal::FuncContents> f, std::shared_ptr<const InputContents> i)
      : BaseExprNode(node_kind, t), name(std::move(n)), args(std::move(a)), call_type(c), intrinsic(in),
        func(std::move(f)), input(std::move(i)) {}
  /// The Func's or Input's name; an intrinsic's printed name.
  const std::string name;
  const std::vector<Expr> args;
  const CallType call_type;
  /// Which intrinsic, for an Intrinsic call; empty otherwise, so that
  /// `call->intrinsic == Intrinsic::AsyncLoad` is false for other calls.
  const std::optional<Intrinsic> intrinsic;
  const std::shared_ptr<internal::FuncContents> func;          ///< the callee of a Func call
  const std::shared_ptr<const InputContents> input;  ///< the buffer of an Input call
  /// A call of a Func or an Input (not an intrinsic: see make_intrinsic).
  static Expr make(Type type, const std::string &name, std::vector<Expr> args, CallType call_type,
                   std::shared_ptr<internal::FuncContents> func = nullptr,
                   std::shared_ptr<const InputContents> input = nullptr);
  /// A call of `intrinsic`; an argument count or a type outside the
  /// intrinsic's list entry is an internal error.
  static Expr make_intrinsic(Intrinsic intrinsic, Type type, std::vector<Expr> args);
  /// The same call with other arguments.
  Expr with_args(std::vector<Expr> new_args) const;
};

struct Let : BaseExprNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Let;
  Let(std::string n, Expr v, Expr b)
      : BaseExprNode(node_kind, b.type()), name(std::move(n)), value(std::move(v)),
        body(std::move(b)) {}
  const std::string name;
  const Expr value, body;
  static Expr make(const std::string &name, Expr value, Expr body);
};

// ----------------------------------------------------------------- statements

/// How a loop runs. Serial semantics hold for every kind until GPU codegen:
/// the host backend runs gpu_block and gpu_thread loops in order.
enum class ForKind : uint8_t { Serial, Unrolled, Vectorized, GpuBlock, GpuThread };
const char *for_kind_name(ForKind kind);

/// Where an allocation lives.
enum class MemoryType : uint8_t { Auto, Register, Shared, Heap };
const char *memory_type_name(MemoryType memory);

/// What made a loop, so that a later pass finds it by this mark, never by
/// its name: a loop of the schedule; one of the cooperative copies into
/// shared memory that stage_inputs_in_shared adds (their thread loops and
/// per-thread element loop); the k steps of one warp MMA, which the host
/// code generator runs as a loop; the thread loop of the producer warps of a
/// warp-specialized TMA pipeline (TmaCopies::producer), whose range
/// [min, min + extent) lies past the other thread loops' extent in its
/// dimension: the kernel's block grows by it, and the other loops run on
/// their own threads only (scheduler/FuseGpuThreadLoops.cpp).
/// PaddedCopy: the loops of the copy of an input that the TMA reads (rows
/// padded; scheduler/PadTmaInputs.h), a nest of its own. PersistentTiles:
/// the tiles one block of a persistent grid walks (gpu_persistent_blocks).
/// What made a loop. SliceSum: the split-K combine's loop over the slices,
/// whose body (the tile's per-element code) runs once per slice alike.
enum class LoopRole : uint8_t {
  Schedule,
  StagingCopy,
  MmaSteps,
  ProducerWarps,
  PaddedCopy,
  PersistentTiles,
  SliceSum,
  /// split_k's combine in a kernel of its own (SplitKMode::CombineKernel).
  SliceCombine,
  /// The copy-out of TileStores::SumsThroughShared, computing the epilogue
  /// a vector per step: kept a loop on every target (code generation tells
  /// LLVM not to unroll it; its code once is what the mode is for).
  EpilogueSteps,
};

struct For : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::For;
  For(std::string n, Expr mn, Expr ext, ForKind k, int gd, std::vector<std::string> rf, LoopRole r, Stmt b)
      : BaseStmtNode(node_kind), name(std::move(n)), min(std::move(mn)), extent(std::move(ext)),
        for_kind(k), gpu_dim(gd), reduction_of(std::move(rf)), role(r), body(std::move(b)) {}
  const std::string name;
  const Expr min, extent;
  const ForKind for_kind;
  const int gpu_dim;              ///< 0 = x, 1 = y, 2 = z for GPU loops; -1 otherwise
  /// The Funcs whose reductions this loop runs: one, two where
  /// fuse_reduction_with merged two reductions' nests, or none.
  const std::vector<std::string> reduction_of;
  const LoopRole role;            ///< what made the loop; a pass rebuilding it keeps it
  const Stmt body;
  static Stmt make(const std::string &name, Expr min, Expr extent, ForKind kind, Stmt body,
                   int gpu_dim = -1, const std::vector<std::string> &reduction_of = {},
                   LoopRole role = LoopRole::Schedule);
  /// Whether this loop runs `func`'s reduction.
  bool reduces(const std::string &func) const;
};

struct Store : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Store;
  Store(std::string b, std::vector<Expr> i, Expr v)
      : BaseStmtNode(node_kind), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
  const std::string buffer;
  const std::vector<Expr> indices;
  const Expr value;
  static Stmt make(const std::string &buffer, std::vector<Expr> indices, Expr value);
};

/// A buffer of constant `extents` (outermost first) live over `body`.
struct Allocate : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Allocate;
  Allocate(std::string n, Type t, MemoryType m, std::vector<Expr> e, std::string s, Stmt b)
      : BaseStmtNode(node_kind), name(std::move(n)), type(t), memory(m), extents(std::move(e)),
        staged_input(std::move(s)), body(std::move(b)) {}
  const std::string name;
  const Type type;
  const MemoryType memory;
  const std::vector<Expr> extents;
  /// The Input whose tiles this buffer holds, when stage_inputs_in_shared
  /// made it (its shared tile or the registers a copy passes through); ""
  /// for any other buffer. A pass rebuilding the node keeps it.
  const std::string staged_input;
  const Stmt body;
  static Stmt make(const std::string &name, Type type, MemoryType memory,
                   std::vector<Expr> extents, Stmt body, const std::string &staged_input = "");
};

struct Block : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Block;
  explicit Block(std::vector<Stmt> s) : BaseStmtNode(node_kind), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
  /// Flattens nested blocks and drops undefined statements.
  static Stmt make(const std::vector<Stmt> &stmts);
};

struct IfThenElse : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::IfThenElse;
  IfThenElse(Expr c, Stmt t, Stmt e)
      : BaseStmtNode(node_kind), condition(std::move(c)), then_case(std::move(t)),
        else_case(std::move(e)) {}
  const Expr condition;
  const Stmt then_case, else_case;
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

struct LetStmt : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::LetStmt;
  LetStmt(std::string n, Expr v, Stmt b)
      : BaseStmtNode(node_kind), name(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  const std::string name;
  const Expr value;
  const Stmt body;
  static Stmt make(const std::string &name, Expr value, Stmt body);
};

/// Every thread of a GPU block waits here; shared memory written before it is
/// visible after it. A no-op on the host, where thread loops run one by one.
/// With `threads` > 0, only that many threads (the block's first, those
/// other than its producer warps: scheduler/SplitWarpRoles.h) meet here.
struct Barrier : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Barrier;
  explicit Barrier(int t) : BaseStmtNode(node_kind), threads(t) {}
  const int threads; ///< 0: the whole block
  static Stmt make(int threads = 0);
};

struct Evaluate : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::Evaluate;
  explicit Evaluate(Expr v) : BaseStmtNode(node_kind), value(std::move(v)) {}
  const Expr value;
  static Stmt make(Expr value);
};

/// One lane's part of a warp-wide tensor-core instruction. For each element
/// (mma.m, mma.n) of the 16 x 8 tile that this lane owns (rows lane / 4 and
/// lane / 4 + 8, columns 2 (lane % 4) and 2 (lane % 4) + 1: the accumulator
/// fragment layout), `update` runs for mma.k in [0, mma_k(kind)), in order.
/// `update` is `acc[...] = acc[...] + a * b`, where a reads A's element
/// (mma.m, mma.k), b reads B's element (mma.k, mma.n), and acc's index names
/// the element's register by mma.fi = mma.m / 8 and mma.fj = mma.n % 2. The host runs it
/// as written; the GPU runs the 32 lanes' parts as one instruction, which
/// sums each step in its own order (the schedule allowed reassociation).
///
/// A warpgroup MMA (is_warpgroup_mma) is the same with a 64 x n tile shared
/// by the 4 warps 4 (warp / 4) .. 4 (warp / 4) + 3: warp w % 4 owns rows
/// 16 (w % 4) .. + 15 of it, each lane the fragment above in every 8-column
/// block mma.fn of the tile. mma.m (0..63) and mma.n (0..n-1) are the
/// element's row and column in the warpgroup's tile; acc's index names the
/// register by mma.fi, mma.fj and mma.fn. On the GPU the instruction reads
/// A and B from shared memory through matrix descriptors, which `a` and `b`
/// describe; the code generator takes their start from the operands'
/// addresses at mma.m = mma.n = mma.k = 0.
struct MmaSharedOperand {
  /// The descriptor's leading and stride byte offsets (128-byte swizzle).
  int leading_bytes = 0;
  int stride_bytes = 0;
  /// Whether the tile is stored with the non-reduction dimension contiguous
  /// (B's [k][n]): the instruction's transpose flag.
  bool mn_major = false;
};

struct WarpMma : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::WarpMma;
  WarpMma(MmaKind k, Expr l, Stmt u, Expr w, int n_, MmaSharedOperand a_, MmaSharedOperand b_)
      : BaseStmtNode(node_kind), kind(k), lane(std::move(l)), update(std::move(u)), warp(std::move(w)), n(n_),
        a(a_), b(b_) {}
  const MmaKind kind;
  const Expr lane;
  const Stmt update;
  const Expr warp;          ///< warpgroup MMAs only: the warp's index in the block
  const int n;              ///< columns of the instruction's tile
  const MmaSharedOperand a; ///< warpgroup MMAs only
  const MmaSharedOperand b; ///< warpgroup MMAs only
  static Stmt make(MmaKind kind, Expr lane, Stmt update);
  static Stmt make_warpgroup(MmaKind kind, Expr warp, Expr lane, int n, MmaSharedOperand a, MmaSharedOperand b,
                             Stmt update);
  /// This statement with another lane, warp and update.
  Stmt rebuild(Expr new_lane, Expr new_warp, Stmt new_update) const;
};

/// One thread's request that the tensor memory accelerator (TMA) copy a
/// box of an input into a 128-byte swizzled shared tile, completing on an
/// mbarrier (scheduler/StageWithTma.cpp). The box starts at `origin` (the
/// input's coordinates, outermost first) and spans `box` elements per
/// dimension; its innermost extent is one swizzle row (64 16-bit
/// elements). Elements outside the input arrive as 0. `destination` is a
/// Load of the tile's first element in shared memory (the copy's address,
/// never read); `barrier` a Load of the mbarrier that counts the copy's
/// bytes. `copy` is what the copy does, element by element: the host runs
/// it; the GPU issues one cp.async.bulk.tensor instead, which reads the
/// input through the tensor map of (input, box) the kernel is given.
struct TensorCopy : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::TensorCopy;
  TensorCopy(std::string in, std::vector<Expr> o, std::vector<int> b, Expr d, Expr bar, Stmt c, int m)
      : BaseStmtNode(node_kind), input(std::move(in)), origin(std::move(o)), box(std::move(b)),
        destination(std::move(d)), barrier(std::move(bar)), copy(std::move(c)), multicast(m) {}
  const std::string input;
  const std::vector<Expr> origin;
  const std::vector<int> box;
  const Expr destination;
  const Expr barrier;
  /// What lands in this block's shared memory, element by element (the
  /// host runs it): the whole box, also when it is multicast.
  const Stmt copy;
  /// 1, or the blocks of a cluster that share the box
  /// (TmaCopies::multicast): block r of the cluster copies rows (the
  /// box's next-to-last dimension; one before it is a batch's, of 1)
  /// [r R / m, (r + 1) R / m) of it into the shared memory of all m, and
  /// each block's barrier counts the whole box.
  const int multicast;
  static Stmt make(std::string input, std::vector<Expr> origin, std::vector<int> box, Expr destination, Expr barrier,
                   Stmt copy, int multicast = 1);
  /// The bytes the copy delivers into each block (zero-filled ones
  /// included): what its mbarrier expects.
  int bytes() const;
  /// The box one block issues: the rows split between the blocks of the
  /// multicast (the tensor map's box).
  std::vector<int> issued_box() const;
};

/// A staging loop whose tiles the tensor memory accelerator copies
/// (TmaCopies), between two passes: stage_inputs_in_shared leaves it,
/// lower_tma_pipelines replaces it by the TMA's pipeline (mbarriers,
/// producer warps, multicast, the pipeline across a persistent block's
/// tiles), and nothing else sees it. `loop` is the loop as the schedule
/// made it, its body still reading the inputs, from which the TMA's tiles
/// and steps are planned; `fallback` is the cp.async pipeline staging built
/// for it, which the kernel runs where the TMA cannot describe an input.
/// It never reaches code generation.
struct TmaStaging : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::TmaStaging;
  TmaStaging(Stmt l, Stmt f) : BaseStmtNode(node_kind), loop(std::move(l)), fallback(std::move(f)) {}
  const Stmt loop;
  const Stmt fallback;
  static Stmt make(Stmt loop, Stmt fallback);
};

/// A staging loop whose tiles are pipelined (two buffers, a copy through
/// registers, a cp.async pipeline of S slots, or the TMA's), between two
/// passes: stage_inputs_in_shared leaves it (staging the loops of one
/// buffer itself, copy then barrier), pipeline_staged_copies replaces it,
/// and nothing else sees it. `loop` is the loop as the schedule made it,
/// its body still reading the inputs.
struct PipelinedStaging : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::PipelinedStaging;
  explicit PipelinedStaging(Stmt l) : BaseStmtNode(node_kind), loop(std::move(l)) {}
  const Stmt loop;
  static Stmt make(Stmt loop);
};

/// Where a point of the producer warps' program lies (ProducerBoundary).
enum class ProducerPoint : uint8_t {
  Start, ///< after the pipeline's barriers are initialized: the producers' program begins
  Leave, ///< after their last copy: their program is done
  Idle,  ///< a pipeline in which they have nothing to do (the cp.async fallback)
};

/// A point of the producer warps' program in a warp-specialized TMA
/// pipeline (TmaCopies::producer), between two passes:
/// lower_tma_pipelines leaves it, reallocate_registers replaces it (by the
/// register reallocation the schedule asks for, ProducerWarps::registers,
/// or by nothing), and nothing else sees it. `producers` and `consumers`
/// are the thread loops of the two roles around an empty body; `registers` is what
/// the schedule asks the producers to keep (0: no reallocation); `stage`
/// and `loop` say whose staging it is, for messages.
struct ProducerBoundary : BaseStmtNode {
  static constexpr IRNodeKind node_kind = IRNodeKind::ProducerBoundary;
  ProducerBoundary(ProducerPoint p, Stmt prod, Stmt cons, int r, std::string st, std::string l)
      : BaseStmtNode(node_kind), point(p), producers(std::move(prod)), consumers(std::move(cons)), registers(r),
        stage(std::move(st)), loop(std::move(l)) {}
  const ProducerPoint point;
  const Stmt producers, consumers;
  const int registers;
  const std::string stage, loop;
  static Stmt make(ProducerPoint point, Stmt producers, Stmt consumers, int registers, std::string stage,
                   std::string loop);
};

} // namespace coalesce
