#include "runtime/Buffer.h"

#include "dsl/Error.h"

#include <cmath>
#include <limits>
#include <random>

namespace coalesce {

Buffer::Buffer(std::vector<int> shape) : shape_(std::move(shape)) {
  size_t size = 1;
  for (int extent : shape_) {
    if (extent <= 0)
      user_error("Buffer extents must be positive, got ", extent);
    size *= static_cast<size_t>(extent);
  }
  values_.assign(size, 0.0f);
}

void Buffer::fill_random(uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float &v : values_)
    v = uniform(engine);
}

void Buffer::poison() { values_.assign(values_.size(), std::numeric_limits<float>::quiet_NaN()); }

} // namespace coalesce
