"""BLAS threads for the bench: the CPU backend's helpers (``mnnpy.backends.cpu.compute.blas``) and the core count."""

from __future__ import annotations

import contextlib
import os

from mnnpy.backends.cpu.compute.blas import backend, blas_threads, get_blas_threads, set_blas_threads

__all__ = ["backend", "blas_threads", "cpu_count", "get_blas_threads", "set_blas_threads"]


def cpu_count() -> int:
    """Cores this process may use."""
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
