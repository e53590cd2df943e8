#include "runtime/Buffer.h"

#include "dsl/Error.h"
#include "dsl/NarrowFloat.h"

#include <cmath>
#include <limits>
#include <random>

namespace coalesce {

namespace {
uint16_t narrow(Type type, float value) {
  return type.code == Type::Code::BFloat ? float_to_bf16_bits(value) : float_to_f16_bits(value);
}
float widen(Type type, uint16_t bits) {
  return type.code == Type::Code::BFloat ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}
} // namespace

Buffer::Buffer(std::vector<int> shape, Type type) : type_(type), shape_(std::move(shape)) {
  if (type != Float(32) && type != BFloat(16) && type != Float(16))
    user_error("Buffer element type ", type, " is not supported; a Buffer holds Float(32), BFloat(16) or "
               "Float(16) elements");
  size_t size = 1;
  for (int extent : shape_) {
    if (extent < 0)
      user_error("Buffer extents must be zero or positive, got ", extent);
    size *= static_cast<size_t>(extent);
  }
  size_ = size;
  if (is_f32())
    values_.assign(size, 0.0f);
  else
    bits_.assign(size, 0); // +0.0 in both formats
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

float Buffer::get(size_t index) const { return is_f32() ? values_[index] : widen(type_, bits_[index]); }

void Buffer::set(size_t index, float value) {
  if (is_f32())
    values_[index] = value;
  else
    bits_[index] = narrow(type_, value);
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
