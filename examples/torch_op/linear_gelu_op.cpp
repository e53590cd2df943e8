// coalesce::linear_gelu(x, weight, bias) = gelu(x weight^T + bias), as
// torch.nn.functional.gelu(torch.nn.functional.linear(x, weight, bias))
// computes it, as a PyTorch operator over a launcher coalesce-aot generated:
//
//   coalesce-aot --dtype=bf16 --out-dtype=bf16 --b=nk --name=linear_gelu --output-dir=.
//
// (bf16 x [..., K] and weight [N, K], nn.Linear's layout; a bias [N] of bf16
// or f32, widened to f32; the output bf16 [..., N]). Registered with
// TORCH_LIBRARY as coalesce::linear_gelu:
//   - CUDA tensors: checked (device, dtype, shapes, strides), then launched
//     on PyTorch's current stream; every buffer it needs (the output, the
//     f32 bias) comes from PyTorch's caching allocator;
//   - meta (fake) tensors: the output's shape and dtype, after the same
//     checks, so torch.compile can trace through it as an opaque op;
//   - CPU tensors: an error saying it runs on CUDA tensors.
// Build it with COALESCE_TORCH_CUDA defined (torch.utils.cpp_extension does,
// see build_and_check.py) to have the CUDA kernel; without it (a CPU-only
// libtorch) only the schema, the meta and the CPU implementations exist.

#include <ATen/ATen.h>
#include <torch/library.h>

#ifdef COALESCE_TORCH_CUDA
#include "linear_gelu.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <string>
#include <vector>

namespace {

constexpr const char *kOp = "coalesce::linear_gelu";

// "[256, 128]": sizes and strides as the messages show them.
std::string dims(c10::IntArrayRef values) {
  std::string text = "[";
  for (size_t d = 0; d < values.size(); ++d)
    text += (d ? ", " : "") + std::to_string(values[d]);
  return text + "]";
}

// An error's message, "coalesce::linear_gelu: " and the parts, with every
// number formatted by std::to_string, never by an ostream: in the H200's
// PyTorch 2.11 process, formatting an integer through an ostream (TORCH_CHECK
// streams its arguments; so did an ostringstream here) crashed with SIGSEGV,
// while strings went through. The likely cause is two C++ runtimes in one
// process (the extension's and the wheel's) disagreeing on the locale's
// number formatter; to_string does not use it.
std::string piece(const char *text) { return text; }
std::string piece(const std::string &text) { return text; }
std::string piece(int64_t value) { return std::to_string(value); }

template <typename... Parts> std::string message(const Parts &...parts) {
  std::string text = std::string(kOp) + ": ";
  ((text += piece(parts)), ...);
  return text;
}

// The checks every implementation makes, before anything is allocated;
// returns the output's sizes: x's, with the last (K) replaced by N.
std::vector<int64_t> checked_output_sizes(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias) {
  TORCH_CHECK(x.dim() >= 1, message("x must have at least one dimension (its last is K), got a scalar"));
  TORCH_CHECK(weight.dim() == 2,
              message("weight must be 2-D, [N, K] as nn.Linear stores it, got ", dims(weight.sizes())));
  TORCH_CHECK(bias.dim() == 1, message("bias must be 1-D, [N], got ", dims(bias.sizes())));
  const int64_t K = x.size(-1), N = weight.size(0);
  TORCH_CHECK(weight.size(1) == K, message("weight is ", dims(weight.sizes()), ", x's last dimension is ", K,
                                           "; weight must be [N, ", K, "]"));
  TORCH_CHECK(bias.size(0) == N, message("bias has ", bias.size(0), " elements, weight has N = ", N, " rows"));
  TORCH_CHECK(x.scalar_type() == at::kBFloat16, message("x must be bfloat16, got ", c10::toString(x.scalar_type())));
  TORCH_CHECK(weight.scalar_type() == at::kBFloat16,
              message("weight must be bfloat16, got ", c10::toString(weight.scalar_type())));
  TORCH_CHECK(bias.scalar_type() == at::kBFloat16 || bias.scalar_type() == at::kFloat,
              message("bias must be bfloat16 or float32, got ", c10::toString(bias.scalar_type())));
  TORCH_CHECK(x.layout() == at::kStrided && weight.layout() == at::kStrided && bias.layout() == at::kStrided,
              message("x, weight and bias must be dense (strided) tensors"));
  TORCH_CHECK(x.is_contiguous(), message("x must be contiguous (its rows of K packed); it has strides ",
                                         dims(x.strides()), ": pass x.contiguous()"));
  TORCH_CHECK(weight.is_contiguous(),
              message("weight must be contiguous, [N, K] with K contiguous as nn.Linear "
                      "stores it; it has strides ",
                      dims(weight.strides()), " (a transposed view?): pass weight.contiguous()"));
  TORCH_CHECK(x.device() == weight.device() && x.device() == bias.device(),
              message("x, weight and bias must be on one device; they are on ", x.device().str(), ", ",
                      weight.device().str(), " and ", bias.device().str()));
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = N;
  return sizes;
}

at::Tensor linear_gelu_meta(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias) {
  return at::empty(checked_output_sizes(x, weight, bias), x.options());
}

at::Tensor linear_gelu_cpu(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias) {
  checked_output_sizes(x, weight, bias);
  TORCH_CHECK(false, message("runs on CUDA tensors (its kernel is PTX for sm_90a); x is on ", x.device().str(),
                             ": move x, weight and bias to the GPU"));
}

#ifdef COALESCE_TORCH_CUDA
at::Tensor linear_gelu_cuda(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias) {
  std::vector<int64_t> sizes = checked_output_sizes(x, weight, bias);
  const int64_t K = x.size(-1), N = weight.size(0);
  int64_t M = 1; // the rows of x: every dimension but the last
  for (int64_t d = 0; d + 1 < x.dim(); ++d)
    M *= x.size(d);
  TORCH_CHECK(M <= (int64_t{1} << 30) && N <= (int64_t{1} << 30) && K <= (int64_t{1} << 30),
              message("M = ", M, ", N = ", N, ", K = ", K, ": each must be at most 2^30"));
  c10::cuda::CUDAGuard guard(x.device());
  at::Tensor bias32 = bias.to(at::kFloat).contiguous(); // the caching allocator's, on the current stream
  at::Tensor out = at::empty(sizes, x.options());
  auto pointer = [](const at::Tensor &t) { return reinterpret_cast<CUdeviceptr>(t.data_ptr()); };
  CUresult result =
      linear_gelu(pointer(x), pointer(weight), pointer(bias32), pointer(out), static_cast<int>(M), static_cast<int>(N),
                  static_cast<int>(K), reinterpret_cast<CUstream>(at::cuda::getCurrentCUDAStream().stream()));
  TORCH_CHECK(result == CUDA_SUCCESS, message("", linear_gelu_error_message()));
  return out;
}
#endif

} // namespace

TORCH_LIBRARY(coalesce, m) { m.def("linear_gelu(Tensor x, Tensor weight, Tensor bias) -> Tensor"); }

TORCH_LIBRARY_IMPL(coalesce, Meta, m) { m.impl("linear_gelu", linear_gelu_meta); }

TORCH_LIBRARY_IMPL(coalesce, CPU, m) { m.impl("linear_gelu", linear_gelu_cpu); }

#ifdef COALESCE_TORCH_CUDA
TORCH_LIBRARY_IMPL(coalesce, CUDA, m) { m.impl("linear_gelu", linear_gelu_cuda); }
#endif
