#pragma once
// The names rule: every name a user gives denotes one thing in the pipeline.

#include "scheduler/Environment.h"

namespace coalesce {

/// Params, Inputs and Funcs are global names; Vars, RDoms and loops are a
/// Func's own, but they print and compile as plain names next to the
/// Params and buffers (a loop named N would hide the Param N inside it).
/// So no Var, RDom or loop may take the name of a Param, Input or Func, a
/// Func's Vars and RDoms differ, and no user name may be one the compiler
/// reserves for the copies it makes (A_shared, A_fetch for every Input A).
/// Throws a UserError naming both uses.
void check_names(const Environment &env);

} // namespace coalesce
