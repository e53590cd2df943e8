#pragma once
// Everything a Coalesce program needs: the algorithm language, the schedule
// primitives, and the Pipeline that lowers, compiles and runs them.

#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/Input.h"
#include "dsl/Var.h"
#include "runtime/Buffer.h"
#include "runtime/Pipeline.h"
