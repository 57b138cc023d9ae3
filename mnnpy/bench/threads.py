"""BLAS threads for the bench: the CPU backend's helpers (``mnnpy.backends.cpu.compute.blas``) and the core count."""

from __future__ import annotations

import contextlib
import functools
import os
import platform

import numpy as np

from mnnpy.backends.cpu.compute.blas import (
    backend,
    blas_threads,
    get_blas_threads,
    openblas_functions,
    set_blas_threads,
)

__all__ = ["backend", "blas_core", "blas_threads", "cpu_count", "cpu_name", "get_blas_threads", "set_blas_threads"]


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


# the widest vector extension numpy found at run time, in the order a name is checked (x86 then Arm)
_SIMD = (("AVX512F", "AVX-512"), ("AVX2", "AVX2"), ("AVX", "AVX"), ("SSE42", "SSE4.2"), ("SVE", "SVE"),
         ("ASIMD", "NEON"), ("NEON", "NEON"))


@functools.cache
def cpu_name() -> str:
    """The CPU model (and x86 family) and its widest SIMD extension, e.g. "AMD EPYC (family 25), AVX2".

    Printed by the bench because the figures depend on it beyond the BLAS kernels: numpy's float32 exp and tanh cost
    ~10x more on an AVX2 CPU than with AVX-512 (tools/PERF.md, sixth session), while the peers bring their own
    vectorised loops. Read once per process.
    """
    model, family = "", ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as info:
        for line in info:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and not model:
                model = value.strip()
            elif key == "cpu family" and not family:
                family = value.strip()
            if model and family:
                break
    features = getattr(getattr(np, "_core", None), "_multiarray_umath", None)
    found = getattr(features, "__cpu_features__", {}) or {}
    simd = next((name for key, name in _SIMD if found.get(key)), "no SIMD found")
    head = model or platform.processor() or platform.machine()
    return f"{head}{f' (family {family})' if family else ''}, {simd}"
