#pragma once
// coalesce-aot's gemm with A stored K x M (--a=km), over a batch of
// products (--batched, --batch) or inputs that are views (--views, --lda,
// --ldb): the flags they cannot take,
// refused by name before anything is compiled. The algorithm is the gemm
// generator's, its extents and strides from these flags.

#include <string>

namespace coalesce {

/// The flags that decide whether a batched or viewed GEMM can be generated.
struct GemmLayoutFlags {
  std::string batched = "none", views = "none";  ///< --batched, --views, as given
  bool a_km = false;                             ///< --a=km: A stored K x M
  bool output_view = false, ldc_given = false;   ///< --output-view; --ldc given
  bool out_nm = false;                           ///< --out=nm: out stored N x M (an output view too)
  bool batch_stride_given = false;               ///< --batch_stride given
  bool batch_stride_a_given = false, batch_stride_b_given = false; ///< --batch_stride_a, --batch_stride_b given
  std::string dtype;                             ///< --dtype, as given
  bool fp8 = false, swiglu = false;              ///< --dtype=e4m3 or e5m2; --epilogue=swiglu
  bool batch_given = false, lda_given = false, ldb_given = false;
  int batch = 0; ///< --batch, where given
  int split_k = 1, persistent_blocks = 0, cluster_blocks = 0;
  bool autotune = false, tuning_db = false; ///< --autotune; --tuning-db given
};

/// A UserError naming the flags, for the first combination an A stored K x
/// M, a batch or a view cannot take: A stored K x M with FP8, the SwiGLU or
/// tuning; a count, leading dimension or batch stride without its --batched
/// or --views, FP8 or the SwiGLU, split-K or clusters with a batch, tuning.
void check_gemm_layout_flags(const GemmLayoutFlags &flags);

} // namespace coalesce
