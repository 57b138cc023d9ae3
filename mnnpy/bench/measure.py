"""Interleaved timing of several engines (A B C A B C ...) after warm-up, statistics and the text report.

Interleaving spreads slow drifts of the machine (frequency, other processes, caches) evenly over the engines, so
the ratios between them are steadier than the absolute times.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .engines import Engine, Missing


@dataclass
class Stats:
    """Timings of one engine, in milliseconds."""

    name: str
    times_ms: list[float]
    load_ms: float
    session_ms: float

    @property
    def median(self) -> float:
        return float(np.median(self.times_ms))

    @property
    def p10(self) -> float:
        return float(np.percentile(self.times_ms, 10))

    @property
    def p90(self) -> float:
        return float(np.percentile(self.times_ms, 90))


def interleaved(engines: list[Engine], runs: int, warmup: int) -> list[Stats]:
    """Warm every engine up, then time ``runs`` rounds of one run per engine in turn.

    Args:
        engines: engines with their inputs already fed.
        runs: timed rounds (at least 1).
        warmup: untimed rounds first.

    Returns:
        One ``Stats`` per engine, in the given order.
    """
    for _ in range(max(warmup, 0)):
        for engine in engines:
            engine.reset()
            engine.run()
    times: list[list[float]] = [[] for _ in engines]
    clock = time.perf_counter
    for _ in range(max(runs, 1)):
        for k, engine in enumerate(engines):
            engine.reset()
            t0 = clock()
            engine.run()
            times[k].append((clock() - t0) * 1e3)
    return [Stats(e.name, t, e.load_ms, e.session_ms) for e, t in zip(engines, times, strict=True)]


def agreement(engines: list[Engine]) -> dict[str, float]:
    """Max |difference| of each peer's first output from mnnpy's (same inputs), relative to mnnpy's max |value|."""
    ref = next((e for e in engines if e.name == "mnnpy"), None)
    if ref is None:
        return {}
    for engine in engines:
        engine.reset()
        engine.run()
    base = ref.output()
    scale = max(float(np.abs(base).max()), 1e-12) if base.size else 1.0
    diffs = {}
    for engine in engines:
        if engine is ref:
            continue
        try:
            other = engine.output().reshape(base.shape)
        except ValueError:
            diffs[engine.name] = float("nan")
            continue
        diffs[engine.name] = float(np.abs(other - base).max()) / scale if base.size else 0.0
    return diffs


def report(title: str, stats: list[Stats], missing: list[Missing], diffs: dict[str, float],
           convert_s: dict[str, float]) -> str:
    """The bench table: median/p10/p90 ms, ratio mnnpy/peer, pre-inference (load, createSession), conversion."""
    lines = [title, f"{'engine':<8} {'median ms':>10} {'p10':>9} {'p90':>9} {'mnnpy/x':>8}  "
                    f"{'load ms':>8} {'session ms':>10} {'convert s':>9}  {'max rel diff':>12}"]
    ours = next((s for s in stats if s.name == "mnnpy"), None)
    for s in stats:
        ratio = f"{ours.median / s.median:8.2f}" if ours is not None and s is not ours and s.median > 0 else " " * 8
        conv = convert_s.get(s.name)
        conv_text = f"{conv:9.2f}" if conv is not None else " " * 9
        diff = diffs.get(s.name)
        diff_text = f"{diff:12.2e}" if diff is not None else " " * 12
        lines.append(f"{s.name:<8} {s.median:10.2f} {s.p10:9.2f} {s.p90:9.2f} {ratio}  {s.load_ms:8.1f} "
                     f"{s.session_ms:10.1f} {conv_text}  {diff_text}".rstrip())
    for m in missing:
        lines.append(f"{m.name:<8} missing: {m.reason}")
    if ours is not None:
        peers = [s for s in stats if s is not ours]
        if peers:
            lines.append("ratios (mnnpy median / peer median, < 1 = mnnpy faster): "
                         + ", ".join(f"{s.name} {ours.median / s.median:.2f}x" for s in peers))
            lines.append("pre-inference (load + createSession) ms: "
                         + ", ".join(f"{s.name} {s.load_ms + s.session_ms:.1f}" for s in stats))
    return "\n".join(lines)


def _speedups(counts: list[tuple[int, list[Stats]]]) -> list[tuple[str, int, int, float, float]]:
    """(engine, base count, count, median-based speed-up, paired speed-up) for every engine and count but the first.

    The paired figure is the median over rounds of (time at the base count / time at this count) within a round:
    both runs of a round are a few milliseconds apart, so a drift of the machine cancels in each ratio.
    """
    base_n, base = counts[0]
    rows = []
    for n, stats in counts[1:]:
        for s in stats:
            ref = next((b for b in base if b.name == s.name), None)
            if ref is None or not s.times_ms or s.median <= 0:
                continue
            paired = float(np.median(np.asarray(ref.times_ms) / np.asarray(s.times_ms)))
            rows.append((s.name, base_n, n, ref.median / s.median, paired))
    return rows


def scaling(counts: list[tuple[int, list[Stats]]]) -> str:
    """The thread-scaling table of ``mnnpy bench --threads 1,2``: speed-up of each engine over its first count."""
    lines = ["thread scaling (same interleaved rounds; speed-up = time at the first count / time at this count):",
             f"{'engine':<8} {'threads':>9} {'by medians':>11} {'paired':>8}"]
    for name, base_n, n, by_median, paired in _speedups(counts):
        lines.append(f"{name:<8} {f'{base_n} -> {n}':>9} {by_median:10.2f}x {paired:7.2f}x")
    return "\n".join(lines)


def scaling_record(counts: list[tuple[int, list[Stats]]]) -> list[dict[str, Any]]:
    """The scaling rows as JSON-ready dicts."""
    return [{"engine": name, "from_threads": base_n, "threads": n, "speedup_medians": by_median,
             "speedup_paired": paired} for name, base_n, n, by_median, paired in _speedups(counts)]


def to_record(meta: dict[str, Any], stats: list[Stats], missing: list[Missing], diffs: dict[str, float],
              ops: list[Any]) -> dict[str, Any]:
    """The bench figures as a JSON-ready dict (``mnnpy bench --json``)."""
    engines = {s.name: {"median_ms": s.median, "p10_ms": s.p10, "p90_ms": s.p90, "load_ms": s.load_ms,
                        "session_ms": s.session_ms, "max_rel_diff": diffs.get(s.name)} for s in stats}
    return {**meta, "engines": engines, "missing": {m.name: m.reason for m in missing}, "ops": [vars(o) for o in ops]}
