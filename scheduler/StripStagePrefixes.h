#pragma once
// Lowering pass: drops the Func and stage qualifiers from loop and let names
// ("acc.s1.ko" -> "ko") once no pass needs them, so that the printed nest
// uses the names the user wrote. Nests of different Funcs reuse names only
// in disjoint scopes, which the printer and codegen handle.

#include "dsl/IR.h"

namespace coalesce {

Stmt strip_stage_prefixes(const Stmt &s);

} // namespace coalesce
