#include "scheduler/UnverifiedFeatures.h"

namespace coalesce {

// None today. The last, PaddedCopy::WhereRowsAreRagged, passed
// coalesce-gpu-check's mma section and compute-sanitizer's memcheck on an
// H100 (docs/performance.md, "The cp.async fallback as most of the
// general kernel").
std::vector<std::string> unverified_features(const Environment &) { return {}; }

} // namespace coalesce
