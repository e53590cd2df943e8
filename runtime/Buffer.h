#pragma once
// A host buffer, row-major, owning its storage: what a user passes as an
// input or receives as the output. Its element type is f32 (the default),
// bf16, f16, e4m3 or e5m2; a 16- or 8-bit buffer stores the raw values,
// exactly what the kernels read and write, and converts at the edges: get()
// widens exactly, set() rounds to nearest even (dsl/NarrowFloat.h; FP8
// saturates to its largest finite value).

#include "dsl/Type.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce {

class Buffer {
public:
  Buffer() = default;
  /// A buffer of the given shape (outermost first) and element type (f32,
  /// bf16, f16, e4m3 or e5m2), filled with zeros.
  explicit Buffer(std::vector<int> shape, Type type = Float(32));

  Type type() const { return type_; }
  const std::vector<int> &shape() const { return shape_; }
  int dimensions() const { return static_cast<int>(shape_.size()); }
  /// Elements.
  size_t size() const { return size_; }
  /// Bytes of storage: size() times the element size.
  size_t size_in_bytes() const { return size_ * static_cast<size_t>(type_.bytes()); }
  /// The storage as the kernels see it (f32 values, or bf16/f16/FP8 bits).
  void *raw_data() { return const_cast<void *>(static_cast<const Buffer *>(this)->raw_data()); }
  const void *raw_data() const {
    return is_f32() ? static_cast<const void *>(values_.data())
           : type_.bits == 8 ? static_cast<const void *>(bytes_.data())
                             : static_cast<const void *>(bits_.data());
  }

  /// Element `index` (row-major) as a float, exactly, whatever the type.
  float get(size_t index) const;
  /// Sets element `index` to `value`, rounded to the element type.
  void set(size_t index, float value);
  float at(int i, int j) const { return get(static_cast<size_t>(i) * shape_[1] + j); }
  void set(int i, int j, float value) { set(static_cast<size_t>(i) * shape_[1] + j, value); }

  // Direct access to f32 storage; on a bf16/f16 buffer these are a
  // UserError (use get/set, or raw_data for the bits).
  float *data() { return f32_values("data()").data(); }
  const float *data() const { return f32_values("data()").data(); }
  std::vector<float> &values() { return f32_values("values()"); }
  const std::vector<float> &values() const { return f32_values("values()"); }
  float &operator()(int i) { return f32_values("operator()")[i]; }
  float &operator()(int i, int j) { return f32_values("operator()")[static_cast<size_t>(i) * shape_[1] + j]; }
  /// Reading works for every element type.
  float operator()(int i, int j) const { return at(i, j); }

  /// Fills with uniform values in [-1, 1) from a fixed seed (tests, demos);
  /// each value is exactly representable in the element type.
  void fill_random(uint32_t seed);
  /// Fills with a value that no kernel computes (NaN), to detect unwritten
  /// elements.
  void poison();

private:
  bool is_f32() const { return type_ == Float(32); }
  std::vector<float> &f32_values(const char *what);
  const std::vector<float> &f32_values(const char *what) const;

  Type type_ = Float(32);
  std::vector<int> shape_;
  size_t size_ = 0;
  std::vector<float> values_;  ///< f32 elements
  std::vector<uint16_t> bits_; ///< bf16/f16 elements
  std::vector<uint8_t> bytes_; ///< e4m3/e5m2 elements
};

} // namespace coalesce
