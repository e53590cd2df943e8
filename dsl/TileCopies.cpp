// The queries on a staged input's pipeline (dsl/Schedule.h: TileCopies),
// so that passes ask what a pipeline does rather than which one it is.
#include "dsl/Error.h"
#include "dsl/Schedule.h"

namespace coalesce {

namespace {
template <class... Fs> struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs> Overloaded(Fs...) -> Overloaded<Fs...>;
} // namespace

int tile_buffers(const TileCopies &copies) {
  return std::visit(Overloaded{[](const OneBuffer &) { return 1; }, [](const RegisterDoubleBuffer &) { return 2; },
                               [](const AsyncCopies &c) { return c.stages; }, [](const TmaCopies &c) { return c.stages; }},
                    copies);
}

bool zero_fills(const TileCopies &copies) {
  return std::visit(Overloaded{[](const OneBuffer &c) { return c.zero_fill; },
                               [](const RegisterDoubleBuffer &c) { return c.zero_fill; },
                               [](const AsyncCopies &c) { return c.zero_fill; }, [](const TmaCopies &) { return true; }},
                    copies);
}

const TmaCopies *tma_copies(const TileCopies &copies) { return std::get_if<TmaCopies>(&copies); }

int producer_warp_count(const TileCopies &copies) {
  const TmaCopies *tma = tma_copies(copies);
  return tma && tma->producer ? tma->producer->warps : 0;
}

std::string describe(const TileCopies &copies) {
  return std::visit(
      Overloaded{[](const OneBuffer &) { return std::string("one buffer (OneBuffer)"); },
                 [](const RegisterDoubleBuffer &) { return std::string("two buffers through registers (RegisterDoubleBuffer)"); },
                 [](const AsyncCopies &c) { return str_cat(c.stages, " stages of cp.async copies (AsyncCopies)"); },
                 [](const TmaCopies &c) {
                   return str_cat(c.stages, " stages of TMA copies (TmaCopies)",
                                  c.producer ? str_cat(", issued by ", c.producer->warps, " producer warps",
                                                       c.producer->registers
                                                           ? str_cat(" keeping ", c.producer->registers, " registers")
                                                           : std::string())
                                             : std::string());
                 }},
      copies);
}

const char *padded_copy_name(PaddedCopy copy) {
  switch (copy) {
  case PaddedCopy::Never: return "PaddedCopy::Never";
  case PaddedCopy::Always: return "PaddedCopy::Always";
  case PaddedCopy::WhereRowsAreRagged: return "PaddedCopy::WhereRowsAreRagged";
  }
  return "?";
}

bool same_pipeline(const TileCopies &a, const TileCopies &b) {
  if (a.index() != b.index() || tile_buffers(a) != tile_buffers(b))
    return false;
  const TmaCopies *ta = tma_copies(a), *tb = tma_copies(b);
  if (!ta)
    return true;
  if (ta->producer.has_value() != tb->producer.has_value())
    return false;
  return !ta->producer || (ta->producer->warps == tb->producer->warps && ta->producer->registers == tb->producer->registers);
}

} // namespace coalesce
