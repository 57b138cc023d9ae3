"""Latency of transformer models as the converter's transformer pass families are switched on one after another.

    python tools/bench_passes.py [--runs N] [--warmup N] [--threads N] [--small] [--models bert4l vit_tiny swin]
                                 [--markdown FILE] [--ab PASS [PASS ...]]

Each model (tools/bench_models.py's BERT-4L and ViT-tiny, the Swin-T stage-1 block pair of
tests/converter/transformer_models.py: 56x56 tokens, window 7, dim 96, 3 heads, with the classifier's pooled head) is
converted once per stage with `run_pipeline(skip=..., enable=OPT_IN)`; the stages are cumulative:

    base           the converter's generic passes only (every pass of FAMILIES skipped)
    +gelu/norm     GELU (erf, tanh), LayerNorm, RMSNorm, GroupNorm fusion
    +transpose     split QKV before transposing, split the fused QKV projection, transpose cancellation (MatMul
                   flags), hoist above split
    +attention     fuse-attention (and its extended form: windowed / batched attention)
    +token-reorder Swin's window order carried through per-token ops

All stages of a model are timed interleaved (mnnpy.bench.measure.interleaved) on mnnpy's CPU backend and each
stage's output is compared with onnxruntime. The table gives the data moves in the converted graph
(token_reorder.count_moves), the runtime Raster commands of the session plan, the summed per-command medians of the
data-moving commands (Raster, GatherV2, Permute; mnnpy.bench.profile) and the end-to-end latency.

`--ab PASS ...` instead times, per model, the default pipeline (no opt-in passes) against the same pipeline with the
named passes skipped, interleaved in one process (A B A B ...), and prints median / p10 of each, the ratio and both
outputs' largest difference to onnxruntime.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

FAMILIES: list[tuple[str, set[str]]] = [
    ("+gelu/norm", {"fuse-gelu", "fuse-gelu-tanh", "fuse-layer-norm", "fuse-rms-norm", "fuse-group-norm"}),
    ("+transpose", {"split-before-transpose", "split-qkv", "transpose-cancellation", "hoist-transpose-above-split"}),
    ("+attention", {"fuse-attention", "fuse-attention-extended"}),
    ("+token-reorder", {"token-reorder"}),
]


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def models(small: bool) -> dict[str, Callable[[Path], Any]]:
    """Model name -> function writing nothing and returning the onnx ModelProto."""
    import onnx

    bench = _module("bench_models", ROOT / "tools" / "bench_models.py")
    if str(ROOT / "tests") not in sys.path:  # transformer_models imports the tests' support package
        sys.path.insert(0, str(ROOT / "tests"))
    swin = _module("transformer_models", ROOT / "tests" / "converter" / "transformer_models.py")
    bert_sizes = {"seq": 32, "dim": 64, "heads": 2} if small else {}
    vit_sizes = {"size": 64, "dim": 48, "layers": 4} if small else {}
    swin_sizes = {"size": 16, "window": 4, "dim": 32, "heads": 2} if small else \
        {"size": 56, "window": 7, "dim": 96, "heads": 3}
    return {
        "bert4l": lambda tmp: onnx.load(str(bench.bert4l(tmp / "bert4l.onnx", **bert_sizes))),
        "vit_tiny": lambda tmp: onnx.load(str(bench.vit_tiny(tmp / "vit_tiny.onnx", **vit_sizes))),
        "swin": lambda tmp: swin.swin_blocks(classes=1000, **swin_sizes)[0],
    }


def stages() -> list[tuple[str, set[str]]]:
    """(stage name, passes skipped) for the cumulative stages."""
    every = set().union(*(names for _, names in FAMILIES))
    result = [("base", set(every))]
    enabled: set[str] = set()
    for name, names in FAMILIES:
        enabled |= names
        result.append((name, every - enabled))
    return result


def bench_model(name: str, model: Any, tmp: Path, runs: int, warmup: int, threads: int) -> list[dict[str, Any]]:
    """One row per stage: moves, runtime Rasters, latency, difference to onnxruntime."""
    import onnxruntime as ort
    from mnnpy.converter.frontends.onnx import load_onnx
    from mnnpy.converter.passes import OPT_IN, run_pipeline, token_reorder
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net

    from mnnpy.bench.engines import MnnpyEngine, random_inputs
    from mnnpy.bench.measure import interleaved
    from mnnpy.bench.profile import profile_session

    engines, rows = [], []
    for stage, skipped in stages():
        graph = load_onnx(model)
        run_pipeline(graph, skip=skipped, enable=OPT_IN)
        path = tmp / f"{name}_{len(rows)}.mnn"
        save_net(graph_to_net(graph), str(path))
        engine = MnnpyEngine(path, threads)
        engine.name = stage
        commands = engine.session.info()["commands"]
        rows.append({"model": name, "stage": stage, "moves": token_reorder.count_moves(graph), "ops": len(graph.nodes),
                     "rasters": sum(c["type"] == "Raster" for c in commands)})
        engines.append(engine)
    feeds = random_inputs(engines[0].input_shapes())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = session.run(None, feeds)[0]
    for engine in engines:
        engine.feed(feeds)
    for row, engine, stats in zip(rows, engines, interleaved(engines, runs, warmup), strict=True):
        ops = profile_session(engine.session, runs=max(runs // 3, 3))
        engine.run()
        got = engine.output().reshape(ref.shape)
        row.update(median=stats.median, p10=stats.p10, p90=stats.p90,
                   move_ms=sum(op.ms for op in ops if op.op_type in ("Raster", "GatherV2", "Permute", "Transpose")),
                   diff=float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-12)))
    return rows


def _convert(model: Any, path: Path, skip: set[str]) -> Path:
    from mnnpy.converter.frontends.onnx import load_onnx
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net

    graph = load_onnx(model)
    run_pipeline(graph, skip=skip)
    save_net(graph_to_net(graph), str(path))
    return path


def ab_model(name: str, model: Any, tmp: Path, passes: set[str], runs: int, warmup: int, threads: int) -> str:
    """One line: the default pipeline (B) against the pipeline without `passes` (A), interleaved."""
    import onnxruntime as ort

    from mnnpy.bench.engines import MnnpyEngine, random_inputs
    from mnnpy.bench.measure import interleaved

    engines = [MnnpyEngine(_convert(model, tmp / f"{name}_{tag}.mnn", skip), threads)
               for tag, skip in (("a", passes), ("b", set()))]
    feeds = random_inputs(engines[0].input_shapes())
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    diffs = []
    for engine in engines:
        engine.feed(feeds)
        engine.run()
        got = engine.output().reshape(ref.shape)
        diffs.append(float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-12)))
    a, b = interleaved(engines, runs, warmup)
    return (f"{name}: without {sorted(passes)} {a.median:.2f} ms (p10 {a.p10:.2f}), with {b.median:.2f} ms "
            f"(p10 {b.p10:.2f}): {b.median / a.median:.3f}x median, {b.p10 / a.p10:.3f}x p10; "
            f"rel diff vs ORT {diffs[0]:.1e} / {diffs[1]:.1e}")


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table; `vs base` is the stage's median over the model's base median."""
    lines = ["| model | stage | moves | graph ops | runtime Rasters | data-move ms | median ms | p10-p90 ms | vs base "
             "| max rel diff vs ORT |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base: dict[str, float] = {}
    for r in rows:
        base.setdefault(r["model"], r["median"])
        lines.append(f"| {r['model']} | {r['stage']} | {r['moves']} | {r['ops']} | {r['rasters']} | "
                     f"{r['move_ms']:.2f} | "
                     f"{r['median']:.2f} | {r['p10']:.2f}-{r['p90']:.2f} | {r['median'] / base[r['model']]:.2f}x | "
                     f"{r['diff']:.1e} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--small", action="store_true", help="small sizes (a quick check, not the report)")
    parser.add_argument("--models", nargs="*", default=["bert4l", "vit_tiny", "swin"])
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--ab", nargs="+", metavar="PASS", help="A/B: default pipeline vs without these passes")
    args = parser.parse_args(argv)
    builders = models(args.small)
    unknown = [m for m in args.models if m not in builders]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {sorted(builders)}")
    rows: list[dict[str, Any]] = []
    if args.ab:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.models:
                model = builders[name](Path(tmp))
                print(ab_model(name, model, Path(tmp), set(args.ab), args.runs, args.warmup, args.threads), flush=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            rows += bench_model(name, builders[name](Path(tmp)), Path(tmp), args.runs, args.warmup, args.threads)
            print(table([r for r in rows if r["model"] == name]), flush=True)
    text = table(rows)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
