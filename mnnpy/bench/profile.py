"""Per-command profile of an mnnpy session: time, share of the run, algorithm and GFLOP/s per op.

Timing goes through the session's own run hooks (``Session.run(before, after)``, what
``runSessionWithCallBackInfo`` wraps), which see the command object itself: its type, name, backend and the
algorithm the strategy chose. A session with chain runs (``Scheduler.fused``: they run only without callbacks) is
timed on what a plain run executes instead, each chain run and each other command's ``on_execute`` wrapped in a
timer, so the table shows the chained layout the model really runs. Each command's time is the median over the
profiled runs.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnnpy.core.pipeline import RASTER, op_type_name

CONV_TYPES = (12, 13, 17, 18)  # Convolution, ConvolutionDepthwise, Deconvolution, DeconvolutionDepthwise
MATMUL_TYPES = (39, 106)  # MatMul, BatchMatMul


@dataclass
class OpTime:
    """One command's profile."""

    index: int
    op_type: str
    name: str
    algorithm: str
    ms: float
    flops: float  # floating-point operations (a multiply-add counts 2); 0 when not meaningful

    @property
    def gflops(self) -> float:
        return self.flops / (self.ms * 1e6) if self.ms > 0 and self.flops else 0.0


def command_flops(cmd: Any, descs: list[Any]) -> float:
    """FLOPs of a convolution or matmul command (2 per multiply-add); 0 for other commands."""
    if not cmd.outputs or descs[cmd.outputs[0]] is None:
        return 0.0
    out = descs[cmd.outputs[0]]
    if cmd.op_type in CONV_TYPES and cmd.op is not None and cmd.op.main is not None and cmd.inputs:
        common = cmd.op.main.common
        x = descs[cmd.inputs[0]]
        group = x.shape[1] if cmd.op_type in (13, 18) else max(int(common.group), 1)
        taps = max(int(common.kernelX), 1) * max(int(common.kernelY), 1)
        if cmd.op_type in (17, 18):
            return 2.0 * x.size * (out.shape[1] // group) * taps
        return 2.0 * out.size * (x.shape[1] // group) * taps
    if cmd.op_type in MATMUL_TYPES and cmd.inputs:
        a = descs[cmd.inputs[0]].shape
        trans_a = bool(getattr(cmd.op.main, "transposeA", False)) if cmd.op is not None and cmd.op.main else False
        inner = a[-2] if trans_a and len(a) > 1 else a[-1]
        return 2.0 * out.size * inner
    return 0.0


def _noop() -> None:
    return None


def run_overhead(session: Any, runs: int = 10) -> tuple[float, float]:
    """Median ms of a bare ``session.run()``, and the dispatch cost alone in us per command.

    Dispatch is measured directly: every execution's ``on_execute`` is swapped for a no-op (on the instance, then
    restored), so what remains is the session's own loop and bookkeeping.
    """
    clock = time.perf_counter
    times = []
    for _ in range(max(runs, 1)):
        t0 = clock()
        session.run()
        times.append((clock() - t0) * 1e3)
    executions = []
    for cmd in session.commands:
        try:
            cmd.execution.on_execute = _noop
        except AttributeError:  # an execution with __slots__ keeps its real work (counted as dispatch)
            continue
        executions.append(cmd.execution)
    chains = _chain_runs(session)
    saved = dict(chains)
    chains.clear()  # chained runs do real work: off while the no-ops run
    try:
        empty = []
        with _groups_off(session):
            for _ in range(max(runs, 1) * 10):
                t0 = clock()
                session.run()
                empty.append(clock() - t0)
    finally:
        chains.update(saved)
        for ex in executions:
            del ex.on_execute
    return float(np.median(times)), 1e6 * min(empty) / max(len(session.commands), 1)


@contextlib.contextmanager
def _groups_off(session: Any) -> Iterator[None]:
    """Without the session's lane groups (``Scheduler.groups``: several commands' work in one run) meanwhile, so
    that each command runs, and is timed, alone."""
    scheduler = getattr(session, "scheduler", None)
    groups = getattr(scheduler, "groups", None)
    if not groups:
        yield
        return
    scheduler.groups = {}
    try:
        yield
    finally:
        scheduler.groups = groups


def _chain_runs(session: Any) -> dict:
    """The session's callback-free chain runs (``Scheduler.fused``, keyed by ``id(command)``), {} without any."""
    fused = getattr(getattr(session, "scheduler", None), "fused", None)
    return fused if isinstance(fused, dict) else {}


def profile_session(session: Any, runs: int = 10, warmup: int = 2) -> list[OpTime]:
    """Time every command of a prepared session (inputs already set).

    Args:
        session: a ``mnnpy.core.session.Session``.
        runs: profiled runs; each command reports its median.
        warmup: unprofiled runs first.

    Returns:
        One entry per command, in run order.
    """
    for _ in range(max(warmup, 0)):
        session.run()
    clock = time.perf_counter
    commands = list(session.commands)
    position = {id(c): k for k, c in enumerate(commands)}
    samples: dict[int, list[float]] = defaultdict(list)
    start = [0.0]

    def before(cmd: Any) -> bool:
        start[0] = clock()
        return True

    def after(cmd: Any) -> bool:
        samples[position[id(cmd)]].append(clock() - start[0])
        return True

    chains = _chain_runs(session)
    with _groups_off(session):
        if chains:  # time what a plain run runs: the chains, and every other command's on_execute
            _profile_chained(session, commands, chains, samples, max(runs, 1))
        else:
            for _ in range(max(runs, 1)):
                session.run(before, after)
    descs = session.graph.descs
    result = []
    for k, cmd in enumerate(commands):
        kind = "Raster" if cmd.op_type == RASTER else op_type_name(cmd.op_type)
        algo = str(cmd.info.get("algorithm") or "")
        unit = cmd.info.get("unit")
        if unit:
            algo = f"{algo}:{unit}"
        if id(cmd) in chains:
            algo += "+"  # part of a chain run (see profile_table)
        ms = float(np.median(samples[k])) * 1e3 if samples[k] else 0.0
        result.append(OpTime(k, kind, cmd.name, algo, ms, command_flops(cmd, descs)))
    return result


def _profile_chained(session: Any, commands: list, chains: dict, samples: dict[int, list[float]],
                     runs: int) -> None:
    """Per-command times of callback-free runs (a session with chain runs: a run with callbacks would time the
    unchained layout instead): each chain run and each other command's ``on_execute`` wrapped in a timer."""
    clock = time.perf_counter

    def timed(fn: Any, k: int) -> Any:
        def run() -> None:
            t0 = clock()
            fn()
            samples[k].append(clock() - t0)
        return run

    saved = dict(chains)
    wrapped = []
    try:
        for k, cmd in enumerate(commands):
            if id(cmd) in chains:
                chains[id(cmd)] = timed(saved[id(cmd)], k)
            else:
                with contextlib.suppress(AttributeError):  # __slots__: untimed
                    cmd.execution.on_execute = timed(cmd.execution.on_execute, k)
                    wrapped.append(cmd.execution)
        for _ in range(runs):
            session.run()
    finally:
        chains.update(saved)
        for ex in wrapped:
            del ex.on_execute


def profile_table(ops: list[OpTime], top: int | None = None, by_type: bool = True,
                  overhead: tuple[float, float] | None = None) -> str:
    """The per-op table (slowest first), a per-type summary and, when given, the run's unaccounted time."""
    total = sum(o.ms for o in ops) or 1.0
    rows = sorted(ops, key=lambda o: -o.ms)[: top or len(ops)]
    chained = sum(o.algorithm.endswith("+") for o in ops)
    note = f"; algorithm+: {chained} commands run as chains (several ops' work in one layout)" if chained else ""
    lines = [f"per-op profile: {len(ops)} commands, {total:.2f} ms summed (median per op){note}",
             f"{'#':>4} {'type':<22} {'name':<34} {'algorithm':<18} {'ms':>8} {'%':>6} {'GFLOP/s':>8}"]
    for o in rows:
        rate = f"{o.gflops:8.1f}" if o.flops else " " * 8
        lines.append(f"{o.index:>4} {o.op_type:<22} {o.name[:34]:<34} {o.algorithm[:18]:<18} {o.ms:8.3f} "
                     f"{100 * o.ms / total:6.1f} {rate}".rstrip())
    if by_type:
        groups: dict[str, list[OpTime]] = defaultdict(list)
        for o in ops:
            groups[f"{o.op_type} {o.algorithm}".strip()].append(o)
        lines.append(f"by type/algorithm: {'count':>5} {'ms':>8} {'%':>6} {'GFLOP/s':>8}")
        for key, items in sorted(groups.items(), key=lambda kv: -sum(o.ms for o in kv[1])):
            ms = sum(o.ms for o in items)
            flops = sum(o.flops for o in items)
            rate = f"{flops / (ms * 1e6):8.1f}" if flops and ms else " " * 8
            lines.append(f"  {key[:30]:<30} {len(items):>5} {ms:8.3f} {100 * ms / total:6.1f} {rate}".rstrip())
    if overhead is not None:
        whole, per = overhead
        lines.append(f"bare run {whole:.2f} ms (median); dispatch {per:.2f} us per command "
                     f"({per * len(ops) / 1e3:.3f} ms per run, measured with every on_execute a no-op)")
    return "\n".join(lines)


def write_chart(ops: list[OpTime], path: str | Path, top: int = 20, title: str = "") -> str | None:
    """A horizontal bar chart of the slowest ops as PNG (matplotlib, optional); returns why not when it cannot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no chart written"
    rows = sorted(ops, key=lambda o: -o.ms)[:top][::-1]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.2))
    ax.barh([f"{o.op_type} {o.algorithm} {o.name[:24]}" for o in rows], [o.ms for o in rows])
    ax.set_xlabel("ms (median per run)")
    ax.set_title(title or "mnnpy per-op profile")
    fig.tight_layout()
    fig.savefig(str(path), dpi=100)
    plt.close(fig)
    return None
