"""Reductions, statistics, scans, sorting and searching of `mnnpy.numpy` (MNN: `MNN.numpy`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import reduce as er
from mnnpy.expr import shape_ops as es
from mnnpy.expr.var import Var, const_of
from mnnpy.numpy._util import axes_of, fvar, isnan, var

I32 = np.dtype(np.int32)


def _red(fn: Any, a: Any, axis: Any, keepdims: bool) -> Var:
    v = var(a)
    if v.ndim == 0:
        return fn(v, [], False)
    return fn(v, axes_of(axis, v.ndim), bool(keepdims))


def sum(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Sum (MNN: `numpy.sum`)."""
    return _red(er.reduce_sum, a, axis, keepdims)


def prod(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Product (MNN: `numpy.prod`)."""
    return _red(er.reduce_prod, a, axis, keepdims)


def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Arithmetic mean (float32) (MNN: `numpy.mean`)."""
    return _red(er.reduce_mean, fvar(a), axis, keepdims)


def max(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Maximum (MNN: `numpy.max`)."""
    return _red(er.reduce_max, a, axis, keepdims)


def min(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Minimum (MNN: `numpy.min`)."""
    return _red(er.reduce_min, a, axis, keepdims)


amax, amin = max, min


def all(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """All non-zero, as int32 0/1 (MNN: `numpy.all`)."""
    return _red(er.reduce_all, a, axis, bool(keepdims))


def any(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Any non-zero, as int32 0/1 (MNN: `numpy.any`)."""
    return _red(er.reduce_any, a, axis, bool(keepdims))


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Var:
    """Number of non-zero elements (MNN: `numpy.count_nonzero`)."""
    return sum(em.not_equal(var(a), 0), axis, keepdims=keepdims)


def ptp(a: Any, axis: Any = None) -> Var:
    """max - min (MNN: `numpy.ptp`)."""
    return em.subtract(max(a, axis), min(a, axis))


def var_(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False) -> Var:
    """Variance with `ddof` (MNN: `numpy.var`)."""
    v = fvar(a)
    axes = axes_of(axis, v.ndim)
    count = int(np.prod([v.shape[i] for i in axes], dtype=np.int64))
    dev = em.square(em.subtract(v, er.reduce_mean(v, axes, True))) if v.ndim else em.multiply(v, 0.0)
    total = er.reduce_sum(dev, axes, bool(keepdims)) if v.ndim else dev
    return em.divide(total, float(count - ddof))


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False) -> Var:
    """Standard deviation with `ddof` (MNN: `numpy.std`)."""
    return em.sqrt(var_(a, axis, ddof=ddof, keepdims=keepdims))


def argmax(a: Any, axis: int | None = None, out: Any = None) -> Var:
    """Index of the maximum; over the flattened array when axis is None (MNN: `numpy.argmax`)."""
    v = var(a)
    if axis is None:
        return er.argmax(es.reshape(v, [-1]), 0)
    return er.argmax(v, int(axis))


def argmin(a: Any, axis: int | None = None, out: Any = None) -> Var:
    """Index of the minimum (MNN: `numpy.argmin`)."""
    v = var(a)
    if axis is None:
        return er.argmin(es.reshape(v, [-1]), 0)
    return er.argmin(v, int(axis))


# *** nan-aware variants: NaN is x != x, replaced by the reduction's identity ***
def _fill_nan(a: Any, value: float) -> Var:
    v = fvar(a)
    return es.select(isnan(v), value, v)


def nansum(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Sum ignoring NaN (MNN: `numpy.nansum`)."""
    return sum(_fill_nan(a, 0.0), axis, keepdims=keepdims)


def nanprod(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Product ignoring NaN (MNN: `numpy.nanprod`)."""
    return prod(_fill_nan(a, 1.0), axis, keepdims=keepdims)


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Maximum ignoring NaN (MNN: `numpy.nanmax`)."""
    return max(_fill_nan(a, -np.inf), axis, keepdims=keepdims)


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Minimum ignoring NaN (MNN: `numpy.nanmin`)."""
    return min(_fill_nan(a, np.inf), axis, keepdims=keepdims)


def nanargmax(a: Any, axis: int | None = None, out: Any = None) -> Var:
    """argmax ignoring NaN (MNN: `numpy.nanargmax`)."""
    return argmax(_fill_nan(a, -np.inf), axis)


def nanargmin(a: Any, axis: int | None = None, out: Any = None) -> Var:
    """argmin ignoring NaN (MNN: `numpy.nanargmin`)."""
    return argmin(_fill_nan(a, np.inf), axis)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Var:
    """Mean ignoring NaN (MNN: `numpy.nanmean`)."""
    v = fvar(a)
    count = sum(em.cast(em.equal(v, v), np.float32), axis, keepdims=keepdims)
    return em.divide(nansum(v, axis, keepdims=keepdims), count)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False) -> Var:
    """Variance ignoring NaN (MNN: `numpy.nanvar`)."""
    v = fvar(a)
    valid = em.cast(em.equal(v, v), np.float32)
    count = sum(valid, axis, keepdims=True)
    mu = em.divide(nansum(v, axis, keepdims=True), count)
    dev = es.select(isnan(v), 0.0, em.square(em.subtract(v, mu)))
    total = sum(dev, axis, keepdims=keepdims)
    return em.divide(total, em.subtract(sum(valid, axis, keepdims=keepdims), float(ddof)))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False) -> Var:
    """Standard deviation ignoring NaN (MNN: `numpy.nanstd`)."""
    return em.sqrt(nanvar(a, axis, ddof=ddof, keepdims=keepdims))


# *** scans ***
def _scan(fn: Any, x: Any, axis: int | None) -> Var:
    v = var(x)
    if axis is None:
        return fn(es.reshape(v, [-1]), 0)
    return fn(v, int(axis))


def cumsum(x: Any, axis: int | None = None) -> Var:
    """Cumulative sum (flattened when axis is None) (MNN: `numpy.cumsum`)."""
    return _scan(er.cumsum, x, axis)


def cumprod(x: Any, axis: int | None = None) -> Var:
    """Cumulative product (MNN: `numpy.cumprod`)."""
    return _scan(er.cumprod, x, axis)


def nancumsum(x: Any, axis: int | None = None) -> Var:
    """Cumulative sum, NaN as 0 (MNN: `numpy.nancumsum`)."""
    return cumsum(_fill_nan(x, 0.0), axis)


def nancumprod(x: Any, axis: int | None = None) -> Var:
    """Cumulative product, NaN as 1 (MNN: `numpy.nancumprod`)."""
    return cumprod(_fill_nan(x, 1.0), axis)


# *** sorting and searching ***
def sort(a: Any, axis: int | None = -1, kind: Any = None, order: Any = None) -> Var:
    """Sorted copy (TopKV2 through the core) (MNN: `numpy.sort`)."""
    v = var(a)
    if axis is None:
        return er.sort(es.reshape(v, [-1]), 0)
    return er.sort(v, int(axis))


def argsort(a: Any, axis: int | None = -1, kind: Any = None, order: Any = None) -> Var:
    """Indices that sort (MNN: `numpy.argsort`)."""
    v = var(a)
    if axis is None:
        return er.sort(es.reshape(v, [-1]), 0, arg=True)
    return er.sort(v, int(axis), arg=True)


def msort(a: Any) -> Var:
    """Sort along axis 0 (MNN: `numpy.msort`)."""
    return sort(a, 0)


def lexsort(keys: Any, axis: int = -1) -> Var:
    """Indirect sort by several 1-D keys, the last one primary (MNN: `numpy.lexsort`).

    Runs as repeated stable argsorts: each key is argsorted after gathering by the order so far, with the
    position as a tie-break (key * n + position, exact for integer keys below 2**31 / n).
    """
    ks = [var(k) for k in (keys if isinstance(keys, (list, tuple)) else list(keys))]
    n = ks[0].shape[-1]
    order = const_of(np.arange(n, dtype=np.int32))
    pos = const_of(np.arange(n, dtype=np.int32))
    for k in ks:
        key = es.gather(k, order, 0)
        if key.np_dtype.kind == "f":
            raise NotImplementedError("mnnpy.numpy lexsort supports integer keys only (no stable float sort)")
        tie = em.add(em.multiply(key, n), pos)
        order = es.gather(order, er.sort(tie, -1, arg=True), 0)
    return order


def flatnonzero(a: Any) -> Var:
    """Flat indices of non-zero elements; the data-dependent count is computed first (MNN: `numpy.flatnonzero`)."""
    return er.flat_nonzero(var(a))


def nonzero(a: Any) -> tuple[Var, ...]:
    """Indices of non-zero elements, one Var per axis (MNN: `numpy.nonzero`)."""
    v = var(a)
    flat = flatnonzero(v)
    if v.ndim <= 1:
        return (flat,)
    coords = es.unravel_index(flat, v.shape)
    return tuple(es.squeeze(c, [0]) for c in es.split(coords, [1] * v.ndim, 0))


def argwhere(a: Any) -> Var:
    """Coordinates of non-zero elements, one row each (MNN: `numpy.argwhere`)."""
    v = var(a)
    flat = flatnonzero(v)
    if v.ndim == 0:
        return es.reshape(flat, [-1, 0])
    return es.transpose(es.unravel_index(flat, v.shape), [1, 0])


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Select x where condition else y; with one argument, `nonzero` (MNN: `numpy.where`)."""
    if x is None and y is None:
        return nonzero(condition)
    return es.select(var(condition), x, y)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False) -> Any:
    """Weighted mean (MNN: `numpy.average`)."""
    v = fvar(a)
    if weights is None:
        result = mean(v, axis)
        scale = float(v.size if axis is None else np.prod([v.shape[i] for i in axes_of(axis, v.ndim)]))
        return (result, const_of(np.asarray(scale, np.float32))) if returned else result
    w = fvar(weights)
    if w.ndim == 1 and v.ndim > 1 and axis is not None:
        shape = [1] * v.ndim
        shape[axis_first(axis, v.ndim)] = w.shape[0]
        w = es.reshape(w, shape)
    wsum = sum(es.broadcast_to(w, v.shape), axis)
    result = em.divide(sum(em.multiply(v, w), axis), wsum)
    return (result, wsum) if returned else result


def axis_first(axis: Any, ndim: int) -> int:
    """The single axis of an axis argument."""
    return axes_of(axis, ndim)[0]


def histogram(a: Any, bins: int = 10, range: Any = None, normed: Any = None, weights: Any = None,
              density: Any = None) -> tuple[Var, Var]:
    """Counts in `bins` equal bins and the bin edges (MNN: `numpy.histogram`).

    Bin indices come from the core (floor of the scaled values, OneHot, ReduceSum); edges are made on the host.
    """
    if not isinstance(bins, (int, np.integer)):
        raise NotImplementedError("mnnpy.numpy histogram supports an integer bin count only")
    v = es.reshape(fvar(a), [-1])
    if range is None:
        lo, hi = float(er.reduce_min(v).read()), float(er.reduce_max(v).read())
    else:
        lo, hi = float(range[0]), float(range[1])
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, int(bins) + 1)
    if weights is None:
        counts = er.histogram(v, int(bins), lo, hi)
    else:
        inside = em.multiply(em.greater_equal(v, lo), em.less_equal(v, hi))
        idx = em.cast(em.floor(em.multiply(em.subtract(v, lo), float(bins) / (hi - lo))), np.int32)
        hot = es.one_hot(em.minimum(em.maximum(idx, 0), int(bins) - 1), int(bins))
        w = em.multiply(em.cast(inside, np.float32), es.reshape(fvar(weights), [-1]))
        counts = er.reduce_sum(em.multiply(hot, es.unsqueeze(w, [1])), [0])
    if density:
        counts = em.divide(counts, em.multiply(er.reduce_sum(counts), float((hi - lo) / bins)))
    elif weights is None:
        counts = em.cast(counts, np.int32)
    return counts, const_of(edges.astype(np.float32))
