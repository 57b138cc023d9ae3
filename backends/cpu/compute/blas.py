"""The BLAS thread pool behind numpy, and the CPU kernels' own lanes: ``numThread`` maps here.

BLAS threads: threadpoolctl when installed (an optional dependency), else the OpenBLAS library numpy loaded, found
in ``/proc/self/maps`` (Linux) and called through ctypes (``*openblas_set_num_threads*``). When neither works the
calls are no-ops and ``backend()`` says so. Both paths look the library up once; a set/get then costs microseconds.

Lanes: kernels with independent blocks of work (Winograd tile blocks, im2col tiles, row bands) run them on
``numThread`` lanes with BLAS at 1 thread. The caller is lane 0; the others are Python threads (numpy releases the
GIL in ufuncs, copies and matmul), or, where the kernel passes ``shared=True`` (its hand-offs touch only the arena
and the shared scratch pool) and the session has them, forked worker processes (``procs.ProcessLanes``): no GIL
between the lanes, and hand-offs polled over pipes instead of waking a sleeping thread.

Measured on the 2-vCPU KVM guest (ResNet-18, 18 hand-offs per run): an idle vCPU halts at once (cpuidle haltpoll
with guest_halt_poll_ns 0), so each thread hand-off costs a ~35 us wake of the lane and often a ~22 us wake of the
caller at the end, and a lane that finishes a numpy call while the other holds the GIL sleeps again. Tried and
dropped: lanes spinning in pthread_spin_lock between hand-offs (GIL-free; 1.5-2x slower whenever another process
took a core, as the spinner then shares the caller's core) and pinning lanes to the other CPU (a 64ch 56² Winograd
layer 0.64 -> 0.47 ms alone, no gain on the whole model, 1.3x slower under load). The worker processes poll only
for ``procs.WORKER_SPIN_S`` after a task (tools/PERF.md, "2 threads").
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy  # noqa: F401 - loads the BLAS library both paths look for

from mnnpy.core import strategy

from . import procs

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_state: dict[str, Any] = {}


def openblas_functions(*candidates: Sequence[str]) -> list[Any] | None:
    """One function per candidate list (the first name the library exports) from the OpenBLAS numpy loaded, found
    in /proc/self/maps and opened with ctypes; None when no loaded library has them all."""
    with contextlib.suppress(OSError):
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
        for path in paths:
            with contextlib.suppress(OSError):
                lib = ctypes.CDLL(path)
                found = [next((getattr(lib, s) for s in names if hasattr(lib, s)), None) for names in candidates]
                if all(f is not None for f in found):
                    return found
    return None


def _openblas() -> tuple[Any, Any] | None:
    """(setter, getter) of the OpenBLAS numpy loaded, found by ctypes; None when there is none."""
    if "ctypes" not in _state:
        found = openblas_functions(_SETTERS, _GETTERS)
        if found is not None:
            found[1].restype = ctypes.c_int
        _state["ctypes"] = tuple(found) if found is not None else None
    return _state["ctypes"]


def _controllers() -> list[Any] | None:
    """threadpoolctl's BLAS library controllers, built once (None without threadpoolctl)."""
    if "tpc" not in _state:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _state["tpc"] = None
        else:
            _state["tpc"] = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _state["tpc"]


def backend() -> str:
    """How BLAS threads are controlled here: "threadpoolctl", "openblas-ctypes" or "none"."""
    if _controllers():
        return "threadpoolctl"
    return "openblas-ctypes" if _openblas() is not None else "none"


def get_blas_threads() -> int | None:
    """The BLAS pool size now (None when it cannot be read)."""
    libs = _controllers()
    if libs:
        return int(libs[0].get_num_threads())
    lib = _openblas()
    return int(lib[1]()) if lib is not None else None


def set_blas_threads(n: int) -> int | None:
    """Set the BLAS pool to ``n`` threads; returns the previous size (None when unknown or not controllable).

    Cheap after the first call (the libraries are looked up once), so a backend may call it around every run.
    """
    n = max(int(n), 1)
    previous = get_blas_threads()
    libs = _controllers()
    if libs:
        for lib in libs:
            lib.set_num_threads(n)
        return previous
    lib = _openblas()
    if lib is not None:
        lib[0](n)
    return previous


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Run the body with ``n`` BLAS threads (None: leave the pool alone), then restore the previous size."""
    if n is None:
        yield
        return
    previous = set_blas_threads(n)
    try:
        yield
    finally:
        if previous is not None:
            set_blas_threads(previous)


LANE_MIN_FLOPS = strategy.LANE_MIN_FLOPS  # see there; tests may lower it here


def lane_count(threads: int, flops: float) -> int:
    """How many lanes a kernel of ``flops`` work should use with ``threads`` threads (1: run inline)."""
    return strategy.lane_count(threads, flops, LANE_MIN_FLOPS)


class _Lane(threading.Thread):
    """A persistent lane worker: sleeps on a raw lock, runs the task it is handed, releases ``done``.

    Two raw locks per hand-off (one futex wake each way) instead of a ThreadPoolExecutor's queue, Future and
    condition variable: an empty 2-lane hand-off 30-40 -> 15-20 us here (every GIL hand-over on this VM costs a
    thread wake-up, so fewer Python objects between the calls matter).
    """

    def __init__(self) -> None:
        super().__init__(name="mnnpy-cpu-lane", daemon=True)
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.task: Callable[[], None] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        while True:
            self.go.acquire()
            try:
                self.task()  # type: ignore[misc]
            except BaseException as exc:  # handed back to the caller by run_lanes
                self.error = exc
            self.task = None
            self.done.release()


_LANES: list[_Lane] = []
_LANES_BUSY = threading.Lock()  # one caller at a time drives the lanes; others (or nested calls) run inline


def _reset_lanes() -> None:
    """After fork: the child has none of the parent's lane threads."""
    global _LANES_BUSY
    _LANES.clear()
    _LANES_BUSY = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lanes)


def run_lanes(tasks: Sequence[Callable[[], None]], threads: int, shared: bool = False) -> None:
    """Run a kernel's lanes concurrently (the first on the calling thread), BLAS at 1 thread throughout.

    The lanes are the kernel's parallelism (``threads`` of them at most, chosen at make time), run on persistent
    lane threads. BLAS stays at one thread even for a single lane: OpenBLAS workers busy-wait for a while after each
    threaded call, and doing so next to the lanes' threads oversubscribes the cores. While another caller (another
    session's thread, or a lane itself) drives the lanes, the tasks run one after another on the calling thread
    (they are independent). Errors are re-raised (the first); the pool size is restored after.

    ``shared``: the tasks exchange data only through shared memory (the arena, the conv scratch pool), so a session
    with worker-process lanes (`procs`) may run them in its workers.
    """
    del threads  # the lane count was fixed when the kernel was made
    want = 1
    previous = get_blas_threads()
    if previous is not None and previous != want:
        set_blas_threads(want)
    try:
        if shared and len(tasks) > 1:
            lanes = procs.active()
            if lanes is not None and lanes.run(tasks):
                return
        if len(tasks) == 1 or not _LANES_BUSY.acquire(blocking=False):
            for task in tasks:
                task()
            return
        try:
            _drive(tasks)
        finally:
            _LANES_BUSY.release()
    finally:
        if previous is not None and previous != want:
            set_blas_threads(previous)


def run_phases(phases: Sequence[Sequence[Callable[[], None]]], threads: int, shared: bool = False) -> None:
    """Run ``phases`` in order, each a list of lane tasks (as many in each): a phase's tasks may read what any lane
    wrote in the phases before. With worker-process lanes (``shared``, x86), one hand-off whose lanes meet at a
    shared-memory barrier between the phases (``procs.phased``: no worker answer, caller's Python and next message
    between them); else each phase is its own ``run_lanes``."""
    lanes = procs.active() if shared and len(phases) > 1 and len(phases[0]) > 1 and procs.phased_handoffs() \
        else None
    if lanes is None:
        for phase in phases:
            run_lanes(phase, threads, shared)
        return
    n = len(phases[0])
    run_phased(lanes, [partial(procs.phased, lanes.barrier, j, n, *(phase[j] for phase in phases))
                       for j in range(n)], phases)


def run_phased(lanes: procs.ProcessLanes, tasks: list[Callable[[], None]],
               phases: Sequence[Sequence[Callable[[], None]]]) -> None:
    """``tasks`` (``procs.phased`` lanes over ``phases``) as one worker-process hand-off, BLAS at 1 thread; on the
    hand-off's first run (recorded, not dispatched) the phases in turn on thread lanes. A worker lost while the
    tasks ran raises: a later phase may have overwritten what an earlier one read, so they cannot run again."""
    previous, failed = get_blas_threads(), lanes.failure
    if previous is not None and previous != 1:
        set_blas_threads(1)
    try:
        lanes.barrier.reset(len(tasks))
        if lanes.run(tasks):
            return
    finally:
        if previous is not None and previous != 1:
            set_blas_threads(previous)
    if failed is None and lanes.failure is not None and lanes.cut_short:  # (given up in this very hand-off)
        raise RuntimeError(f"{lanes.failure} during a phased hand-off: this run's outputs are not valid (the "
                           "session's later runs use thread lanes)")
    for phase in phases:
        run_lanes(phase, 0, False)


def _drive(tasks: Sequence[Callable[[], None]]) -> None:
    """Hand tasks[1:] to lane threads, run tasks[0] here, wait for all; re-raise the first error."""
    while len(_LANES) < len(tasks) - 1:
        lane = _Lane()
        lane.start()
        _LANES.append(lane)
    lanes = _LANES[: len(tasks) - 1]
    for lane, task in zip(lanes, tasks[1:], strict=True):
        lane.task = task
        lane.go.release()
    error: BaseException | None = None
    try:
        tasks[0]()
    except BaseException as exc:
        error = exc
    for lane in lanes:
        while True:  # a signal (Ctrl-C) while waiting: keep waiting, so that no lane is left running a stale task
            try:
                lane.done.acquire()
                break
            except BaseException as exc:
                error = error or exc
        if lane.error is not None:
            error, lane.error = error or lane.error, None
    if error is not None:
        raise error


def new_claim() -> Callable[[], int]:
    """A fresh work counter for one hand-off (0, 1, 2, ... across its lanes): the session's `procs.SharedClaim` when
    worker-process lanes may run it, else an ``itertools.count`` (atomic under the GIL)."""
    lanes = procs.active()
    return lanes.claim.reset() if lanes is not None else itertools.count().__next__


def split(items: Sequence[Any], lanes: int) -> list[list[Any]]:
    """Round-robin ``items`` over at most ``lanes`` non-empty lanes."""
    lanes = max(1, min(lanes, len(items)))
    return [list(items[k::lanes]) for k in range(lanes)]
