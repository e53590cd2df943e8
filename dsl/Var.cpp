#include "dsl/Var.h"

#include "dsl/Error.h"


namespace coalesce {

namespace {
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
} // namespace

// Names become loop variables, buffer names, parts of PTX and host symbols
// and C identifiers in generated launchers. A leading '_' is left to the
// compiler and the C and CUDA libraries (_, __nv_erff), so a user name
// starts with a letter.
void check_identifier(const std::string &name, const char *what) {
  bool ok = !name.empty() && is_ascii_letter(name[0]);
  for (char c : name)
    ok = ok && (is_ascii_letter(c) || is_ascii_digit(c) || c == '_');
  if (!ok)
    user_error("invalid ", what, " name '", name,
               "': a name is ASCII letters (a-z, A-Z), digits (0-9) and '_', and starts with a letter");
}

Var::Var(std::string name) : name_(std::move(name)) { check_identifier(name_, "Var"); }
Var::operator Expr() const { return Variable::make(Int(32), name_); }

RVar::RVar(std::string name, Expr min, Expr extent)
    : name_(std::move(name)), min_(std::move(min)), extent_(std::move(extent)) {
  check_identifier(name_, "RVar");
  if (!min_.defined() || !extent_.defined() || min_.type() != Int(32) ||
      extent_.type() != Int(32))
    user_error("RDom '", name_, "': min and extent must be i32 expressions (ints or Params)");
}
RVar::RVar(std::string name) : name_(std::move(name)) { check_identifier(name_, "RVar"); }
RVar::operator Expr() const {
  if (!min_.defined())
    user_error("RVar '", name_,
               "' names a split reduction loop and has no domain: use the RDom's variable in "
               "the algorithm");
  return Variable::make_reduction(name_, min_, extent_);
}

RDom::RDom(Expr min, Expr extent, std::string name)
    : var_(std::move(name), std::move(min), std::move(extent)) {
  if (auto e = as_const_int(var_.extent()); e && *e <= 0)
    user_error("RDom '", var_.name(), "' has extent ", *e, ": the extent must be positive");
}

Param::Param(std::string name) : name_(std::move(name)) { check_identifier(name_, "Param"); }
Param::operator Expr() const { return Variable::make(Int(32), name_, VariableKind::Param); }

} // namespace coalesce
