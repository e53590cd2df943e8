// The PyTorch operator of examples/torch_op, built against a CPU-only
// libtorch (Debian's libtorch-dev): the library loads, registers
// coalesce::linear_gelu, gives fake (meta) tensors the output's shape, and
// refuses bad arguments with messages that name them. The CUDA kernel is
// checked on the GPU machine (examples/torch_op/build_and_check.py).
//
//   torch_op_cpu PATH/libcoalesce_linear_gelu_op.so

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <dlfcn.h>

#include <cstdio>
#include <functional>
#include <string>

namespace {

int failures = 0;

void check(bool condition, const std::string &what) {
  std::printf("%s %s\n", condition ? "ok  " : "FAIL", what.c_str());
  failures += !condition;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: torch_op_cpu PATH/libcoalesce_linear_gelu_op.so\n");
    return 2;
  }
  check(!c10::Dispatcher::singleton().findSchema({"coalesce::linear_gelu", ""}).has_value(),
        "coalesce::linear_gelu is not registered before the library is loaded");
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto schema = c10::Dispatcher::singleton().findSchema({"coalesce::linear_gelu", ""});
  check(schema.has_value(), "loading the library registers coalesce::linear_gelu");
  if (!schema)
    return 1;
  auto op = schema->typed<at::Tensor(const at::Tensor &, const at::Tensor &, const at::Tensor &)>();
  // An inference op (no autograd formula): called as inference, below the
  // autograd keys (this libtorch has no AutogradMeta fallthrough).
  c10::InferenceMode inference;

  auto meta = [](at::IntArrayRef sizes, at::ScalarType type = at::kBFloat16) {
    return at::empty(sizes, at::TensorOptions().device(at::kMeta).dtype(type));
  };
  at::Tensor y = op.call(meta({3, 5, 64}), meta({32, 64}), meta({32}, at::kFloat));
  check(y.sizes() == at::IntArrayRef({3, 5, 32}) && y.scalar_type() == at::kBFloat16 && y.is_meta(),
        "meta tensors: x [3, 5, 64], weight [32, 64] give a bf16 [3, 5, 32]");

  auto refused = [&](const std::string &what, const std::function<void()> &call, const std::string &message) {
    try {
      call();
      check(false, what + ": no error");
    } catch (const c10::Error &error) {
      std::string text = error.what_without_backtrace();
      check(text.find(message) != std::string::npos, what + ": " + text.substr(0, text.find('\n')));
    }
  };
  refused("x float32", [&] { op.call(meta({4, 64}, at::kFloat), meta({32, 64}), meta({32})); },
          "x must be bfloat16, got Float");
  refused("K mismatch", [&] { op.call(meta({4, 48}), meta({32, 64}), meta({32})); }, "weight must be [N, 48]");
  refused("bias length", [&] { op.call(meta({4, 64}), meta({32, 64}), meta({31})); },
          "bias has 31 elements, weight has N = 32 rows");
  refused("weight 3-D", [&] { op.call(meta({4, 64}), meta({2, 32, 64}), meta({32})); }, "weight must be 2-D");
  refused("transposed weight", [&] { op.call(meta({4, 64}), meta({64, 32}).t(), meta({32})); },
          "weight must be contiguous");
  refused("bias float64", [&] { op.call(meta({4, 64}), meta({32, 64}), meta({32}, at::kDouble)); },
          "bias must be bfloat16 or float32");
  at::TensorOptions cpu = at::TensorOptions().dtype(at::kBFloat16);
  refused("CPU tensors", [&] { op.call(at::zeros({4, 64}, cpu), at::zeros({32, 64}, cpu), at::zeros({32}, cpu)); },
          "runs on CUDA tensors");
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
