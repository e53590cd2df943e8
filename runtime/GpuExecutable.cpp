#include "runtime/GpuExecutable.h"

#include "codegen/Symbols.h"
#include "dsl/Error.h"
#include "runtime/Arguments.h"
#include "runtime/RefuseUnverified.h"
#include "runtime/TensorMaps.h"
#include "scheduler/EvaluateInt.h"
#include "scheduler/SpecializeSizes.h"

#include <algorithm>

namespace coalesce {

GpuExecutable::GpuExecutable(GpuProgram program, const std::string &ptx, const GpuTarget &target)
    : GpuExecutable(std::move(program), gpu::Module::load_ptx(ptx), target) {}

GpuExecutable::GpuExecutable(GpuProgram program, gpu::Module module, const GpuTarget &target)
    : GpuExecutable(std::move(program), Loader(), target, Specializer()) {
  adopt(std::move(module));
}

GpuExecutable::GpuExecutable(GpuProgram program, Loader load, const GpuTarget &target, Specializer specialize)
    : program_(std::move(program)), load_(std::move(load)), grid_dependencies_(target.has_grid_dependencies()),
      specialize_(std::move(specialize)) {
  refuse_unverified_on_gpu(program_, "run it on the GPU");
  workspace_.resize(program_.args.size());
  tensor_maps_.resize(program_.kernels.size());
  for (size_t k = 0; k < program_.kernels.size(); ++k)
    tensor_maps_[k].resize(program_.kernels[k].tensor_maps.size());
}

const std::vector<GpuExecutable::EncodedMap> &
GpuExecutable::tensor_maps(size_t k, const std::vector<CUdeviceptr> &pointers,
                           const std::map<std::string, int64_t> &params) const {
  const GpuKernel &kernel = program_.kernels[k];
  for (size_t m = 0; m < kernel.tensor_maps.size(); ++m) {
    const TensorMapParam &param = kernel.tensor_maps[m];
    auto arg = std::find_if(program_.args.begin(), program_.args.end(),
                            [&](const Argument &a) { return a.name == param.input && a.is_buffer(); });
    COALESCE_INTERNAL_ASSERT(arg != program_.args.end(), "tensor map of '", param.input, "', which is no argument");
    std::vector<int64_t> extents, strides;
    for (const Expr &extent : arg->extents)
      extents.push_back(evaluate_int(extent, params));
    for (const Expr &stride : arg->strides) // a view's; a dense input has none
      strides.push_back(evaluate_int(stride, params));
    CUdeviceptr pointer = pointers[static_cast<size_t>(arg - program_.args.begin())];
    EncodedMap &encoded = tensor_maps_[k][m];
    if (encoded.pointer == pointer && encoded.extents == extents && encoded.strides == strides)
      continue;
    encoded.map = encode_tensor_map(param, arg->type, extents, pointer, strides);
    encoded.pointer = pointer;
    encoded.extents = extents;
    encoded.strides = strides;
  }
  return tensor_maps_[k];
}

size_t GpuExecutable::workspace_bytes(size_t arg, const std::map<std::string, int64_t> &params) const {
  const Argument &a = program_.args.at(arg);
  if (!a.is_workspace)
    return 0;
  return static_cast<size_t>(workspace_elements(a, params)) * static_cast<size_t>(a.type.bytes());
}

GpuExecutable::~GpuExecutable() = default;

void GpuExecutable::adopt(gpu::Module module) const {
  module_ = std::move(module);
  for (const GpuKernel &kernel : program_.kernels)
    functions_.push_back(module_.function(kernel_symbol(kernel.name)));
}

void GpuExecutable::load() const {
  if (!load_)
    return;
  gpu::Module module = load_(); // a compile error leaves the loader for the next launch
  load_ = nullptr;
  adopt(std::move(module));
}

const GpuExecutable &GpuExecutable::for_launch(const std::map<std::string, int64_t> &params) const {
  SizeMultiples multiples = specialize_ ? specializable_sizes(program_, params) : SizeMultiples();
  if (multiples.empty()) // no multiples of 4, or specialization turned off
    return *this;
  auto known = variants_.find(multiples);
  if (known == variants_.end()) // null: the sizes decide nothing, the general program runs
    known = variants_.emplace(multiples, specialize_(multiples)).first;
  return known->second ? *known->second : *this;
}

void GpuExecutable::prepare(const std::map<std::string, int64_t> &params) const { for_launch(params).load(); }

void GpuExecutable::launch(const std::vector<CUdeviceptr> &buffers, const std::map<std::string, int64_t> &params) const {
  COALESCE_INTERNAL_ASSERT(buffers.size() == program_.args.size(), "one device pointer per argument expected");
  for_launch(params).launch_general(buffers, params);
}

void GpuExecutable::launch_general(const std::vector<CUdeviceptr> &buffers,
                                   const std::map<std::string, int64_t> &params) const {
  load();
  std::vector<CUdeviceptr> pointers = buffers;
  std::vector<int32_t> scalars(program_.args.size(), 0);
  std::vector<void *> slots;
  for (size_t a = 0; a < program_.args.size(); ++a) {
    const Argument &arg = program_.args[a];
    if (arg.is_workspace && pointers[a] == 0) {
      // Zeroed once, when allocated: the counters and the atomic tiles must
      // start at 0, and every launch leaves them so.
      size_t bytes = std::max<size_t>(workspace_bytes(a, params), 16);
      if (workspace_[a].bytes() < bytes) {
        workspace_[a] = gpu::DeviceBuffer(bytes);
        workspace_[a].fill_bytes(0);
      }
      pointers[a] = workspace_[a].ptr();
    }
    if (arg.is_buffer()) {
      if (pointers[a] == 0)
        user_error("device buffer for '", arg.name, "' is null");
      slots.push_back(&pointers[a]);
      continue;
    }
    auto it = params.find(arg.name);
    if (it == params.end())
      user_error("missing parameter '", arg.name, "'");
    scalars[a] = static_cast<int32_t>(it->second);
    slots.push_back(&scalars[a]);
  }
  // Before any launch, so that nothing is written half-way.
  for (const GpuKernel &kernel : program_.kernels)
    for (const auto &[buffer, bytes] : kernel.aligned_buffers) {
      auto arg = std::find_if(program_.args.begin(), program_.args.end(),
                              [&](const Argument &a) { return a.name == buffer && a.is_buffer(); });
      COALESCE_INTERNAL_ASSERT(arg != program_.args.end(), "aligned buffer '", buffer, "', which is no argument");
      if (pointers[static_cast<size_t>(arg - program_.args.begin())] % static_cast<CUdeviceptr>(bytes) != 0)
        user_error("device buffer for '", buffer, "' is not ", bytes, "-byte aligned; kernel '", kernel.name,
                   "' accesses it in ", bytes, "-byte vectors (gpu_tile_stores): pass an aligned pointer");
    }
  bool previous_launched = false; // this call's previous kernel
  for (size_t k = 0; k < program_.kernels.size(); ++k) {
    const GpuKernel &kernel = program_.kernels[k];
    gpu::dims grid, block;
    int64_t g[3];
    bool empty = false;
    for (int d = 0; d < 3; ++d) {
      g[d] = evaluate_int(kernel.grid[d], params);
      empty |= g[d] <= 0;
    }
    if (empty) {
      previous_launched = false;
      continue; // an empty grid: this kernel has nothing to compute; the next may
    }
    grid = {static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2])};
    block = {static_cast<unsigned>(kernel.block[0]), static_cast<unsigned>(kernel.block[1]),
             static_cast<unsigned>(kernel.block[2])};
    // The kernel's tensor maps follow the arguments, each passed by value.
    std::vector<void *> kernel_slots = slots;
    for (const EncodedMap &encoded : tensor_maps(k, pointers, params))
      kernel_slots.push_back(const_cast<CUtensorMap *>(&encoded.map));
    // Started during the previous kernel's tail only behind that kernel of
    // this call, and only where the code waits for it.
    const bool programmatic =
        kernel.start == KernelStart::DuringPreviousTail && grid_dependencies_ && previous_launched;
    gpu::launch(functions_[k], grid, block, static_cast<size_t>(dynamic_shared_bytes(kernel)), kernel_slots.data(),
                programmatic ? gpu::StreamOrder::Programmatic : gpu::StreamOrder::Serialized);
    previous_launched = true;
  }
}

} // namespace coalesce
