"""The BLAS thread pool behind numpy: ``numThread`` maps here (threadpoolctl when installed, else ctypes on OpenBLAS).

threadpoolctl is an optional dependency. Without it, the OpenBLAS library numpy loaded is found in
``/proc/self/maps`` (Linux) and its ``*openblas_set_num_threads*`` entry point is called directly. When neither
works, the calls are no-ops and ``backend()`` says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from typing import Any

import numpy  # noqa: F401 - loads the BLAS library both paths look for

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_state: dict[str, Any] = {}


def _openblas() -> tuple[Any, Any] | None:
    """(setter, getter) of the OpenBLAS numpy loaded, found by ctypes; None when there is none."""
    if "ctypes" in _state:
        return _state["ctypes"]
    found = None
    with contextlib.suppress(OSError):
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
        for path in paths:
            with contextlib.suppress(OSError):
                lib = ctypes.CDLL(path)
                setter = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
                getter = next((getattr(lib, s) for s in _GETTERS if hasattr(lib, s)), None)
                if setter is not None and getter is not None:
                    getter.restype = ctypes.c_int
                    found = (setter, getter)
                    break
    _state["ctypes"] = found
    return found


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


def cpu_count() -> int:
    """Cores this process may use."""
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
