#pragma once
// A host buffer of f32 values, row-major, owning its storage: what a user
// passes as an input or receives as the output.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce {

class Buffer {
public:
  Buffer() = default;
  /// A buffer of the given shape (outermost first), filled with zeros.
  explicit Buffer(std::vector<int> shape);

  const std::vector<int> &shape() const { return shape_; }
  int dimensions() const { return static_cast<int>(shape_.size()); }
  size_t size() const { return values_.size(); }
  float *data() { return values_.data(); }
  const float *data() const { return values_.data(); }
  std::vector<float> &values() { return values_; }
  const std::vector<float> &values() const { return values_; }
  float &operator()(int i) { return values_[i]; }
  float &operator()(int i, int j) { return values_[static_cast<size_t>(i) * shape_[1] + j]; }
  float operator()(int i, int j) const { return values_[static_cast<size_t>(i) * shape_[1] + j]; }

  /// Fills with uniform values in [-1, 1) from a fixed seed (tests, demos).
  void fill_random(uint32_t seed);
  /// Fills with a value that no kernel computes, to detect unwritten elements.
  void poison();

private:
  std::vector<int> shape_;
  std::vector<float> values_;
};

} // namespace coalesce
