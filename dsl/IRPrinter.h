#pragma once
// The stable, readable printed form of the IR: what golden tests compare and
// what a user reads to see what a schedule did.

#include "dsl/IR.h"

#include <ostream>
#include <string>

namespace coalesce {

std::ostream &operator<<(std::ostream &out, const Expr &e);
std::ostream &operator<<(std::ostream &out, const Stmt &s);
std::string to_string(const Expr &e);
std::string to_string(const Stmt &s);

} // namespace coalesce
