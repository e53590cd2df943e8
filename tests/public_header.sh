#!/usr/bin/env bash
# public_header.sh CXX SOURCE: runtime/Coalesce.h, the public header,
# compiles on its own with strict warnings and without the CUDA headers, and
# pulls in none of the internals: Func's contents (dsl/FuncContents.h), the
# lowering environment and passes (scheduler/Environment.h, Lower.h), the
# lowered programs (scheduler/LoweredFunc.h), cuda.h.
set -uo pipefail
cxx=$1 source=$2
included=$(echo '#include "runtime/Coalesce.h"' |
  "$cxx" -std=c++17 -Wall -Wextra -Wshadow -Wconversion -Werror -I"$source" -x c++ -fsyntax-only -H - 2>&1) || {
  echo "FAIL: runtime/Coalesce.h does not compile on its own:"
  echo "$included"
  exit 1
}
internal=$(echo "$included" | grep -E '(FuncContents|Environment|Lower|LoweredFunc|cuda)\.h$')
if [[ -n $internal ]]; then
  echo "FAIL: runtime/Coalesce.h includes internal headers:"
  echo "$internal"
  exit 1
fi
echo "ok: runtime/Coalesce.h compiles alone and includes no internals"
