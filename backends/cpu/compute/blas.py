"""The BLAS thread pool behind numpy, and the CPU kernels' own lanes: ``numThread`` maps here.

BLAS threads: threadpoolctl when installed (an optional dependency), else the OpenBLAS library numpy loaded, found
in ``/proc/self/maps`` (Linux) and called through ctypes (``*openblas_set_num_threads*``). When neither works the
calls are no-ops and ``backend()`` says so. Both paths look the library up once; a set/get then costs microseconds.

Lanes: kernels with independent blocks of work (Winograd tile blocks, im2col tiles, row bands) run them on
``numThread`` Python threads (numpy releases the GIL in ufuncs, copies and matmul) with BLAS at 1 thread;
blocked threads sleep instead of spinning, so an oversubscribed machine degrades gracefully.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy  # noqa: F401 - loads the BLAS library both paths look for

from mnnpy.core import strategy

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


_POOLS: dict[int, ThreadPoolExecutor] = {}
LANE_MIN_FLOPS = strategy.LANE_MIN_FLOPS  # see there; tests may lower it here


def lane_count(threads: int, flops: float) -> int:
    """How many lanes a kernel of ``flops`` work should use with ``threads`` threads (1: run inline)."""
    return strategy.lane_count(threads, flops, LANE_MIN_FLOPS)


def run_lanes(tasks: Sequence[Callable[[], None]], threads: int) -> None:
    """Run a kernel's lanes concurrently (the first on the calling thread), BLAS at 1 thread throughout.

    The lanes are the kernel's parallelism (``threads`` of them at most, chosen at make time). BLAS stays at one
    thread even for a single lane: OpenBLAS workers busy-wait for a while after each threaded call, and doing so
    next to the lanes' threads oversubscribes the cores. Errors are re-raised; the pool size is restored after.
    """
    del threads  # the lane count was fixed when the kernel was made
    want = 1
    previous = get_blas_threads()
    if previous is not None and previous != want:
        set_blas_threads(want)
    try:
        if len(tasks) == 1:
            tasks[0]()
            return
        workers = len(tasks) - 1
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="mnnpy-cpu")
        futures = [pool.submit(task) for task in tasks[1:]]
        try:
            tasks[0]()
        finally:
            for future in futures:
                future.result()
    finally:
        if previous is not None and previous != want:
            set_blas_threads(previous)


def split(items: Sequence[Any], lanes: int) -> list[list[Any]]:
    """Round-robin ``items`` over at most ``lanes`` non-empty lanes."""
    lanes = max(1, min(lanes, len(items)))
    return [list(items[k::lanes]) for k in range(lanes)]
