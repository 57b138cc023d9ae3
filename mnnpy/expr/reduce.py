"""Reductions, arg-reductions, scans and sorting of `MNN.expr` (MNN: `_ReduceSum`, `_ArgMax`, `_CumSum`, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr.var import Var, apply, const_of, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter
I32 = np.dtype(np.int32)


def _axes(axis: Any) -> list[int]:
    if axis is None:
        return []
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    return [int(a) for a in axis]


def reduction(x: Any, kind: int, axis: Any = None, keepdims: bool = False) -> Var:
    """Reduction op of MNN's ReductionType `kind` over `axis` (empty = all axes)."""
    v = to_var(x)
    p = fb.ReductionParamT()
    p.operation = kind
    p.dim = _axes(axis)
    p.keepDims = bool(keepdims)
    p.dType = 1 if v.np_dtype.kind == "f" else 3
    return apply(OT.Reduction, [v], PT.ReductionParam, p)


def reduce_sum(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Sum over axes (MNN: `expr.reduce_sum`)."""
    return reduction(x, 0, axis, keepdims)


def reduce_mean(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Mean over axes (MNN: `expr.reduce_mean`)."""
    v = to_var(x)
    if v.np_dtype.kind != "f":
        v = m.cast(v, np.float32)
    return reduction(v, 3, axis, keepdims)


def reduce_max(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Maximum over axes (MNN: `expr.reduce_max`)."""
    return reduction(x, 4, axis, keepdims)


def reduce_min(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Minimum over axes (MNN: `expr.reduce_min`)."""
    return reduction(x, 5, axis, keepdims)


def reduce_prod(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Product over axes (MNN: `expr.reduce_prod`)."""
    return reduction(x, 6, axis, keepdims)


def reduce_any(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """Any non-zero over axes, as int32 0/1 (MNN: `expr.reduce_any`)."""
    return reduction(m.not_equal(x, 0), 7, axis, keepdims)


def reduce_all(x: Any, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Var:
    """All non-zero over axes, as int32 0/1 (MNN: `expr.reduce_all`)."""
    return reduction(m.not_equal(x, 0), 8, axis, keepdims)


def _arg(x: Any, axis: int, op_type: int) -> Var:
    p = fb.ArgMaxT()
    p.axis = int(axis)
    p.topK = 1
    return apply(op_type, [to_var(x)], PT.ArgMax, p, dtypes=[I32])


def argmax(x: Any, axis: int = 0) -> Var:
    """Index of the maximum along an axis (MNN: `expr.argmax`)."""
    return _arg(x, axis, OT.ArgMax)


def argmin(x: Any, axis: int = 0) -> Var:
    """Index of the minimum along an axis (MNN: `expr.argmin`)."""
    return _arg(x, axis, OT.ArgMin)


def cumsum(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Var:
    """Cumulative sum along an axis (MNN: `expr.cumsum`)."""
    p = fb.CumSumT()
    p.exclusive, p.reverse = bool(exclusive), bool(reverse)
    return apply(OT.CumSum, [to_var(x), const_of(np.array(int(axis), np.int32))], PT.CumSum, p)


def cumprod(x: Any, axis: int = 0) -> Var:
    """Cumulative product: Select against a lower-triangular mask, then ReduceProd (MNN: `expr.cumprod`).

    The core has no CumProd op; this costs n x n elements per row along the axis.
    """
    from mnnpy.expr import shape_ops

    v = to_var(x)
    if v.ndim == 0:
        return v
    moved, inverse = _move_last(v, axis)
    n = moved.shape[-1]
    mask = const_of(np.tril(np.ones((n, n), np.int32)))
    rows = shape_ops.select(mask, shape_ops.unsqueeze(moved, [-2]), 1)
    out = reduce_prod(rows, [-1])
    return out if inverse is None else shape_ops.transpose(out, inverse)


def _move_last(v: Var, axis: int) -> tuple[Var, list[int] | None]:
    from mnnpy.expr import shape_ops

    rank = v.ndim
    ax = axis + rank if axis < 0 else axis
    if ax == rank - 1:
        return v, None
    perm = [i for i in range(rank) if i != ax] + [ax]
    inverse = list(np.argsort(perm))
    return shape_ops.transpose(v, perm), [int(i) for i in inverse]


def topk(x: Any, k: int, largest: bool = True) -> list[Var]:
    """The k largest (or smallest) values and int32 indices along the last axis, sorted (MNN: `_TopKV2`)."""
    v = to_var(x)
    p = fb.TopKV2T()
    p.sorted = True
    p.largest = bool(largest)
    return apply(OT.TopKV2, [v, const_of(np.array([int(k)], np.int32))], PT.TopKV2, p, n_out=2,
                 dtypes=[v.np_dtype, I32])


def sort(x: Any, axis: int = -1, arg: bool = False, descend: bool = False) -> Var:
    """Sorted values (or indices when `arg`) along an axis, through TopKV2 (MNN: `expr.sort`)."""
    from mnnpy.expr import shape_ops

    v = to_var(x)
    if v.ndim == 0:
        return v
    moved, inverse = _move_last(v, axis)
    values, indices = topk(moved, moved.shape[-1], largest=descend)
    out = indices if arg else values
    return out if inverse is None else shape_ops.transpose(out, inverse)


def moments(x: Any, axes: Sequence[int] = (2, 3), shift: Any = None, keep_dims: bool = True) -> list[Var]:
    """Mean and variance over axes (MNN: `expr.moments`)."""
    v = to_var(x)
    mean = reduce_mean(v, list(axes), True)
    var = reduce_mean(m.squared_difference(v, mean), list(axes), keep_dims)
    if not keep_dims:
        mean = reduce_mean(v, list(axes), False)
    return [mean, var]


def flat_nonzero(x: Any) -> Var:
    """Flat int32 indices of the non-zero elements, ascending.

    The count is data-dependent, so it is computed first (NotEqual + ReduceSum, read back); the indices then come
    from a TopKV2 of `mask * (n - position)`. Every step runs in the core.
    """
    from mnnpy.expr import shape_ops

    flat = shape_ops.reshape(to_var(x), [-1])
    n = flat.shape[0]
    mask = m.not_equal(flat, 0)
    k = int(reduce_sum(mask).read())
    key = m.multiply(mask, const_of(np.arange(n, 0, -1, dtype=np.int32)))
    return topk(key, k)[1]


def histogram(x: Any, bin: int, min: float, max: float, channel: int = -1) -> Var:
    """Float counts of the values in [min, max] over `bin` equal bins, max inclusive (MNN: `expr.histogram`).

    Bin indices come from Floor of the scaled values, then OneHot and ReduceSum (weighted by the in-range mask).
    """
    from mnnpy.expr import shape_ops

    v = to_var(x)
    if channel >= 0:
        v = shape_ops.gather(v, const_of(np.array(int(channel), np.int32)), v.ndim - 1)
    v = shape_ops.reshape(v, [-1])
    if v.np_dtype.kind != "f":
        v = m.cast(v, np.float32)
    lo, hi, n = float(min), float(max), int(bin)
    inside = m.cast(m.multiply(m.greater_equal(v, lo), m.less_equal(v, hi)), np.float32)
    idx = m.cast(m.floor(m.multiply(m.subtract(v, lo), n / (hi - lo))), np.int32)
    idx = m.minimum(m.maximum(idx, 0), n - 1)
    hot = shape_ops.one_hot(idx, n)
    return reduce_sum(m.multiply(hot, shape_ops.unsqueeze(inside, [1])), [0])
