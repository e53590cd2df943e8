#pragma once
// Everything a Func's schedule records, as text, so a test can compare the
// schedule before and after a primitive that must change nothing when it
// raises a UserError (the all-or-nothing rule).

#include "dsl/FuncContents.h"
#include "dsl/Func.h"

#include <sstream>
#include <string>
#include <variant>

namespace coalesce::testing {

inline std::string shared_layout_text(const SharedLayout &l) {
  std::ostringstream text;
  text << "t" << l.transposed << "p" << l.padding;
  return text.str();
}

// Every field of the pipeline (describe() leaves out zero_fill, padded_copy
// and multicast, which a schedule also records).
inline std::string tile_copies_text(const TileCopies &copies) {
  std::ostringstream text;
  if (const auto *one = std::get_if<OneBuffer>(&copies)) {
    text << "OneBuffer{z" << one->zero_fill << "}";
  } else if (const auto *reg = std::get_if<RegisterDoubleBuffer>(&copies)) {
    text << "RegisterDoubleBuffer{z" << reg->zero_fill << "}";
  } else if (const auto *async = std::get_if<AsyncCopies>(&copies)) {
    text << "AsyncCopies{s" << async->stages << "z" << async->zero_fill << "}";
  } else {
    const TmaCopies &tma = std::get<TmaCopies>(copies);
    text << "TmaCopies{s" << tma.stages << "producer";
    if (tma.producer)
      text << "{w" << tma.producer->warps << "r" << tma.producer->registers << "}";
    else
      text << "-";
    text << "padded" << padded_copy_name(tma.padded_copy) << "multicast" << tma.multicast << "}";
  }
  text << " (" << describe(copies) << ")";
  return text.str();
}

inline std::string schedule_text(const Func &f) {
  const FuncSchedule &s = f.contents()->schedule;
  std::ostringstream text;
  text << static_cast<int>(s.placement) << s.placement_set << s.at_func << "." << s.at_var << " m"
       << static_cast<int>(s.memory) << " b" << s.fold_bias << s.min_blocks_per_sm << " from";
  for (const std::string &v : s.mirrored_from)
    text << " " << v;
  text << " bounds " << s.bounds.size();
  for (const StageSchedule &stage : s.stages) {
    text << " |";
    for (const Dim &d : stage.dims)
      text << " " << d.var << ":" << static_cast<int>(d.kind) << d.gpu_dim << d.is_rvar << d.mirrored;
    for (const Split &split : stage.splits)
      text << " " << split.old_var << ">" << split.outer << "," << split.inner << "/" << split.factor
           << (split.is_rvar ? "r" : "") << (split.is_fuse ? "f" : "");
    for (const SharedStaging &staged : stage.staged_inputs)
      text << " staged " << staged.input << "@" << staged.at_loop << ":" << shared_layout_text(staged.layout) << ","
           << tile_copies_text(staged.copies);
    for (const std::string &r : stage.reduction_vars)
      text << " r:" << r;
    text << " " << stage.allow_reassociation << stage.allow_reduction_invariant_terms;
    const MmaLayout &l = stage.mma_layout;
    text << " layout " << static_cast<int>(l.kind) << " " << l.warp << "," << l.lane << "," << l.mma_i << ","
         << l.mma_j << "," << l.frag_i << "," << l.frag_j << " " << l.warp_m << "x" << l.warp_n << " " << l.warps_m
         << "x" << l.warps_n;
    text << " mma " << static_cast<int>(stage.mma.kind) << " " << stage.mma.k_inner;
  }
  return text.str();
}

} // namespace coalesce::testing
