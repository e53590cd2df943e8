#pragma once

namespace coalesce::gpu_check {

/// The GPU's math functions (erf, exp, tanh, as epilogues call them) over
/// about four million f32 inputs spread across their whole range, plus the
/// special values, against the function computed in double: the largest
/// error in units in the last place stays within libdevice's documented
/// bounds (2 ulp; results below the smallest normal may flush to zero),
/// and NaN, infinities and signed zeros come out as the
/// functions define them.
void check_math_functions();

} // namespace coalesce::gpu_check
