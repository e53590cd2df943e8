#!/usr/bin/env python3
"""Turns coalesce-bench's JSON (Google Benchmark format) into the results page.

  /usr/bin/python3 bench/make_results.py BENCH_JSON [BENCH_JSON ...]
      writes docs/results.md (one section per precision, a table per shape)
      and docs/results_<precision>.png (per precision: each variant's
      throughput over cuBLAS's GEMM of the same precision, per shape; needs
      matplotlib)
  python3 bench/make_results.py --table BENCH_JSON
      prints the short table only (what bench/run_benchmarks.sh shows last;
      needs nothing beyond the standard library)

Several JSON files (runs of one precision each, back to back on one GPU,
where one run would not fit the GPU machine's time limit) make one page:
every run must name the same GPU, and the page gives each run's date and
precisions.

Benchmark names are <precision>/<variant>/<shape>; names of the older
<variant>/<shape> form are read as fp32 (cublas_sgemm as cublas_gemm).
"""

import argparse
import json
import os
import sys

PRECISIONS = ["fp32", "tf32", "bf16", "f16"]
VARIANTS = ["cublas_gemm", "cublas_chain", "cublaslt_gelu_bias", "coalesce_gemm", "coalesce_fused"]
PRECISION_TITLES = {
    "fp32": "FP32 (f32 A, B and output; true FP32, no tensor cores)",
    "tf32": "TF32 (f32 A, B and output; tensor cores on inputs rounded to tf32)",
    "bf16": "BF16 (bf16 A, B and output; f32 accumulation)",
    "f16": "FP16 (f16 A, B and output; f32 accumulation)",
}


def descriptions(precision):
    ours = ("the FFMA schedule (schedule_gemm, default_gemm_tiling)" if precision == "fp32"
            else "the tensor-core schedule (schedule_gemm_mma, bench::mma_tiling)" if precision == "tf32"
            else "the tensor-core schedule (schedule_gemm_mma, bench::mma_tiling): Hopper's warpgroup MMA where "
                 "K and N are multiples of 8 on sm_90a, else the warp MMA (the Tiling line names the one used)")
    gemm = "cublasSgemm (true FP32)" if precision == "fp32" else f"cublasGemmEx ({precision})"
    return {
        "cublas_gemm": f"cuBLAS GEMM alone, {gemm}",
        "cublas_chain": "cuBLAS GEMM into the output type, then a bias + erf-GELU kernel (the unfused chain)",
        "cublaslt_gelu_bias": "cuBLASLt with the fused GELU_BIAS epilogue (tanh GELU; bias of the output type)",
        "coalesce_gemm": f"Coalesce, A * B alone: {ours}",
        "coalesce_fused": f"Coalesce, A * B + bias + erf-GELU fused in one kernel: {ours}",
    }


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = []
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        # Google Benchmark appends the run's settings ("/iterations:1",
        # "/manual_time"); they are not part of the name.
        parts = [p for p in b["name"].split("/") if ":" not in p and p != "manual_time"]
        if len(parts) == 2:
            parts = ["fp32"] + parts
        if len(parts) != 3:
            print(f"make_results: skipping benchmark with an unexpected name: {b['name']}", file=sys.stderr)
            continue
        row = dict(b)
        row["precision"], row["variant"], row["shape"] = parts
        if row["variant"] == "cublas_sgemm":
            row["variant"] = "cublas_gemm"
        row["failed"] = bool(b.get("error_occurred"))
        rows.append(row)
    precisions = [p for p in PRECISIONS if any(r["precision"] == p for r in rows)]
    precisions += sorted({r["precision"] for r in rows} - set(precisions))
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    return data.get("context", {}), rows, precisions, shapes


def load_runs(paths):
    """Each run's rows, merged; the first run's context, with the runs' dates (`runs`: [(date, precisions)])."""
    context, rows, precisions, shapes, runs = {}, [], [], [], []
    for path in paths:
        run_context, run_rows, run_precisions, run_shapes = load(path)
        if context and run_context.get("gpu") != context.get("gpu"):
            raise SystemExit(f"make_results: {path} ran on {run_context.get('gpu', 'an unknown GPU')}, the first run "
                             f"on {context.get('gpu', 'an unknown GPU')}: one page shows one GPU")
        context = context or dict(run_context)
        taken = {(r["precision"], r["variant"], r["shape"]) for r in rows}
        for r in run_rows:
            if (r["precision"], r["variant"], r["shape"]) in taken:
                raise SystemExit(f"make_results: {r['precision']}/{r['variant']}/{r['shape']} is in two runs "
                                 f"(again in {path})")
        rows += run_rows
        precisions += [p for p in run_precisions if p not in precisions]
        shapes += [s for s in run_shapes if s not in shapes]
        runs.append((run_context.get("date", "unknown"), run_precisions))
    context["runs"] = runs
    ordered = [p for p in PRECISIONS if p in precisions] + [p for p in precisions if p not in PRECISIONS]
    return context, rows, ordered, shapes


def select(rows, precision, shape):
    found = {r["variant"]: r for r in rows if r["precision"] == precision and r["shape"] == shape}
    return [found[v] for v in VARIANTS if v in found] + [r for v, r in found.items() if v not in VARIANTS]


def median_of(rows, precision, shape, variant):
    for r in rows:
        if (r["precision"], r["shape"], r["variant"]) == (precision, shape, variant) and not r["failed"]:
            return r.get("median_ms")
    return None


def shape_label(shape):
    m, n, k = shape.split("x")
    return f"{m}^3" if m == n == k else shape


def fmt(value, digits=3):
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.{digits}f}" if abs(value) >= 1 else f"{value:.{digits + 1}f}"


def print_table(rows, precisions, shapes):
    print(f"{'prec':<5} {'shape':<18} {'variant':<20} {'median ms':>10} {'TFLOP/s':>8} {'vs gemm':>8}")
    for precision in precisions:
        for shape in shapes:
            gemm = median_of(rows, precision, shape, "cublas_gemm")
            for r in select(rows, precision, shape):
                if r["failed"]:
                    print(f"{precision:<5} {shape:<18} {r['variant']:<20} FAILED: {r.get('error_message', '')[:80]}")
                    continue
                ratio = r["median_ms"] / gemm if gemm else None
                print(f"{precision:<5} {shape:<18} {r['variant']:<20} {r['median_ms']:>10.4f} {r['TFLOPs']:>8.2f} "
                      f"{(f'{ratio:.3f}' if ratio else '-'):>8}")


def write_markdown(context, rows, precisions, shapes, path, json_name, png_names):
    gpu = context.get("gpu", "unknown GPU")
    runs = context.get("runs") or [(context.get("date", "unknown"), precisions)]
    lines = [
        "# Results: GEMM + bias + GELU against cuBLAS, per precision",
        "",
        "Generated by `bench/make_results.py` from the JSON of "
        + ("one `coalesce-bench` run" if len(runs) == 1 else
           f"{len(runs)} `coalesce-bench` runs, one after another on one machine (one run would not fit the GPU "
           "machine's time limit)") + "; do not edit by hand.",
        "The LLM layers (FP8 against cuBLASLt's FP8 GEMM, SwiGLU against cuBLAS) have a page of their own: "
        "[results_llm.md](results_llm.md).",
        "",
        (f"- Date of the run: {runs[0][0]}" if len(runs) == 1 else
         "- Dates of the runs: " + "; ".join(f"{date} ({', '.join(p)})" for date, p in runs)),
        f"- GPU: {gpu} ({context.get('gpu_sm_count', '?')} SMs, "
        f"{int(context.get('gpu_l2_bytes', 0)) / 2**20:.0f} MiB L2), code for {context.get('gpu_target', '?')}",
        f"- Host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
        f"Google Benchmark library built as {context.get('library_build_type', '?')} (the distribution's "
        "package; it affects only the harness's host overhead, not the CUDA-event times)",
        f"- Protocol: {context.get('protocol', 'see shared/BENCH.md')}; L2 flush buffer "
        f"{int(context.get('l2_flush_bytes', 0)) / 2**20:.0f} MiB",
        "",
        "Commands:",
        "",
        "```sh",
        "bash scripts/build_gpu_bundle.sh                 # development machine: LLVM static, bench included",
        "bash bench/run_benchmarks.sh                     # GPU machine, tree root: writes $OUT/bench.json",
        f"/usr/bin/python3 bench/make_results.py {json_name}  # development machine, on the fetched JSON: "
        "this page and its plots",
        "```",
        "",
        "Every variant is checked before it is timed: output poisoned with NaN, one run, every element finite "
        "and the relative error ||out - ref|| / ||ref|| within the variant's tolerance (the `tol` column, "
        "from `bench/common/Precisions.h`, which gives each one's reason), where ref is cuBLAS's GEMM of the "
        "same precision with an f32 output (itself checked against a double-precision product on sampled rows) "
        "with bias and GELU applied in double (erf form; tanh form for cuBLASLt). `coalesce_fused` is also "
        "checked at K = 1 and K = 3. Times are medians of CUDA-event timings with the L2 flushed before each "
        "run; TFLOP/s counts 2 M N K / median. \"vs GEMM\" and \"vs chain\" are time ratios against cuBLAS's "
        "GEMM alone and the cuBLAS chain of the same precision (below 1: faster). The plots show throughput "
        "relative to cuBLAS's GEMM of the same precision (above 1: faster).",
        "",
    ]
    for precision in precisions:
        desc = descriptions(precision)
        lines += [f"## {PRECISION_TITLES.get(precision, precision)}", ""]
        for v in VARIANTS:
            if any(r["precision"] == precision and r["variant"] == v for r in rows):
                lines.append(f"- `{v}`: {desc[v]}")
        lines += ["", f"![{precision}: throughput relative to cuBLAS GEMM]({png_names[precision]})", ""]
        for shape in shapes:
            selected = select(rows, precision, shape)
            if not selected:
                continue
            m, n, k = (int(x) for x in shape.split("x"))
            lines += [f"### {precision}, {shape_label(shape)} (M x N x K = {m} x {n} x {k}, "
                      f"{2 * m * n * k / 1e9:.1f} GFLOP)", ""]
            gemm = median_of(rows, precision, shape, "cublas_gemm")
            chain = median_of(rows, precision, shape, "cublas_chain")
            lines.append("| variant | median ms | min ms | max ms | TFLOP/s | vs GEMM | vs chain "
                         "| runs | rel. error | tol | PTX compile ms | registers | spills (B) |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            labels = []
            for r in selected:
                if r["failed"]:
                    lines.append(f"| `{r['variant']}` | FAILED: {r.get('error_message', '')} ||||||||||||")
                    continue
                med = r["median_ms"]
                vs_gemm = f"{med / gemm:.3f}" if gemm else ""
                vs_chain = f"{med / chain:.3f}" if chain else ""
                ptx = f"{r['ptx_compile_ms']:.0f}" if "ptx_compile_ms" in r else ""
                regs = str(int(r["registers"])) if "registers" in r else ""
                spills = str(int(r["spill_bytes"])) if "spill_bytes" in r else ""
                tol = f"{r['tolerance']:.1e}" if "tolerance" in r else ""
                lines.append(f"| `{r['variant']}` | {fmt(med)} | {fmt(r['min_ms'])} | {fmt(r['max_ms'])} | "
                             f"{r['TFLOPs']:.1f} | {vs_gemm} | {vs_chain} | {int(r.get('timed_runs', 0))} | "
                             f"{r.get('rel_error', 0):.1e} | {tol} | {ptx} | {regs} | {spills} |")
                if r.get("label"):
                    labels.append(f"`{r['variant']}`: {r['label']}")
            lines.append("")
            if labels:
                lines += ["Tiling: " + "; ".join(labels) + ".", ""]
    failures = [r for r in rows if r["failed"]]
    if failures:
        lines += ["## Failures", ""]
        lines += [f"- `{r['precision']}/{r['variant']}` {r['shape']}: {r.get('error_message', '')}" for r in failures]
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_plot(rows, precision, shapes, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = [s for s in shapes if any(r["precision"] == precision and r["shape"] == s for r in rows)]
    variants = [v for v in VARIANTS if any(r["precision"] == precision and r["variant"] == v for r in rows)]
    # Wide enough that each shape's bars and their values stay apart (the
    # held-out shapes double the count).
    crowded = len(shapes) > 11
    fig, ax = plt.subplots(figsize=(max(11, 0.95 * len(shapes)), 5.5))
    width = 0.8 / max(len(variants), 1)
    colors = {"cublas_gemm": "#4c72b0", "cublas_chain": "#8fa9d6", "cublaslt_gelu_bias": "#64b5cd",
              "coalesce_gemm": "#dd8452", "coalesce_fused": "#c44e52"}
    top = 1.0
    for vi, v in enumerate(variants):
        xs, ys = [], []
        for si, shape in enumerate(shapes):
            gemm = median_of(rows, precision, shape, "cublas_gemm")
            med = median_of(rows, precision, shape, v)
            if gemm and med:
                xs.append(si + (vi - (len(variants) - 1) / 2) * width)
                ys.append(gemm / med)
        ax.bar(xs, ys, width, label=v, color=colors.get(v))
        for x, y in zip(xs, ys):
            ax.text(x, y + 0.01, f"{y:.2f}", ha="center", va="bottom", fontsize=6, rotation=90 if crowded else 0)
        top = max([top] + ys)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([shape_label(s) for s in shapes], fontsize=8, rotation=30 if crowded else 0,
                       ha="right" if crowded else "center")
    ax.set_ylabel(f"throughput / cuBLAS {precision} GEMM's (median times)")
    ax.set_ylim(0, top * 1.15)
    ax.set_title(f"{PRECISION_TITLES.get(precision, precision)}: relative to cuBLAS GEMM, L2-flushed medians",
                 fontsize=10)
    ax.legend(loc="upper right", fontsize=8, ncol=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="+", help="coalesce-bench --benchmark_out files (one page)")
    parser.add_argument("--table", action="store_true", help="print the short table only")
    parser.add_argument("--md", default=os.path.join(ROOT, "docs", "results.md"))
    parser.add_argument("--png-dir", default=None, help="where results_<precision>.png go (default: next to --md)")
    args = parser.parse_args()
    context, rows, precisions, shapes = load_runs(args.json)
    if not rows:
        print(f"make_results: no benchmarks in {', '.join(args.json)}", file=sys.stderr)
        return 1
    if args.table:
        print_table(rows, precisions, shapes)
        return 1 if any(r["failed"] for r in rows) else 0
    md_dir = os.path.dirname(os.path.abspath(args.md))
    png_dir = os.path.abspath(args.png_dir) if args.png_dir else md_dir
    png_paths = {p: os.path.join(png_dir, f"results_{p}.png") for p in precisions}
    png_names = {p: os.path.relpath(path, md_dir) for p, path in png_paths.items()}
    json_paths = []
    for path in args.json:
        relative = os.path.relpath(os.path.abspath(path), ROOT)
        json_paths.append(os.path.basename(path) if relative.startswith("..") else relative)
    json_path = " ".join(json_paths)
    write_markdown(context, rows, precisions, shapes, args.md, json_path, png_names)
    try:
        import matplotlib  # noqa: F401 (checked here, so that a missing one is one clear line)
    except ImportError:
        print(f"make_results: wrote {args.md}, but the plots need matplotlib "
              "(apt-get install python3-matplotlib, then run with /usr/bin/python3)", file=sys.stderr)
        return 1
    for p in precisions:
        write_plot(rows, p, shapes, png_paths[p])
    print_table(rows, precisions, shapes)
    print(f"make_results: wrote {args.md} and {', '.join(png_paths[p] for p in precisions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
