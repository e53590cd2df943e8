#pragma once
// Replaces variables by expressions, by name.

#include "dsl/IR.h"

#include <map>
#include <string>

namespace coalesce {

Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e);
Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &s);

} // namespace coalesce
