"""Benchmark a model on mnnpy side by side with onnxruntime and the official MNN, interleaved; --profile per op.

`mnnpy bench m.onnx --threads 1 --runs 30 --compare ort,mnn --profile --png ops.png`: converts as needed (our
converter; official MNN runs the same .mnn as `mnn` and its own converter's as `mnn-cvt`; onnxruntime runs the
.onnx), runs the engines in turn after
warm-up and prints median/p10/p90 ms, the ratios mnnpy/peer and pre-inference times. Missing peers are reported.

`--threads 1,2` opens every engine once per thread count and interleaves all of them in the same rounds, then adds
the thread scaling per engine: on a machine whose speed drifts (shared VMs: 1.5x within minutes), two bench runs
one after the other do not give a speed-up, only runs taken in the same rounds do.
"""

from __future__ import annotations

import argparse
from pathlib import Path

COMMAND = "bench"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an .onnx or .mnn model")
    p.add_argument("--threads", type=_thread_counts, default=[1], metavar="N[,N...]",
                   help="numThread for every engine (and the BLAS pool); several counts (1,2): every engine at each, "
                   "all in the same interleaved rounds, and the speed-up per engine")
    p.add_argument("--backend", default="cpu", help="mnnpy backend: cpu | opencl | vulkan | auto (default cpu)")
    p.add_argument("--runs", type=int, default=20, help="timed rounds (one run per engine each)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    p.add_argument("--compare", default="ort,mnn,mnn-cvt",
                   help="peers, comma-separated: ort (onnxruntime on the .onnx), mnn (official MNN on mnnpy's .mnn), "
                   "mnn-cvt (official MNN on its own converter's .mnn); empty: mnnpy alone")
    p.add_argument("--profile", action="store_true", help="also print mnnpy's per-op table")
    p.add_argument("--top", type=int, default=25, help="rows of the per-op table (0: all)")
    p.add_argument("--png", default=None, metavar="FILE", help="with --profile: bar chart of the top ops "
                   "(needs matplotlib)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the figures (and profile) as JSON")
    p.add_argument("--workdir", default=None, help="where converted models go (default: a temporary folder)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--conv-algorithm", default=None, metavar="ALGO",
                   help="force mnnpy's convolution algorithm where it applies (config convAlgorithm)")


def _thread_counts(text: str) -> list[int]:
    """``"2"`` -> [2]; ``"1,2"`` -> [1, 2] (distinct, at least 1 each, in the given order)."""
    try:
        counts = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"thread counts must be integers, comma-separated: {text!r}") from None
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
        raise argparse.ArgumentTypeError(f"thread counts must be distinct integers >= 1: {text!r}")
    return counts


def run(args: argparse.Namespace) -> int:
    import json
    import platform

    import numpy as np

    from mnnpy.backends.cpu.compute import jit, packed_gemm
    from mnnpy.bench import threads
    from mnnpy.bench.engines import MnnpyEngine, open_engines, prepare_models, random_inputs
    from mnnpy.bench.measure import agreement, interleaved, report, scaling, scaling_record, to_record
    from mnnpy.bench.profile import profile_session, profile_table, run_overhead, write_chart

    peers = [p.strip().lower() for p in args.compare.split(",") if p.strip()]
    names = ["mnnpy", *[p for p in peers if p != "mnnpy"]]
    models = prepare_models(Path(args.model), Path(args.workdir) if args.workdir else None, set(names))
    config = {"convAlgorithm": args.conv_algorithm} if args.conv_algorithm else None
    print(f"machine: {platform.machine()} {threads.cpu_count()} cores ({threads.cpu_name()}), python "
          f"{platform.python_version()}, numpy {np.__version__}, BLAS threads via {threads.backend()}, "
          f"{threads.blas_core()}, compiled CPU kernels: {jit.describe()}")
    counts = args.threads
    groups, missing = [], []
    with threads.blas_threads(max(counts)):
        for n in counts:
            engines, gone = open_engines(models, names, n, args.backend, config)
            if engines:
                groups.append((n, engines))
            missing.extend(m for m in gone if n == counts[0])  # a missing peer is missing at every count
        if not groups:
            for m in missing:
                print(f"{m.name}: missing: {m.reason}")
            return 1
        feeds = random_inputs(groups[0][1][0].input_shapes(), args.seed)
        for _, engines in groups:
            for engine in engines:
                engine.feed(feeds)
        flat = [e for _, engines in groups for e in engines]
        every = interleaved(flat, args.runs, args.warmup)
        results, k = [], 0
        for n, engines in groups:
            stats, k = every[k:k + len(engines)], k + len(engines)
            diffs = agreement(engines)
            ours = next((e for e in engines if isinstance(e, MnnpyEngine)), None)
            where = f", mnnpy on {ours.session.main.name}" if ours is not None else ""
            if ours is not None and ours.mode == "segments":
                where += (" as a Module's segments (its shapes depend on values it computes; split on the first, "
                          "untimed run)")
            with_others = f", in the same rounds as {_others(counts, n)}" if len(counts) > 1 else ""
            title = (f"{Path(args.model).name}: {n} thread(s), {args.runs} runs after {args.warmup} warm-up, "
                     f"interleaved{where}{with_others}")
            print(report(title, stats, missing, diffs, models.convert_s))
            results.append((n, stats, diffs))
        # after the sessions were made (their pre-inference time includes loading or compiling the kernel)
        print(f"CPU GEMM: {packed_gemm.describe()}")
        if len(groups) > 1:
            print(scaling([(n, stats) for n, stats, _ in results]))
        ours = next((e for e in groups[0][1] if isinstance(e, MnnpyEngine)), None)
        ops = []
        if args.profile and ours is not None and ours.mode == "segments":
            print("no per-op profile: the net runs as a Module's segments, not one session")
        elif args.profile and ours is not None:
            n = groups[0][0]
            ops = profile_session(ours.session, runs=max(args.runs // 2, 2), warmup=1)
            overhead = run_overhead(ours.session, runs=max(args.runs // 2, 2))
            if len(groups) > 1:
                print(f"(the profile below is the {n}-thread session's)")
            print(profile_table(ops, top=args.top or None, overhead=overhead))
            if ours.session.main.name != "cpu":
                print("note: on a GPU backend the per-op times are host-side (recording/enqueue), not device time")
            if args.png:
                why = write_chart(ops, args.png, title=f"mnnpy {Path(args.model).name}, {n} thread(s)")
                print(why or f"chart written to {args.png}")
    if args.json:
        meta = {"model": str(args.model), "runs": args.runs, "warmup": args.warmup, "numpy": np.__version__,
                "cores": threads.cpu_count(), "cpu": threads.cpu_name(), "blas": threads.blas_core()}
        if len(results) == 1:
            n, stats, diffs = results[0]
            record = to_record({**meta, "threads": n}, stats, missing, diffs, ops)
        else:  # one record per thread count, the profile with the first
            record = {**meta, "threads": [n for n, _, _ in results],
                      "by_threads": [to_record({"threads": n}, stats, missing, diffs, ops if i == 0 else [])
                                     for i, (n, stats, diffs) in enumerate(results)],
                      "scaling": scaling_record([(n, stats) for n, stats, _ in results])}
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0


def _others(counts: list[int], n: int) -> str:
    return ", ".join(f"{m} thread(s)" for m in counts if m != n)
