// Lesson 6: schedules that Coalesce rejects.
//
// A schedule must never change the result. Two classic ways to break that
// rule type-check, run, and give finite numbers; Coalesce refuses both with
// a message that names the Func, the loop and the rule, and says what would
// be legal:
//   1. computing the epilogue inside the reduction loop, where it would see
//      partial sums (the bias added K times, GELU of each partial sum);
//   2. splitting K and ordering the inner loop outside the outer one, which
//      sums the terms in another order and so rounds differently.
// This program exits 0 only if both are rejected as user errors.

#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// Runs `attempt`; true if it throws a UserError whose message mentions
// `expected` (the rule). A compiler bug (InternalError) or success is a failure.
template <typename Attempt> bool rejected(const char *title, const std::string &expected, Attempt attempt) {
  std::cout << "---- " << title << " ----\n";
  try {
    attempt();
    std::cout << "NOT REJECTED: the schedule was accepted\n\n";
    return false;
  } catch (const UserError &error) {
    std::string message = error.what();
    std::cout << "rejected: " << message << "\n\n";
    return message.find(expected) != std::string::npos;
  } catch (const InternalError &error) {
    std::cout << "INTERNAL ERROR instead of a user error: " << error.what() << "\n\n";
    return false;
  }
}

} // namespace

int main() {
  return run_lesson([] {
    bool epilogue_rejected = rejected("the epilogue inside the reduction loop", "partial sums", [] {
      Gemm g = make_gemm(Epilogue::BiasGelu);
      // out (bias + GELU) computed inside acc's loop over k: rejected at once.
      g.out.compute_at(g.acc, g.k);
    });
    bool order_rejected = rejected("K's inner loop outside its outer loop", "order", [] {
      Gemm g = make_gemm(Epilogue::None);
      RVar ko("ko"), ki("ki");
      g.acc.update().split(g.k, ko, ki, 8).reorder({ki, ko});
      // The summation order is checked when the pipeline is lowered.
      Pipeline(g.out).loop_nest();
    });
    std::cout << (epilogue_rejected && order_rejected ? "both rejected" : "MISMATCH: a rejection is missing") << "\n";
    return epilogue_rejected && order_rejected;
  });
}
