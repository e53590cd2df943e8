#include "runtime/Buffer.h"

#include "dsl/Error.h"
#include "dsl/NarrowFloat.h"

#include <cmath>
#include <limits>
#include <new>
#include <random>
#include <string>

namespace coalesce {

namespace {
bool holdable(Type type) {
  return type == Float(32) || type == BFloat(16) || type == Float(16) || type.is_fp8();
}
} // namespace

Buffer::Buffer(std::vector<int> shape, Type type) : type_(type), shape_(std::move(shape)) {
  if (!holdable(type))
    user_error("Buffer element type ", type, " is not supported; a Buffer holds Float(32), BFloat(16), "
               "Float(16), Float8E4M3() or Float8E5M2() elements");
  size_t size = 1;
  bool overflow = false;
  for (int extent : shape_) {
    if (extent < 0)
      user_error("Buffer extents must be zero or positive, got ", extent);
    overflow |= __builtin_mul_overflow(size, static_cast<size_t>(extent), &size);
  }
  // More elements than the storage can index, or more memory than the host
  // gives: a UserError naming the shape, not the standard library's.
  auto shape_text = [&] {
    std::string text;
    for (int extent : shape_)
      text += (text.empty() ? "" : " x ") + std::to_string(extent);
    return text;
  };
  size_t max_elements = is_f32() ? values_.max_size() : type_.bits == 8 ? bytes_.max_size() : bits_.max_size();
  if (overflow || size > max_elements)
    user_error("Buffer of shape ", shape_text(), " has too many elements to hold in memory (at most ", max_elements,
               " ", type_, " elements)");
  size_ = size;
  try {
    if (is_f32())
      values_.assign(size, 0.0f);
    else if (type_.bits == 8)
      bytes_.assign(size, 0); // +0.0 in both formats
    else
      bits_.assign(size, 0); // +0.0 in both formats
  } catch (const std::bad_alloc &) {
    user_error("Buffer of shape ", shape_text(), " needs ", size * static_cast<size_t>(type_.bytes()),
               " bytes, which the host cannot allocate");
  }
}

std::vector<float> &Buffer::f32_values(const char *what) {
  if (!is_f32())
    user_error("Buffer::", what, " gives f32 storage, but this buffer holds ", type_,
               " elements; use get()/set() (converting to and from float) or raw_data()");
  return values_;
}

const std::vector<float> &Buffer::f32_values(const char *what) const {
  return const_cast<Buffer *>(this)->f32_values(what);
}

float Buffer::get(size_t index) const {
  return is_f32() ? values_[index] : narrow_bits_to_float(type_, type_.bits == 8 ? bytes_[index] : bits_[index]);
}

void Buffer::set(size_t index, float value) {
  if (is_f32())
    values_[index] = value;
  else if (type_.bits == 8)
    bytes_[index] = static_cast<uint8_t>(float_to_narrow_bits(type_, value));
  else
    bits_[index] = float_to_narrow_bits(type_, value);
}

void Buffer::fill_random(uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // For bf16/f16 the draw is rounded to the type; the f32 sequence is the
  // one it always was.
  for (size_t n = 0; n < size_; ++n)
    set(n, uniform(engine));
}

void Buffer::poison() {
  for (size_t n = 0; n < size_; ++n)
    set(n, std::numeric_limits<float>::quiet_NaN());
}

} // namespace coalesce
