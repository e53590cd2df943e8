#pragma once
// What a launch-time specialization assumes of the sizes (SpecializeSizes.h):
// for each scalar argument it names, a multiple that argument is of. Kept
// apart so that the public header can name it without the IR.

#include <cstdint>
#include <map>
#include <string>

namespace coalesce {

/// The multiples a specialized argument may be taken as, largest first.
constexpr int64_t kSpecializedMultiples[] = {16, 8, 4};

/// Scalar arguments and the multiple (one of kSpecializedMultiples) each is
/// taken as, by name.
using SizeMultiples = std::map<std::string, int64_t>;

} // namespace coalesce
