#include "scheduler/CheckMirroredLoops.h"

#include "dsl/Error.h"
#include "scheduler/LoopNames.h"

#include <algorithm>

namespace coalesce {

namespace {

std::string describe_dim(const Dim &dim) {
  std::string kind = for_kind_name(dim.kind);
  if (dim.kind == ForKind::GpuBlock || dim.kind == ForKind::GpuThread)
    kind += str_cat(".", "xyz"[dim.gpu_dim]);
  return dim.var + " (" + kind + ")";
}

std::string describe_dims(const std::vector<Dim> &dims) {
  std::string text;
  for (const Dim &dim : dims)
    text += (text.empty() ? "" : ", ") + describe_dim(dim);
  return text.empty() ? "none" : text;
}

bool same_loop(const Dim &a, const Dim &b) {
  bool mapped = a.kind == ForKind::GpuBlock || a.kind == ForKind::GpuThread;
  return a.var == b.var && a.kind == b.kind && (!mapped || a.gpu_dim == b.gpu_dim);
}

void check_stage(const FuncContents &func, size_t s, const FuncContents &consumer, const std::vector<Dim> &expected) {
  const StageSchedule &stage = func.schedule.stages[s];
  std::string where = str_cat("in schedule for ", stage_description(func, s), ": ");
  std::string site = str_cat(func.name, ".compute_at(", consumer.name, ", ", func.schedule.at_var, ")");
  std::string instead = str_cat(". Schedule those loops on '", consumer.name, "' (before ", site,
                                "); '", func.name, "' may split and order only its reduction loops among them");
  std::string intro = str_cat("'", func.name, "' is computed at loop '", func.schedule.at_var, "' of '",
                              consumer.name, "' (", site, ", or fuse_epilogue), so its loops below the site are '",
                              consumer.name, "''s: ", describe_dims(expected));
  for (const Split &split : stage.splits)
    if (!split.is_rvar)
      user_error(where, intro, "; '", split.old_var, "' is ", split.is_fuse ? "made by a fuse" : "split", " here into '",
                 split.outer, "' and '", split.inner, "'", instead);
  std::vector<Dim> got;
  for (const Dim &dim : stage.dims) {
    if (dim.is_rvar)
      continue;
    if (!dim.mirrored)
      user_error(where, intro, "; loop '", dim.var, "' is not one of them (a stage defined after ", site,
                 " has its own loops: define every update first, then call compute_at)", instead);
    got.push_back(dim);
  }
  for (size_t n = 0; n < std::max(got.size(), expected.size()); ++n) {
    if (n < got.size() && n < expected.size() && same_loop(got[n], expected[n]))
      continue;
    std::string detail;
    if (n < got.size() && n < expected.size() && got[n].var == expected[n].var)
      detail = str_cat("'", got[n].var, "' is mapped differently here: ", describe_dim(got[n]), " instead of ",
                       describe_dim(expected[n]));
    else
      detail = str_cat("here they are ", describe_dims(got));
    user_error(where, intro, "; ", detail,
               ". Each point must be computed by the loop iteration (and GPU thread) of '", consumer.name,
               "' that reads it", instead);
  }
}

// At the site the Func's nest is built from the consumer's loops below the
// site (and the variables its splits define), its own pure variables (the
// consumer's, renamed by position) and its own reduction loops, all in one
// namespace: a reduction loop named like one of the consumer's loops would
// be one variable with two meanings.
void check_site_names(const FuncContents &func, const FuncContents &consumer, const std::vector<Dim> &below) {
  const StageSchedule &theirs = consumer.schedule.stages.front();
  std::vector<std::string> above;
  for (const Dim &dim : theirs.dims) {
    if (dim.var == func.schedule.at_var)
      break;
    above.push_back(dim.var);
  }
  above.push_back(func.schedule.at_var);
  std::vector<std::string> consumer_names;
  auto add = [&](const std::string &name) {
    bool pure = std::find(consumer.pure_vars.begin(), consumer.pure_vars.end(), name) != consumer.pure_vars.end();
    bool outside = std::find(above.begin(), above.end(), name) != above.end();
    if (!pure && !outside)
      consumer_names.push_back(name);
  };
  for (const Dim &dim : below)
    add(dim.var);
  for (const Split &split : theirs.splits) {
    add(split.old_var);
    add(split.outer);
    add(split.inner);
  }
  for (size_t s = 0; s < func.schedule.stages.size(); ++s) {
    const StageSchedule &stage = func.schedule.stages[s];
    std::vector<std::string> own = func.pure_vars;
    own.insert(own.end(), stage.reduction_vars.begin(), stage.reduction_vars.end());
    for (const Split &split : stage.splits)
      if (split.is_rvar) {
        own.push_back(split.outer);
        own.push_back(split.inner);
      }
    for (const std::string &name : own)
      if (std::find(consumer_names.begin(), consumer_names.end(), name) != consumer_names.end())
        user_error("in schedule for ", stage_description(func, s), ": '", name, "' names a variable of '",
                   func.name, "' and a loop of '", consumer.name, "' below loop '", func.schedule.at_var,
                   "', where '", func.name, "' is computed on '", consumer.name,
                   "''s loops; one name would denote two loops there: rename one of them");
  }
}

} // namespace

void check_mirrored_loops(const Environment &env) {
  for (const FuncContents &func : env.funcs) {
    if (func.schedule.placement != Placement::At)
      continue;
    const FuncContents *consumer = env.find(func.schedule.at_func);
    COALESCE_INTERNAL_ASSERT(consumer, "compute_at site '", func.schedule.at_func, "' not resolved");
    const std::vector<Dim> &dims = consumer->schedule.stages.front().dims;
    auto at = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == func.schedule.at_var; });
    COALESCE_INTERNAL_ASSERT(at != dims.end(), "compute_at loop '", func.schedule.at_var, "' not resolved");
    std::vector<Dim> expected(at + 1, dims.end());
    check_site_names(func, *consumer, expected);
    for (size_t s = 0; s < func.schedule.stages.size(); ++s)
      check_stage(func, s, *consumer, expected);
  }
}

} // namespace coalesce
