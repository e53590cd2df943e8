#include "runtime/aot/GemmLayouts.h"

#include "dsl/Error.h"

namespace coalesce {

void check_gemm_layout_flags(const GemmLayoutFlags &f) {
  const bool views = f.views != "none", batched = f.batched != "none";
  if (f.a_km && (f.fp8 || f.swiglu))
    user_error("--a=km (A stored K x M) with ", f.swiglu ? std::string("--epilogue=swiglu") : "--dtype=" + f.dtype,
               f.fp8 ? ": the 8-bit warpgroup MMA reads A K-major; store A M x K (--a=mk)"
                     : ": the SwiGLU's x is stored M x K; leave --a out");
  if (f.a_km && (f.autotune || f.tuning_db))
    user_error("--a=km with ", f.autotune ? "--autotune" : "--tuning-db",
               ": the tuning problems store A M x K; leave the flag out");
  if (!views && (f.lda_given || f.ldb_given))
    user_error("--", f.lda_given ? "lda" : "ldb",
               " is the leading dimension of a view: give --views=", f.lda_given ? "a" : "b",
               " (or both) too, or leave it out");
  if (views && (f.swiglu || f.fp8))
    user_error("--views=", f.views, " with ", f.swiglu ? std::string("--epilogue=swiglu") : "--dtype=" + f.dtype,
               ": views are built for the GEMM's A and B");
  // A batch stride is a batched view's: A's with --batched=both or a and
  // --views=a or both; B's likewise.
  const bool a_batched = f.batched == "both" || f.batched == "a", b_batched = f.batched == "both" || f.batched == "b";
  const bool a_view = f.views == "a" || f.views == "both", b_view = f.views == "b" || f.views == "both";
  if (f.batch_stride_a_given && !(a_batched && a_view))
    user_error("--batch_stride_a is the distance between the products of a batched view of A: give --batched=both "
               "or a and --views=a or both too, or leave it out");
  if (f.batch_stride_b_given && !(b_batched && b_view))
    user_error("--batch_stride_b is the distance between the products of a batched view of B: give --batched=both "
               "or b and --views=b or both too, or leave it out");
  if (!f.output_view && f.ldc_given)
    user_error("--ldc is the leading dimension of an output view: give --output-view too, or leave it out");
  const bool output_view = f.output_view || f.out_nm;
  const std::string view_flag = f.out_nm ? "--out=nm" : "--output-view";
  if (output_view && (f.swiglu || f.fp8))
    user_error(view_flag, " with ", f.swiglu ? std::string("--epilogue=swiglu") : "--dtype=" + f.dtype,
               ": output views are built for the GEMMs of f32, tf32, bf16 or f16 inputs");
  if (f.batch_stride_given && !(batched && output_view))
    user_error("--batch_stride is the distance between a batch's products in an output view: give --batched and "
               "--output-view (or --out=nm) too, or leave it out");
  if (output_view && (f.autotune || f.tuning_db))
    user_error(view_flag, " with ", f.autotune ? "--autotune" : "--tuning-db",
               ": the tuning problems are dense; leave the flag out");
  if (views && (f.autotune || f.tuning_db))
    user_error("--views=", f.views, " with ", f.autotune ? "--autotune" : "--tuning-db",
               ": the tuning problems are dense; leave the flag out");
  if (!batched) {
    if (f.batch_given)
      user_error("--batch=", f.batch,
                 " is the count of a batch of products: give --batched=both, a or b too, or leave it out");
    return;
  }
  const std::string flag = "--batched=" + f.batched;
  if (f.swiglu || f.fp8)
    user_error(flag, " with ", f.swiglu ? "--epilogue=swiglu" : "--dtype=" + f.dtype,
               ": batches are built for the single GEMM of f32, tf32, bf16 or f16 inputs");
  if (f.split_k != 1)
    user_error(flag, " with --split-k=", f.split_k,
               ": a batch's products are not split (its blocks are already a grid over the batch); leave "
               "--split-k out");
  if (f.cluster_blocks > 0)
    user_error(flag, " with --cluster-blocks: a batch's blocks are not clustered; leave the flag out");
  if (f.autotune || f.tuning_db)
    user_error(flag, " with ", f.autotune ? "--autotune" : "--tuning-db",
               ": the tuning problems are single products; leave the flag out");
}

} // namespace coalesce
