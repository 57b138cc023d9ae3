"""BLAS threads for the bench: the CPU backend's helpers (``mnnpy.backends.cpu.compute.blas``) and the core count."""

from __future__ import annotations

import contextlib
import os

from mnnpy.backends.cpu.compute.blas import (
    backend,
    blas_threads,
    get_blas_threads,
    openblas_functions,
    set_blas_threads,
)

__all__ = ["backend", "blas_threads", "cpu_count", "get_blas_threads", "set_blas_threads"]


def cpu_count() -> int:
    """Cores this process may use."""
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_CORENAME = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
             "openblas_get_corename")


def blas_core() -> str:
    """The kernel family numpy's OpenBLAS runs ("Haswell", "SkylakeX", ...), and whether OPENBLAS_CORETYPE pins it.

    The bench prints this because it decides the GEMM speed: an AVX-512 CPU pinned to Haswell's AVX2 kernels (an
    environment setting some machines carry) runs sgemm at about half its speed, while onnxruntime and official MNN
    pick their own kernels. mnnpy reports the setting; it never changes it.
    """
    import ctypes

    found = openblas_functions(_CORENAME)
    name = "unknown"
    if found is not None:
        found[0].restype = ctypes.c_char_p
        name = (found[0]() or b"?").decode(errors="replace")
    pinned = os.environ.get("OPENBLAS_CORETYPE")
    return f"OpenBLAS core {name}" + (f" (pinned by OPENBLAS_CORETYPE={pinned})" if pinned else "")
