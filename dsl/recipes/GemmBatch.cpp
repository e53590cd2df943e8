#include "dsl/recipes/GemmBatch.h"

#include "dsl/Error.h"
#include "dsl/FuncContents.h"

#include <algorithm>
#include <string>

namespace coalesce {

std::vector<VarOrRVar> gemm_batch_vars(const Func &out, const Var &i, const char *recipe) {
  const std::vector<std::string> &vars = out.contents()->pure_vars;
  auto at_i = std::find(vars.begin(), vars.end(), i.name());
  std::vector<VarOrRVar> batch;
  for (auto v = vars.begin(); v != at_i && v != vars.end(); ++v)
    batch.push_back(Var(*v));
  if (batch.size() > 1)
    user_error(recipe, ": '", out.name(), "' has ", batch.size(), " batch dimensions before '", i.name(),
               "'; the grid has one left for a batch: fuse them into one in the algorithm");
  return batch;
}

} // namespace coalesce
