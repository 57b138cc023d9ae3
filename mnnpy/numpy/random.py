"""`mnnpy.numpy.random`: random constants made on the host (MNN: `MNN.numpy.random`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr.enums import to_np_dtype
from mnnpy.expr.var import Var, const_of

_RNG = np.random.default_rng()


def _shape(args: tuple[Any, ...]) -> list[int]:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return [int(d) for d in args[0]]
    return [int(d) for d in args]


def seed(value: int) -> None:
    """Reseed the generator."""
    global _RNG
    _RNG = np.random.default_rng(int(value))


def rand(*args: Any) -> Var:
    """Uniform [0, 1) float32 of the given shape (MNN: `numpy.random.rand`)."""
    return const_of(_RNG.random(_shape(args), dtype=np.float32))


def randn(*args: Any) -> Var:
    """Standard normal float32 (MNN: `numpy.random.randn`)."""
    return const_of(_RNG.standard_normal(_shape(args), dtype=np.float32))


def random(shape: Any) -> Var:
    """Uniform [0, 1) float32 (MNN: `numpy.random.random`)."""
    return const_of(_RNG.random(_shape((shape,)) if not isinstance(shape, int) else [shape], dtype=np.float32))


def randint(low: int, high: int | None = None, size: Any = None, dtype: Any = None) -> Var:
    """Integers in [low, high) (MNN: `numpy.random.randint`)."""
    if high is None:
        low, high = 0, low
    shape = [] if size is None else [int(size)] if isinstance(size, int) else [int(d) for d in size]
    dt = np.dtype(np.int32) if dtype is None else to_np_dtype(dtype)
    return const_of(_RNG.integers(low, high, size=shape).astype(dt))
