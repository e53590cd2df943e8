#include "dsl/Func.h"

#include "dsl/AllOrNothing.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "dsl/Input.h"
#include "dsl/Limits.h"

#include <algorithm>
#include <initializer_list>
#include <set>

namespace coalesce {

namespace {

// The reduction variables a definition iterates over, in order of first use.
class FindReductionVars : public IRVisitor {
public:
  std::vector<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Reduction &&
        std::find(names.begin(), names.end(), op->name) == names.end())
      names.push_back(op->name);
  }
};

std::string join_dims(const StageSchedule &stage) {
  std::string names;
  for (const Dim &dim : stage.dims)
    names += (names.empty() ? "" : ", ") + dim.var;
  return names;
}

// Undoes compute_at's mirroring: each stage gets its own pure loops back
// (outermost first, as a fresh definition has them), keeping its reduction
// loops with their splits and order. A Func placed anew (at root, inline or
// at another site) then starts from its own loops, not a consumer's.
// `leaving`: the Func leaves sites altogether (root, inline), so a tile's
// storage request (store_in, or fuse_epilogue's registers) goes too.
void forget_site(internal::FuncContents &func, bool leaving) {
  FuncSchedule &schedule = func.schedule;
  if (schedule.placement != Placement::At)
    return;
  for (StageSchedule &stage : schedule.stages) {
    std::vector<Dim> dims;
    for (const std::string &var : func.pure_vars)
      dims.push_back(Dim{var});
    for (const Dim &dim : stage.dims)
      if (dim.is_rvar)
        dims.push_back(dim);
    stage.dims = dims;
    std::vector<Split> splits;
    for (const Split &split : stage.splits)
      if (split.is_rvar)
        splits.push_back(split);
    stage.splits = splits;
    stage.mma_layout = MmaLayout{};
  }
  schedule.mirrored_from.clear();
  schedule.at_func.clear();
  schedule.at_var.clear();
  schedule.placement = Placement::Root;
  if (leaving)
    schedule.memory = MemoryType::Auto;
}

} // namespace

// ------------------------------------------------------------------- FuncRef

FuncRef::FuncRef(std::shared_ptr<internal::FuncContents> func, std::vector<Expr> args)
    : func_(std::move(func)), args_(std::move(args)) {}

FuncRef::operator Expr() const {
  if (!func_->defined)
    user_error("Func '", func_->name, "' is used before it is defined");
  if (args_.size() != func_->pure_vars.size())
    user_error("Func '", func_->name, "' has ", func_->pure_vars.size(),
               " dimensions but is called with ", args_.size(), " coordinates");
  for (const Expr &arg : args_)
    if (!arg.defined() || arg.type() != Int(32))
      user_error("Func '", func_->name, "' is called with a coordinate that is not i32");
  return Call::make(func_->type, func_->name, args_, CallType::Func, func_);
}

void FuncRef::operator=(const Expr &value) {
  if (!value.defined())
    user_error("Func '", func_->name, "' is defined with an undefined value");
  if (func_->defined) {
    add_update(value);
    return;
  }
  // Collected apart and stored only once every check passed, so that a
  // rejected definition leaves the Func as it was.
  std::set<std::string> seen;
  std::vector<std::string> pure_vars;
  for (const Expr &arg : args_) {
    const auto *var = arg.as<Variable>();
    if (!var || var->variable_kind != VariableKind::Loop)
      user_error("the pure definition of '", func_->name, "' must be written at plain Vars, as in ",
                 func_->name, "(i, j) = ...; got ", func_->name, "(..., ", to_string(arg), ", ...)");
    if (!seen.insert(var->name).second)
      user_error("the pure definition of '", func_->name, "' uses Var '", var->name, "' twice");
    pure_vars.push_back(var->name);
  }
  FindReductionVars rvars;
  rvars.visit_expr(value);
  if (!rvars.names.empty())
    user_error("the pure definition of '", func_->name, "' uses reduction variable '",
               rvars.names.front(), "': write the reduction as an update, ", func_->name,
               "(...) += ..., after an initial value");
  func_->pure_vars = pure_vars;
  func_->type = value.type();
  func_->pure = internal::Definition{args_, value};
  func_->defined = true;
  StageSchedule stage;
  for (const std::string &var : func_->pure_vars)
    stage.dims.push_back(Dim{var});
  func_->schedule.stages = {stage};
}

void FuncRef::add_update(const Expr &value) {
  if (args_.size() != func_->pure_vars.size())
    user_error("update of '", func_->name, "' has ", args_.size(), " coordinates; '", func_->name,
               "' has ", func_->pure_vars.size());
  for (size_t d = 0; d < args_.size(); ++d) {
    const auto *var = args_[d].as<Variable>();
    if (!var || var->name != func_->pure_vars[d])
      user_error("update of '", func_->name, "' writes at ", to_string(args_[d]), " in dimension ", d,
                 "; updates must write at the pure coordinates, ", func_->name, "(",
                 func_->pure_vars[d], ", ...)");
  }
  if (value.type() != func_->type)
    user_error("update of '", func_->name, "' has type ", value.type(), " but '", func_->name,
               "' is ", func_->type);
  func_->updates.push_back(internal::Definition{args_, value});
  StageSchedule stage;
  for (const std::string &var : func_->pure_vars)
    stage.dims.push_back(Dim{var});
  FindReductionVars rvars;
  rvars.visit_expr(value);
  for (const std::string &rvar : rvars.names)
    stage.dims.push_back(Dim{rvar, ForKind::Serial, -1, true});
  stage.reduction_vars = rvars.names;
  func_->schedule.stages.push_back(stage);
}

void FuncRef::operator+=(const Expr &term) {
  if (!func_->defined)
    user_error("'", func_->name, "' += ... needs an initial value first: write ", func_->name,
               "(...) = 0.0f before the reduction");
  add_update(Expr(*this) + term);
}

void FuncRef::operator*=(const Expr &term) {
  if (!func_->defined)
    user_error("'", func_->name, "' *= ... needs an initial value first: write ", func_->name,
               "(...) = 1.0f before the reduction");
  add_update(Expr(*this) * term);
}

// --------------------------------------------------------------------- Stage

Stage::Stage(std::shared_ptr<internal::FuncContents> func, int index) : func_(std::move(func)), index_(index) {}

StageSchedule &Stage::schedule() const {
  if (!func_->defined)
    user_error("Func '", func_->name, "' is scheduled before it is defined");
  if (index_ < 0 || index_ >= static_cast<int>(func_->schedule.stages.size()))
    user_error("Func '", func_->name, "' has ", func_->updates.size(), " update definitions; there is no update ",
               index_ - 1);
  return func_->schedule.stages[index_];
}

std::string Stage::describe() const {
  if (index_ == 0)
    return "'" + func_->name + "'";
  return str_cat("'", func_->name, "' (update ", index_ - 1, ")");
}

size_t Stage::find_dim(const std::string &var, const char *primitive) const {
  const StageSchedule &stage = schedule();
  for (size_t d = 0; d < stage.dims.size(); ++d)
    if (stage.dims[d].var == var)
      return d;
  for (const Split &split : stage.splits)
    if (split.old_var == var)
      user_error("in schedule for ", describe(), ": ", primitive, " of '", var, "', which was already split into '",
                 split.outer, "' and '", split.inner, "'; use one of those");
  user_error("in schedule for ", describe(), ": ", primitive, " of unknown loop '", var, "'; the loops of ",
             describe(), " are: ", join_dims(stage));
}

void Stage::check_new_name(const std::string &var, const char *primitive) const {
  const StageSchedule &stage = schedule();
  bool used = std::any_of(stage.dims.begin(), stage.dims.end(), [&](const Dim &d) { return d.var == var; });
  for (const Split &split : stage.splits)
    used |= split.old_var == var || split.outer == var || split.inner == var;
  for (const std::string &pure : func_->pure_vars)
    used |= pure == var;
  if (used)
    user_error("in schedule for ", describe(), ": ", primitive, " reuses the name '", var,
               "', which is already a loop or variable of ", describe(), "; choose a new name");
}

Stage &Stage::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    size_t d = find_dim(old.name, "split");
    if (factor <= 0)
      user_error("in schedule for ", describe(), ": split of '", old.name, "' by ", factor,
                 "; the factor must be positive");
    if (factor > kMaxExtent)
      user_error("in schedule for ", describe(), ": split of '", old.name, "' by ", factor,
                 "; split factors are at most ", kMaxExtentText,
                 ", so that loop bounds computed in 32 bits cannot overflow");
    check_new_name(outer.name, "split");
    check_new_name(inner.name, "split");
    if (outer.name == inner.name)
      user_error("in schedule for ", describe(), ": split of '", old.name, "' names both new loops '", outer.name, "'");
    Dim old_dim = stage.dims[d];
    if (old_dim.kind != ForKind::Serial)
      user_error("in schedule for ", describe(), ": split of '", old.name, "', which is already marked ",
                 for_kind_name(old_dim.kind), "; split first, then map the new loops");
    Dim outer_dim = old_dim, inner_dim = old_dim;
    outer_dim.var = outer.name;
    inner_dim.var = inner.name;
    stage.dims[d] = inner_dim;
    stage.dims.insert(stage.dims.begin() + d, outer_dim);
    stage.splits.push_back(Split{old.name, outer.name, inner.name, factor, old_dim.is_rvar});
    return *this;
  });
}

Stage &Stage::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                   const VarOrRVar &xi, const VarOrRVar &yi, int x_factor, int y_factor) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    split(x, xo, xi, x_factor);
    split(y, yo, yi, y_factor);
    return reorder({xo, yo, xi, yi});
  });
}

Stage &Stage::reorder(const std::vector<VarOrRVar> &outermost_first) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    std::vector<size_t> positions;
    for (const VarOrRVar &var : outermost_first) {
      size_t d = find_dim(var.name, "reorder");
      if (std::find(positions.begin(), positions.end(), d) != positions.end())
        user_error("in schedule for ", describe(), ": reorder names loop '", var.name, "' twice");
      positions.push_back(d);
    }
    // The named loops take the slots they occupied, in the order given.
    std::vector<size_t> slots = positions;
    std::sort(slots.begin(), slots.end());
    std::vector<Dim> dims = stage.dims;
    for (size_t n = 0; n < slots.size(); ++n)
      dims[slots[n]] = stage.dims[positions[n]];
    stage.dims = dims;
    return *this;
  });
}

Stage &Stage::unroll(const VarOrRVar &var) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    stage.dims[find_dim(var.name, "unroll")].kind = ForKind::Unrolled;
    return *this;
  });
}

Stage &Stage::vectorize(const VarOrRVar &var) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    Dim &dim = stage.dims[find_dim(var.name, "vectorize")];
    if (dim.is_rvar)
      user_error("in schedule for ", describe(), ": cannot vectorize reduction loop '", var.name,
                 "': its iterations add into the same element; vectorize a pure loop");
    dim.kind = ForKind::Vectorized;
    return *this;
  });
}

Stage &Stage::map_to_gpu(const std::vector<VarOrRVar> &vars, ForKind kind, const char *primitive) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    if (vars.empty() || vars.size() > 3)
      user_error("in schedule for ", describe(), ": ", primitive, " takes one to three loops, got ", vars.size());
    for (size_t n = 0; n < vars.size(); ++n) {
      Dim &dim = stage.dims[find_dim(vars[n].name, primitive)];
      if (dim.is_rvar && kind == ForKind::GpuBlock)
        user_error("in schedule for ", describe(), ": cannot map reduction loop '", dim.var,
                   "' to GPU blocks: each block would hold only partial sums of '", func_->name,
                   "', and the epilogue would run on each of them; split a reduction across blocks with "
                   "split_k on the Func that fuses it, which combines the slices before the epilogue runs once");
      if (dim.is_rvar)
        user_error("in schedule for ", describe(), ": cannot map reduction loop '", dim.var, "' to GPU threads"
                   ": parallel iterations would add into the same element at once; map a pure loop and keep '",
                   dim.var, "' serial inside it");
      dim.kind = kind;
      dim.gpu_dim = static_cast<int>(vars.size() - 1 - n);
    }
    return *this;
  });
}

Stage &Stage::gpu_blocks(const std::vector<VarOrRVar> &vars) { return map_to_gpu(vars, ForKind::GpuBlock, "gpu_blocks"); }
Stage &Stage::gpu_threads(const std::vector<VarOrRVar> &vars) { return map_to_gpu(vars, ForKind::GpuThread, "gpu_threads"); }

Stage &Stage::register_block(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &tx, const VarOrRVar &ty,
                             const VarOrRVar &rx, const VarOrRVar &ry, int tm, int tn) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    split(x, tx, rx, tm);
    split(y, ty, ry, tn);
    reorder({tx, ty, rx, ry});
    unroll(rx);
    return unroll(ry);
  });
}

Stage &Stage::stage_in_shared(const Input &input, const VarOrRVar &at_loop, SharedLayout layout, TileCopies copies) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    find_dim(at_loop.name, "stage_in_shared");
    if (layout.padding < 0)
      user_error("in schedule for ", describe(), ": stage_in_shared of '", input.name(), "' with padding ",
                 layout.padding, "; padding must be zero or positive");
    if (layout.transposed && input.dimensions() < 2)
      user_error("in schedule for ", describe(), ": stage_in_shared of '", input.name(), "' transposed, but it has ",
                 input.dimensions(), " dimension; a tile is transposed in its last two dimensions");
    for (const SharedStaging &staged : stage.staged_inputs)
      if (staged.input == input.name())
        user_error("in schedule for ", describe(), ": '", input.name(), "' is already staged in shared memory at '",
                   staged.at_loop, "'");
    stage.staged_inputs.push_back(SharedStaging{input.name(), at_loop.name, layout, copies});
    return *this;
  });
}

Stage &Stage::allow_reassociation() {
  return all_or_nothing({func_}, [&]() -> Stage & {
    schedule().allow_reassociation = true;
    return *this;
  });
}

Stage &Stage::allow_reduction_invariant_terms() {
  return all_or_nothing({func_}, [&]() -> Stage & {
    schedule().allow_reduction_invariant_terms = true;
    return *this;
  });
}

// ---------------------------------------------------------------------- Func

Func::Func(std::string name) : contents_(std::make_shared<internal::FuncContents>()) {
  check_identifier(name, "Func");
  contents_->name = std::move(name);
}

FuncRef Func::operator()(std::vector<Expr> args) const { return FuncRef(contents_, std::move(args)); }

Stage Func::update(int index) const {
  if (index < 0 || index >= static_cast<int>(contents_->updates.size()))
    user_error("Func '", name(), "' has ", contents_->updates.size(), " update definitions; there is no update ", index);
  return Stage(contents_, index + 1);
}

Func &Func::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor) {
  pure().split(old, outer, inner, factor);
  return *this;
}
Func &Func::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                 const VarOrRVar &xi, const VarOrRVar &yi, int x_factor, int y_factor) {
  pure().tile(x, y, xo, yo, xi, yi, x_factor, y_factor);
  return *this;
}
Func &Func::reorder(const std::vector<VarOrRVar> &vars) {
  pure().reorder(vars);
  return *this;
}
Func &Func::unroll(const VarOrRVar &var) {
  pure().unroll(var);
  return *this;
}
Func &Func::vectorize(const VarOrRVar &var) {
  pure().vectorize(var);
  return *this;
}
Func &Func::gpu_blocks(const std::vector<VarOrRVar> &vars) {
  pure().gpu_blocks(vars);
  return *this;
}
Func &Func::gpu_threads(const std::vector<VarOrRVar> &vars) {
  pure().gpu_threads(vars);
  return *this;
}
Func &Func::register_block(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &tx, const VarOrRVar &ty,
                           const VarOrRVar &rx, const VarOrRVar &ry, int tm, int tn) {
  pure().register_block(x, y, tx, ty, rx, ry, tm, tn);
  return *this;
}

Func &Func::compute_at(const Func &consumer, const VarOrRVar &loop) {
  return all_or_nothing({contents_, consumer.contents()}, [&]() -> Func & {
    FuncSchedule &mine = contents_->schedule;
    if (!contents_->defined || !consumer.contents_->defined)
      user_error("compute_at of '", name(), "' at '", consumer.name(), "': define both Funcs before scheduling");
    if (consumer.contents_ == contents_)
      user_error("in schedule for '", name(), "': cannot compute '", name(), "' inside its own loop '", loop.name, "'");
    // A reduction loop of the consumer is never a legal site: when the consumer
    // is this Func's epilogue it would be inside this Func's... and when this Func
    // is the epilogue of the consumer, it would see partial sums.
    const FuncSchedule &theirs = consumer.contents_->schedule;
    for (size_t s = 1; s < theirs.stages.size(); ++s)
      for (const Dim &dim : theirs.stages[s].dims)
        if (dim.var == loop.name && dim.is_rvar)
          user_error("in schedule for '", name(), "': cannot compute '", name(), "' inside reduction loop '", loop.name,
                     "' of '", consumer.name(), "': '", consumer.name(),
                     "' holds only partial sums there, and an epilogue must run after the reduction; compute '",
                     name(), "' at a pure loop of its consumer, or compute '", consumer.name(),
                     "' at a loop of '", name(), "' instead");
    // The slice loop of a split reduction is the same mistake one level up:
    // each of its blocks holds one slice's partial sums.
    if (theirs.split_k.requested() && theirs.split_k.slice_var == loop.name)
      user_error("in schedule for '", name(), "': cannot compute '", name(), "' at '", loop.name,
                 "', the loop over the slices of '", theirs.split_k.producer, "'s split reduction (split_k): each "
                 "slice holds only partial sums of '", theirs.split_k.producer,
                 "', and an epilogue must run once, after the slices are combined; fuse at the block loop outside "
                 "the slices, where split_k runs the epilogue after the combine");
    const StageSchedule &consumer_pure = theirs.stages.front();
    size_t at = consumer_pure.dims.size();
    for (size_t d = 0; d < consumer_pure.dims.size(); ++d)
      if (consumer_pure.dims[d].var == loop.name)
        at = d;
    if (at == consumer_pure.dims.size())
      user_error("in schedule for '", name(), "': compute_at '", consumer.name(), "' loop '", loop.name,
                 "', which is not a loop of '", consumer.name(), "'s pure definition; its loops are: ",
                 join_dims(consumer_pure));
    if (contents_->pure_vars.size() != consumer.contents_->pure_vars.size())
      user_error("in schedule for '", name(), "': compute_at '", consumer.name(), "' needs both Funcs to have the same ",
                 "dimensions ('", name(), "' has ", contents_->pure_vars.size(), ", '", consumer.name(), "' has ",
                 consumer.contents_->pure_vars.size(), ")");
    // Mirror the consumer's loops below `loop`: this Func computes one value
    // per consumer point of the tile, so its pure loops are the consumer's.
    // A second compute_at (or fuse_epilogue) replaces the first: start from
    // this Func's own loops again.
    forget_site(*contents_, false);
    std::vector<Dim> inner(consumer_pure.dims.begin() + at + 1, consumer_pure.dims.end());
    for (Dim &dim : inner)
      dim.mirrored = true;
    mine.mirrored_from.clear();
    for (const Dim &dim : consumer_pure.dims)
      mine.mirrored_from.push_back(dim.var);
    for (size_t s = 0; s < mine.stages.size(); ++s) {
      StageSchedule &stage = mine.stages[s];
      for (const Dim &dim : stage.dims)
        if (!dim.is_rvar && (dim.kind != ForKind::Serial || !stage.splits.empty()) &&
            std::find(contents_->pure_vars.begin(), contents_->pure_vars.end(), dim.var) == contents_->pure_vars.end())
          user_error("in schedule for '", name(), "': compute_at after splitting its own pure loops; '", name(),
                     "' takes the consumer's tiling at the site: split only its reduction loops");
      std::vector<Dim> dims = inner;
      for (const Dim &dim : stage.dims)
        if (dim.is_rvar)
          dims.push_back(dim);
      stage.dims = dims;
      // The consumer's fragment layout comes with its loops, for mma().
      stage.mma_layout = consumer_pure.mma_layout;
    }
    mine.placement = Placement::At;
    mine.placement_set = true;
    mine.at_func = consumer.name();
    mine.at_var = loop.name;
    return *this;
  });
}

Func &Func::compute_root() {
  return all_or_nothing({contents_}, [&]() -> Func & {
    forget_site(*contents_, true);
    contents_->schedule.placement = Placement::Root;
    contents_->schedule.placement_set = true;
    return *this;
  });
}

Func &Func::compute_inline() {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (has_updates())
      user_error("cannot inline '", name(), "': it has update definitions (a reduction); compute it at a loop of its "
                 "consumer or at root");
    forget_site(*contents_, true);
    contents_->schedule.placement = Placement::Inline;
    contents_->schedule.placement_set = true;
    return *this;
  });
}

Func &Func::store_in(MemoryType memory) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    contents_->schedule.memory = memory;
    return *this;
  });
}

Func &Func::bound(const Var &var, Expr extent) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    auto &vars = contents_->pure_vars;
    auto it = std::find(vars.begin(), vars.end(), var.name());
    if (it == vars.end())
      user_error("bound of '", name(), "' on '", var.name(), "', which is not one of its pure variables");
    if (!extent.defined() || extent.type() != Int(32))
      user_error("bound of '", name(), "' on '", var.name(), "' needs an i32 extent");
    auto &bounds = contents_->schedule.bounds;
    bounds.resize(vars.size());
    bounds[it - vars.begin()] = std::move(extent);
    return *this;
  });
}

Func &Func::output_strides(std::vector<Expr> strides) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (!contents_->defined)
      user_error("output_strides of '", name(), "' before its definition: define it first, then declare its strides");
    check_view_strides(str_cat("the output strides of '", name(), "'"), contents_->pure_vars.size(), strides,
                       ViewOrders::RowOrColumnMajor);
    contents_->output_strides = std::move(strides);
    return *this;
  });
}

Func &Func::fuse_epilogue(const Func &producer, const VarOrRVar &loop) {
  return all_or_nothing({contents_, producer.contents()}, [&]() -> Func & {
    // Name the mistake from the epilogue's side: `loop` must be one of this
    // Func's loops, never one of the producer's reduction loops.
    const auto &stages = producer.contents()->schedule.stages;
    for (size_t s = 1; s < stages.size(); ++s)
      for (const Dim &dim : stages[s].dims)
        if (dim.is_rvar && dim.var == loop.name)
          user_error("in schedule for '", name(), "': fuse_epilogue(", producer.name(), ", ", loop.name, "): '",
                     loop.name, "' is a reduction loop of '", producer.name(), "', where '", producer.name(),
                     "' holds partial sums; the epilogue must run after the reduction: pass a loop of '", name(),
                     "' (its block loop, say), on whose tile '", producer.name(), "' is then computed");
    Func(producer.contents()).compute_at(*this, loop).store_in(MemoryType::Register);
    return *this;
  });
}

Func &Func::gpu_min_blocks_per_sm(int blocks) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (blocks < 1 || blocks > 32)
      user_error("gpu_min_blocks_per_sm of '", name(), "' is ", blocks, "; it must be between 1 and 32");
    contents_->schedule.min_blocks_per_sm = blocks;
    return *this;
  });
}

Func &Func::gpu_block_groups(int rows) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (rows < 1 || rows > 1024)
      user_error("gpu_block_groups of '", name(), "' is ", rows, "; it must be between 1 and 1024 block rows");
    contents_->schedule.block_group_rows = rows;
    return *this;
  });
}

const std::string &Func::name() const { return contents_->name; }

bool Func::has_updates() const { return !contents_->updates.empty(); }

Func &Func::gpu_persistent_blocks(int blocks) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (blocks < 1 || blocks > 65535)
      user_error("gpu_persistent_blocks of '", name(), "' is ", blocks, "; it must be between 1 and 65535 blocks");
    contents_->schedule.persistent_blocks = blocks;
    return *this;
  });
}

Func &Func::gpu_cluster(const Var &block, int blocks) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    if (blocks < 2 || blocks > 8)
      user_error("gpu_cluster of '", name(), "' along '", block.name(), "' is ", blocks,
                 " blocks; a cluster has 2 to 8 (the portable cluster sizes)");
    contents_->schedule.cluster_var = block.name();
    contents_->schedule.cluster_blocks = blocks;
    return *this;
  });
}

const char *consumer_schedule_name(ConsumerSchedule schedule) {
  switch (schedule) {
  case ConsumerSchedule::Together: return "together";
  case ConsumerSchedule::PingPong: return "ping-pong";
  }
  return "?";
}

Func &Func::gpu_consumer_schedule(ConsumerSchedule schedule) {
  contents_->schedule.consumer_schedule = schedule;
  return *this;
}

Func &Func::partition_full_tiles(bool enable) {
  contents_->schedule.partition_full_tiles = enable;
  return *this;
}

const char *tile_stores_name(TileStores stores) {
  switch (stores) {
  case TileStores::Direct: return "direct";
  case TileStores::ThroughShared: return "shared";
  case TileStores::SumsThroughShared: return "sums";
  }
  return "?";
}

Func &Func::gpu_tile_stores(TileStores stores) {
  contents_->schedule.tile_stores = stores;
  return *this;
}

Func &Func::fuse_reduction_with(const Func &other) {
  if (other.contents_ == contents_)
    user_error("in schedule for '", contents_->name, "': fuse_reduction_with('", contents_->name,
               "') names the Func itself; name the other reduction");
  contents_->schedule.fused_reduction_with = other.contents_->name;
  return *this;
}

Func &Func::fold_bias_into_init() {
  return all_or_nothing({contents_}, [&]() -> Func & {
    contents_->schedule.fold_bias = true;
    return *this;
  });
}

} // namespace coalesce
