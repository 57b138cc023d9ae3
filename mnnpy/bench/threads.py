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


def backend() -> str:
    """How BLAS threads are controlled here: "threadpoolctl", "openblas-ctypes" or "none"."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return "openblas-ctypes" if _openblas() is not None else "none"
    return "threadpoolctl"


def get_blas_threads() -> int | None:
    """The BLAS pool size now (None when it cannot be read)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        lib = _openblas()
        return int(lib[1]()) if lib is not None else None
    sizes = [int(info["num_threads"]) for info in threadpool_info() if info.get("user_api") == "blas"]
    return sizes[0] if sizes else None


def set_blas_threads(n: int) -> int | None:
    """Set the BLAS pool to ``n`` threads; returns the previous size (None when unknown or not controllable)."""
    n = max(int(n), 1)
    previous = get_blas_threads()
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        lib = _openblas()
        if lib is not None:
            lib[0](n)
        return previous
    ThreadpoolController().limit(limits=n, user_api="blas")
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
