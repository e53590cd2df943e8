#include "scheduler/UnverifiedFeatures.h"

#include "scheduler/TmaInputs.h"

namespace coalesce {

std::vector<std::string> unverified_features(const Environment &env) {
  std::vector<std::string> features;
  for (const TmaInputCopy &copy : tma_input_copies(env))
    if (copy.only_where_ragged) {
      features.push_back("the TMA's copy of '" + copy.input->name +
                         "' made only on launches whose rows are ragged (PaddedCopy::WhereRowsAreRagged, "
                         "MmaTiling's PaddedCopies::WhereRagged; coalesce-gpu-check --sections=mma checks it)");
      break; // one line for the form, whichever inputs use it
    }
  return features;
}

} // namespace coalesce
