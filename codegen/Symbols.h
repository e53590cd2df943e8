#pragma once
// The symbols generated code defines, derived from the user's Func names in
// one place. A Func may be named anything an identifier allows, including
// the name of a function the generated code calls (tanhf, erff, malloc,
// free) or a word PTX reserves (WARP_SZ); emitted under its own name it would
// replace that function in the JIT, or be rejected by ptxas. Every emitted
// symbol therefore carries a prefix that no C library, libdevice (__nv_*)
// or PTX name has. Header only: the runtime and the AOT launcher look
// kernels up by these names without linking LLVM.

#include <string>

namespace coalesce {

/// The host entry point `void (void **)` for output Func `func`:
/// "coalesce.out". The '.' is in no user name and no C symbol.
inline std::string host_symbol(const std::string &func) { return "coalesce." + func; }

/// The PTX `.entry` of GPU kernel `kernel` ("out", "out_1"): "coalesce_out".
/// A PTX identifier must be a C-like name, so the prefix is a word, not '.'.
inline std::string kernel_symbol(const std::string &kernel) { return "coalesce_" + kernel; }

} // namespace coalesce
