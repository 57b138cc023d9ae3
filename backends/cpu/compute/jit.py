"""Optional JIT-compiled CPU kernels (numba; the ``jit`` extra), for work numpy cannot do in one pass.

Why: a depthwise convolution in numpy is ~2 x kh x kw whole-tensor passes (one multiply and one add per tap), each
streaming the feature map through the caches: 3 GFLOP/s on MobileNetV2, 39% of its run. A compiled loop reads each
input once per tap from L1: 7-17 GFLOP/s on the same shapes. Likewise exp (numpy's float32 exp is slow without
AVX-512), GELU, LayerNorm, the attention's key centring, and the passes that follow a BLAS GEMM (bias + activation +
layout store, bias + residual add). The kernels (``jit_kernels``) are plain Python loops compiled by numba, written
in this package like the numpy ones; they are chosen when a kernel is made (pre-inference), and the profile names
them (``-jit``).

Policy: only ops whose numpy path takes many passes use them. GEMMs are not numba loops (numba does not keep a GEMM's
accumulators in registers: 5-20 GFLOP/s; PERF.md): the convolutions' GEMMs run on ``packed_gemm``, a micro-kernel
written as LLVM IR, which needs llvmlite but not numba, so a session with none of these ops (ResNet-18, a UNet) never
imports numba and keeps its fast createSession. ``MNNPY_JIT=0`` turns both off.

Without numba, or with ``MNNPY_JIT=0`` in the environment, every kernel keeps its numpy path: the engine never
needs numba, and the tests run both paths against the same references (the ``cpu_impl`` fixture).

Cost: the first use in a process imports numba and loads the compiled code from numba's on-disk cache (~1 s; ~2 s
per kernel when it compiles, once per machine and numba version). The CPU backend pays it at session creation,
never inside ``runSession``.
"""

from __future__ import annotations

import os
from types import ModuleType

import numpy as np

_STATE: dict[str, ModuleType | None] = {}


def switched_off() -> bool:
    """Whether ``MNNPY_JIT`` turns the compiled CPU kernels off (numba's and the packed GEMM's)."""
    return os.environ.get("MNNPY_JIT", "1").strip().lower() in ("0", "off", "false", "no")


def enabled() -> bool:
    """Whether JIT kernels may be used: ``MNNPY_JIT`` is not 0/off/false/no and numba imports."""
    return not switched_off() and kernels() is not None


_FAILURE: list[str] = []  # why numba, though installed, could not be used (its ImportError)


def describe() -> str:
    """One line for reports: "numba X.Y" (used where a kernel has a compiled version), "off (MNNPY_JIT=0)", "numba
    not installed", or why an installed numba cannot be used (this imports it)."""
    from importlib import metadata

    try:
        version = metadata.version("numba")
    except metadata.PackageNotFoundError:
        return "numba not installed"
    if switched_off():
        return "off (MNNPY_JIT=0)"
    if kernels() is None:
        return f"numba {version} unusable, numpy kernels ({_FAILURE[0] if _FAILURE else 'import failed'})"
    return f"numba {version}"


def kernels() -> ModuleType | None:
    """The compiled kernels module (``jit_kernels``), or None where numba is not installed or fails to import (an
    installed numba that does not support this numpy, say: the numpy kernels run; ``describe`` says why)."""
    if "kernels" not in _STATE:
        try:
            from . import jit_kernels
        except ImportError as exc:
            _STATE["kernels"] = None
            _FAILURE.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        else:
            _STATE["kernels"] = jit_kernels
    return _STATE["kernels"]


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only, C-contiguous float32 view of ``a`` (the compiled kernels take their inputs as such)."""
    if a.dtype != np.float32 or not a.flags.c_contiguous:
        raise ValueError(f"JIT kernel input must be C-contiguous float32, got {a.dtype} strides {a.strides}")
    view = a.view()
    view.flags.writeable = False
    return view


def exp(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``np.exp(x, out=out)`` for float32, by the compiled loop (``jit_kernels.exp``: ~3.5x numpy's float32 exp on
    an AVX2 host, relative error < 1.2e-7, inf / NaN as numpy) where both arrays are C-contiguous; numpy otherwise.
    Only called where ``enabled()`` was true when the caller was prepared."""
    k = kernels()
    if k is not None and x.dtype == out.dtype == np.float32 and x.flags.c_contiguous and out.flags.c_contiguous:
        if x is out or (x.ctypes.data == out.ctypes.data and x.shape == out.shape):
            k.exp_inplace(out.reshape(-1))
        elif np.shares_memory(x, out):  # a partial overlap: numpy's buffering handles it
            return np.exp(x, out=out)
        else:
            k.exp(x.reshape(-1), out.reshape(-1))
        return out
    return np.exp(x, out=out)


def gelu_erf(x: np.ndarray, out: np.ndarray) -> None:
    """Exact-erf GELU of C-contiguous float32 ``x`` into ``out`` in one compiled pass (``jit_kernels.gelu_erf``)."""
    kernels().gelu_erf(x.reshape(-1), out.reshape(-1))  # type: ignore[union-attr]
