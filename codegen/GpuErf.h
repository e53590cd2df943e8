#pragma once
// erf and erfc on the GPU as straight-line code.
//
// libdevice's __nv_erff evaluates one of two polynomials (|x| below or
// above 1.00296) and, above, 1 - 2^p behind a branch. In a fused epilogue
// that branch comes once per output element (128 of them per thread in a
// 128 x 256 tile), and ptxas does not schedule across it: each element's
// chain of seven dependent FMAs runs alone. This is the same computation
// with selects (the 2^p evaluated for every element, as a warp with any
// lane above the threshold did anyway), so the elements' chains interleave.
// The results are libdevice's, bit for bit.
//
// Internal to codegen/.

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

namespace coalesce {

/// The module's `float coalesce.erff(float)` (always inlined), defined on
/// first use.
llvm::Function *gpu_erf_function(llvm::Module &module);

/// The module's `float coalesce.erfcf(float)` (always inlined), defined on
/// first use: erfc(z) = t exp(-z^2 + P(t)) with t = 1 / (1 + z / 2) for
/// z = |x| (the Chebyshev fit of Numerical Recipes' erfcc, relative error
/// under 1.2e-7 in exact arithmetic), and 2 - erfc(|x|) for x < 0: one
/// reciprocal, nine FMAs and one 2^x, no branch and no select of
/// coefficients. It keeps its relative precision where erfc is small,
/// which 1 - erf(x) loses (GELU's negative inputs: dsl/Activations.h).
llvm::Function *gpu_erfc_function(llvm::Module &module);

} // namespace coalesce
