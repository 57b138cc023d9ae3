"""Helpers shared by the `mnnpy.numpy` modules: operand conversion and axis handling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import shape_ops as es
from mnnpy.expr.enums import dtype as edtype
from mnnpy.expr.enums import normalise_array, to_np_dtype
from mnnpy.expr.var import Var, const_of, to_var

F32 = np.dtype(np.float32)


def var(x: Any, dtype: Any = None) -> Var:
    """A Var for array-like input (lists and numpy arrays become constants; float64 runs as float32)."""
    v = x if isinstance(x, Var) else const_of(normalise_array(x))
    if dtype is not None:
        want = to_np_dtype(dtype)
        want = np.dtype(np.int32) if want == np.int64 else np.dtype(np.float32) if want == np.float64 else want
        if v.np_dtype != want:
            v = em.cast(v, want)
    return v


def fvar(x: Any) -> Var:
    """A float Var (integers cast to float32, as numpy's float functions promote)."""
    v = var(x)
    return v if v.np_dtype.kind == "f" else em.cast(v, edtype.float)


def pair(x: Any, y: Any) -> tuple[Var, Var]:
    """Two operands with a common dtype (Python scalars adopt the other operand's dtype)."""
    if not isinstance(x, (Var, int, float, bool, np.generic)):
        x = var(x)
    if not isinstance(y, (Var, int, float, bool, np.generic)):
        y = var(y)
    return em._pair(x, y)


def axes_of(axis: Any, ndim: int) -> list[int]:
    """Axis argument as a sorted list of non-negative axes (None = all)."""
    if axis is None:
        return list(range(ndim))
    items = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return sorted(int(a) + ndim if int(a) < 0 else int(a) for a in items)


def move_axis_last(v: Var, axis: int) -> tuple[Var, list[int] | None]:
    """Transpose `axis` to the end; returns the Var and the inverse permutation (None if unchanged)."""
    rank = v.ndim
    ax = axis + rank if axis < 0 else axis
    if ax == rank - 1:
        return v, None
    perm = [i for i in range(rank) if i != ax] + [ax]
    return es.transpose(v, perm), [int(i) for i in np.argsort(perm)]


def shape_of(shape: Any) -> list[int]:
    """An int or a sequence of ints as a shape list."""
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [int(d) for d in shape]


def isnan(x: Var) -> Var:
    """x != x (int32 0/1), through the core."""
    return em.not_equal(x, x)


def to_var_like(x: Any, like: Var) -> Var:
    """Scalars adopt `like`'s dtype; everything else as `var`."""
    if isinstance(x, (int, float, bool, np.generic)):
        return to_var(x, like)
    return var(x)


def seq(values: Sequence[Any]) -> list[Var]:
    """Several array-likes as Vars with a common dtype (float wins)."""
    vs = [var(v) for v in values]
    if any(v.np_dtype.kind == "f" for v in vs):
        vs = [v if v.np_dtype.kind == "f" else em.cast(v, edtype.float) for v in vs]
    return vs
