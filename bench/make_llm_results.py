#!/usr/bin/env python3
"""Turns one coalesce-bench-fp8 run and one coalesce-bench-swiglu run (their
Google Benchmark JSON) into the page of the LLM layers' results.

  /usr/bin/python3 bench/make_llm_results.py FP8_JSON SWIGLU_JSON
      writes docs/results_llm.md and, with matplotlib, docs/results_fp8.png
      and docs/results_swiglu.png (each variant's speed over the cuBLAS
      baseline named in the page, per shape)

Benchmark names are <type>/<variant>/<MxNxK>; every variant was checked
against a double reference before it was timed (rel_error).
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FP8 = {
    "title": "FP8: e4m3 linear layer against cuBLASLt's e4m3 GEMM",
    "what": ("Ours: `out = bf16(gelu(acc * a_scale(i) * w_scale(j) + bias(j)))`, acc = A W^T over e4m3 A (M x K) "
             "and W (N x K) on the e4m3 warpgroup MMA (examples/Fp8Linear.h, default_mma_tiling). cuBLASLt: the "
             "e4m3 GEMM of the same layout with a bf16 output and no epilogue, with tensor-wise or row-wise "
             "scales, with and without its fast accumulation. Our accumulation is the instruction's (its error "
             "matches cuBLASLt's fast accumulation: the rel error column)."),
    "baseline": "cublaslt_fp8_row_scales",
    "ours": "coalesce_fp8_fused",
    "variants": ["cublaslt_fp8_tensor_scales", "cublaslt_fp8_tensor_scales_fast_accum", "cublaslt_fp8_row_scales",
                 "cublaslt_fp8_row_scales_fast_accum", "coalesce_fp8_fused"],
    "flops": 2,
    "png": "results_fp8.png",
}
SWIGLU = {
    "title": "SwiGLU: silu(x Wg^T) * (x Wu^T) in one kernel against cuBLAS",
    "what": ("Ours: both sums on one 128 x 128 tile, each k step's tile of x feeding one warpgroup MMA per sum, "
             "`y = bf16(silu(g) * u)` after both (examples/SwiGlu.h, default_fused_gemms_tiling). cuBLAS: one "
             "bf16 GEMM over the concatenated [Wg; Wu] alone (no activation), and the chain of two GEMMs and a "
             "silu * mul kernel. Wg and Wu are the halves of one buffer. TFLOP/s counts both products, 4 M N K."),
    "baseline": "cublas_gemm_over_wg_wu",
    "ours": "coalesce_swiglu_fused",
    "variants": ["cublas_gemm_over_wg_wu", "cublas_chain", "coalesce_swiglu_fused"],
    "flops": 4,
    "png": "results_swiglu.png",
}


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 3 or "median_ms" not in b:
            continue
        rows.setdefault(parts[2], {})[parts[1]] = b
    return data["context"], rows


def section(spec, context, rows, png_written):
    out = [f"## {spec['title']}", "",
           f"- Run: {context.get('date', '?')} on {context.get('gpu', '?')}",
           f"- Protocol: {context.get('protocol', '?')}", "", spec["what"], ""]
    if png_written:
        out += [f"![{spec['title']}]({spec['png']})", ""]
    out += ["| shape | variant | ms | TFLOP/s | rel error | speed vs " + spec["baseline"] + " |",
            "|---|---|---|---|---|---|"]
    for shape, by_variant in rows.items():
        base = by_variant.get(spec["baseline"])
        for v in spec["variants"]:
            b = by_variant.get(v)
            if not b:
                out.append(f"| {shape} | {v} | not run | | | |")
                continue
            speed = f"{base['median_ms'] / b['median_ms']:.2f}x" if base else ""
            name = f"**{v}**" if v == spec["ours"] else v
            out.append(f"| {shape} | {name} | {b['median_ms']:.4f} | {b['TFLOPs']:.0f} | {b['rel_error']:.2e} | "
                       f"{speed} |")
    out.append("")
    return out


def plot(spec, rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    shapes = list(rows)
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(spec["variants"])
    for n, v in enumerate(spec["variants"]):
        speeds = []
        for s in shapes:
            base, b = rows[s].get(spec["baseline"]), rows[s].get(v)
            speeds.append(base["median_ms"] / b["median_ms"] if base and b else 0)
        ax.bar([x + n * width for x in range(len(shapes))], speeds, width, label=v)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + width * (len(spec["variants"]) - 1) / 2 for x in range(len(shapes))])
    ax.set_xticklabels(shapes)
    ax.set_ylabel(f"speed over {spec['baseline']}")
    ax.set_title(spec["title"], fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fp8_json")
    parser.add_argument("swiglu_json")
    parser.add_argument("--md", default=os.path.join(ROOT, "docs", "results_llm.md"))
    args = parser.parse_args()
    lines = ["# Results: the LLM layers (FP8, SwiGLU) against cuBLAS", "",
             "Generated by `bench/make_llm_results.py` from the JSON of one `coalesce-bench-fp8` run and one "
             "`coalesce-bench-swiglu` run (kept in docs/data/); do not edit by hand. Speed = the baseline's median "
             "time over the variant's (above 1: faster than the baseline).", "",
             "```sh", "build/bench/coalesce-bench-fp8 --benchmark_out=fp8.json       # GPU machine",
             "build/bench/coalesce-bench-swiglu --benchmark_out=swiglu.json",
             "/usr/bin/python3 bench/make_llm_results.py fp8.json swiglu.json", "```", ""]
    for spec, path in ((FP8, args.fp8_json), (SWIGLU, args.swiglu_json)):
        context, rows = load(path)
        if not rows:
            sys.exit(f"make_llm_results: {path} holds no timed benchmarks")
        written = plot(spec, rows, os.path.join(os.path.dirname(args.md), spec["png"]))
        lines += section(spec, context, rows, written)
    with open(args.md, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.md}")


if __name__ == "__main__":
    main()
