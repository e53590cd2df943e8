// An example of a user's generator file: this file, linked against
// coalesce_aot_main, is the whole of a tool (coalesce-aot-example):
//
//   coalesce-aot-example --activation=relu --cols=1024 --output-dir=generated
//
// writes bias_activation.ptx, .h and .cpp, whose launcher is
//   CUresult bias_activation(CUdeviceptr X, CUdeviceptr bias, CUdeviceptr out,
//                            int rows, int cols, CUstream stream);

#include "runtime/aot/Generator.h"
#include "dsl/Activations.h"
#include "dsl/Error.h"

using namespace coalesce;

namespace {

enum class Activation { None, Relu, Gelu };

/// out(i, j) = activation(X(i, j) + bias(j)): the epilogue of a GEMM run as
/// its own kernel, one thread per element.
class BiasActivation : public Generator {
public:
  SizeParam rows{this, "rows", "rows of X and out"};
  SizeParam cols{this, "cols", "columns of X and out; elements of bias"};
  GeneratorParam<bool> add_bias{this, "bias", true, "add bias[j] to column j"};
  EnumParam<Activation> activation{this,
                                   "activation",
                                   Activation::Gelu,
                                   {{"none", Activation::None},
                                    {"relu", Activation::Relu},
                                    {"gelu", Activation::Gelu}},
                                   "the function applied to each element"};
  GeneratorParam<int> block_rows{this, "block-rows", 8, "threads per block, down", 1, 32};
  GeneratorParam<int> block_cols{this, "block-cols", 32, "threads per block, across", 1, 1024};

  Func build() override {
    if (block_rows * block_cols > 1024)
      user_error("--block-rows=", block_rows.value(), " times --block-cols=", block_cols.value(),
                 " is over 1024 threads per block");
    Input X("X", Float(32), {rows, cols});
    Var i("i"), j("j"), bi("bi"), bj("bj"), ti("ti"), tj("tj");
    Expr value = X(i, j);
    if (add_bias) {
      Input bias("bias", Float(32), {cols});
      value = value + bias(j);
    }
    if (activation == Activation::Relu)
      value = relu(value);
    if (activation == Activation::Gelu)
      value = gelu(value);

    Func out("out");
    out(i, j) = value;
    out.tile(i, j, bi, bj, ti, tj, block_rows, block_cols)
        .gpu_blocks({bi, bj})
        .gpu_threads({ti, tj});
    return out;
  }
};

} // namespace

COALESCE_REGISTER_GENERATOR(BiasActivation, "bias_activation",
                            "out = activation(X + bias), elementwise, f32, row-major");
