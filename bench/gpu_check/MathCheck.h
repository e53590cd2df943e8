#pragma once

namespace coalesce::gpu_check {

/// The GPU's math functions (erf, exp, tanh, as epilogues call them, and
/// the activations sigmoid and silu built on exp) over about four million
/// f32 inputs spread across their whole range, plus the special values,
/// against the function computed in double: the largest error in units in
/// the last place stays within libdevice's documented bounds (2 ulp; 3 for
/// sigmoid and silu, which add a rounded addition and division; results
/// below the smallest normal may flush to zero), and NaN, infinities and
/// signed zeros come out as the functions define them.
void check_math_functions();

} // namespace coalesce::gpu_check
