"""Builds coalesce::linear_gelu (linear_gelu_op.cpp over the launcher that
coalesce-aot generated into GENERATED_DIR) with torch.utils.cpp_extension,
and checks it on the GPU against torch.nn.functional.gelu(F.linear(x, W, b)):
numerics at several shapes (ragged, a decode step, a 3-D x), a non-default
stream, torch.compile, the argument errors, and the time against PyTorch's
own bf16 path.

    coalesce-aot --dtype=bf16 --out-dtype=bf16 --b=nk --name=linear_gelu --output-dir=GENERATED_DIR
    python3 build_and_check.py GENERATED_DIR
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load

sys.stdout.reconfigure(line_buffering=True)  # a crash keeps the lines before it
here = os.path.dirname(os.path.abspath(__file__))
generated = os.path.abspath(sys.argv[1])
cuda_root = os.environ.get("CUDA_HOME", "/usr/local/cuda")
load(name="coalesce_linear_gelu",
     sources=[os.path.join(here, "linear_gelu_op.cpp"), os.path.join(generated, "linear_gelu.cpp")],
     extra_include_paths=[generated, os.path.join(cuda_root, "include")],
     extra_cflags=["-O2", "-DCOALESCE_TORCH_CUDA"],
     extra_ldflags=["-L" + os.path.join(cuda_root, "lib64"), "-lcuda"],
     with_cuda=True, is_python_module=False, verbose=False)
op = torch.ops.coalesce.linear_gelu
print("torch", torch.__version__, "on", torch.cuda.get_device_name())

failures = 0


def check(name, condition, detail=""):
    global failures
    print(("ok   " if condition else "FAIL ") + name + (": " + detail if detail else ""))
    failures += 0 if condition else 1


def inputs(shape_x, N, bias_dtype=torch.bfloat16, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    K = shape_x[-1]
    x = torch.randn(*shape_x, device="cuda", dtype=torch.bfloat16, generator=g)
    W = (torch.randn(N, K, device="cuda", generator=g) / max(K, 1) ** 0.5).to(torch.bfloat16)
    b = torch.randn(N, device="cuda", generator=g).to(bias_dtype)
    return x, W, b


def relative_error(y, x, W, b):
    ref = F.gelu(F.linear(x.double(), W.double(), b.double()))
    return ((y.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


for shape_x, N in [((4096, 4096), 4096), ((1000, 1000), 1048), ((131, 8), 136), ((1, 4096), 4096),
                   ((3, 5, 64), 32), ((16, 4096), 11008)]:
    x, W, b = inputs(shape_x, N)
    y = op(x, W, b)
    torch.cuda.synchronize()
    error = relative_error(y, x, W, b)
    check(f"x {tuple(shape_x)} W {N}x{shape_x[-1]}: shape {tuple(y.shape)}, dtype {y.dtype}",
          tuple(y.shape) == tuple(shape_x[:-1]) + (N,) and y.dtype == torch.bfloat16 and error < 1e-2,
          f"relative error {error:.2e} against a float64 reference")

x, W, b = inputs((1000, 1000), 1048, bias_dtype=torch.float32, seed=1)
check("f32 bias", relative_error(op(x, W, b), x, W, b) < 1e-2)

stream = torch.cuda.Stream()
x, W, b = inputs((512, 512), 512, seed=2)
with torch.cuda.stream(stream):
    y = op(x, W, b)
stream.synchronize()
check("on a non-default stream", relative_error(y, x, W, b) < 1e-2)

x, W, b = inputs((256, 512), 384, seed=3)
compiled = torch.compile(lambda x: op(x, W, b) * 2.0 + 1.0)
y = compiled(x)
check("under torch.compile (an opaque op)", relative_error((y - 1.0) / 2.0, x, W, b) < 1e-2)

x, W, b = inputs((64, 128), 256, seed=4)
for name, call, message in [
        ("CPU tensors", lambda: op(x.cpu(), W.cpu(), b.cpu()), "runs on CUDA tensors"),
        ("float32 x", lambda: op(x.float(), W, b), "x must be bfloat16"),
        ("W transposed (a view)", lambda: op(x, W.t().contiguous().t(), b), "weight must be contiguous"),
        ("K mismatch", lambda: op(x[:, :64].contiguous(), W, b), "weight must be [N, 64]"),
        ("bias of the wrong length", lambda: op(x, W, b[:100]), "bias has 100 elements"),
        ("x on another device than W", lambda: op(x, W.cpu(), b), "must be on one device")]:
    try:
        call()
        check("refused: " + name, False, "no error")
    except RuntimeError as error:
        check("refused: " + name, message in str(error), str(error).splitlines()[0][:160])


def median_ms(fn, runs=50):
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    times = []
    for _ in range(runs):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


for shape_x, N in [((4096, 4096), 4096), ((8192, 4096), 11008), ((16, 4096), 4096)]:
    x, W, b = inputs(shape_x, N, seed=5)
    ours = median_ms(lambda: op(x, W, b))
    torchs = median_ms(lambda: F.gelu(F.linear(x, W, b)))
    print(f"time x {shape_x} W {N}x{shape_x[-1]}: coalesce::linear_gelu {ours:.4f} ms, "
          f"F.gelu(F.linear) {torchs:.4f} ms: {torchs / ours:.2f}x")

print("failures:", failures)
sys.exit(1 if failures else 0)
