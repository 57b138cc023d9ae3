"""Shape manipulation, joining, splitting and tiling of `mnnpy.numpy` (MNN: `MNN.numpy`), as core ops."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import shape_ops as es
from mnnpy.expr.enums import PadValue_Mode
from mnnpy.expr.var import Var, const_of
from mnnpy.numpy._util import seq, shape_of, var


def shape(a: Any) -> tuple[int, ...]:
    """The shape as a tuple (MNN: `numpy.shape`)."""
    return tuple(var(a).shape)


def reshape(a: Any, *newshape: Any) -> Var:
    """New shape, -1 inferred (MNN: `numpy.reshape`)."""
    dims = newshape[0] if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)) else newshape
    return es.reshape(var(a), shape_of(dims))


def ravel(a: Any, order: str = "C") -> Var:
    """Flattened (MNN: `numpy.ravel`)."""
    return es.reshape(var(a), [-1])


def transpose(a: Any, axes: Sequence[int] | None = None) -> Var:
    """Permute axes (MNN: `numpy.transpose`)."""
    return es.transpose(var(a), None if axes is None else [int(x) for x in axes])


def swapaxes(a: Any, axis1: int, axis2: int) -> Var:
    """Swap two axes (MNN: `numpy.swapaxes`)."""
    v = var(a)
    perm = list(range(v.ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return es.transpose(v, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Var:
    """Move axes to new positions (MNN: `numpy.moveaxis`)."""
    v = var(a)
    n = v.ndim
    src = [int(s) % n for s in ([source] if isinstance(source, (int, np.integer)) else source)]
    dst = [int(d) % n for d in ([destination] if isinstance(destination, (int, np.integer)) else destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return es.transpose(v, order)


def rollaxis(a: Any, axis: int, start: int = 0) -> Var:
    """Roll an axis backwards to `start` (MNN: `numpy.rollaxis`)."""
    v = var(a)
    n = v.ndim
    axis = axis % n
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(v, axis, start)


def squeeze(a: Any, axis: Any = None) -> Var:
    """Drop size-1 axes (MNN: `numpy.squeeze`)."""
    axes = [] if axis is None else [int(axis)] if isinstance(axis, (int, np.integer)) else [int(x) for x in axis]
    return es.squeeze(var(a), axes)


def expand_dims(x: Any, axis: Any) -> Var:
    """Insert size-1 axes (MNN: `numpy.expand_dims`)."""
    axes = [int(axis)] if isinstance(axis, (int, np.integer)) else [int(x) for x in axis]
    return es.unsqueeze(var(x), axes)


def _atleast(n: int, arys: tuple[Any, ...]) -> Any:
    out = []
    for a in arys:
        v = var(a)
        shp = v.shape
        if len(shp) < n:
            if n == 3 and len(shp) == 2:
                v = es.reshape(v, [*shp, 1])
            elif n == 3 and len(shp) == 1:
                v = es.reshape(v, [1, shp[0], 1])
            else:
                v = es.reshape(v, [1] * (n - len(shp)) + shp)
        out.append(v)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any) -> Any:
    """Views with at least one axis (MNN: `numpy.atleast_1d`)."""
    return _atleast(1, arys)


def atleast_2d(*arys: Any) -> Any:
    """Views with at least two axes (MNN: `numpy.atleast_2d`)."""
    return _atleast(2, arys)


def atleast_3d(*arys: Any) -> Any:
    """Views with at least three axes (MNN: `numpy.atleast_3d`)."""
    return _atleast(3, arys)


def broadcast_to(array: Any, shape: Any) -> Var:
    """Broadcast to a shape (MNN: `numpy.broadcast_to`)."""
    return es.broadcast_to(var(array), shape_of(shape))


def broadcast_arrays(*args: Any) -> list[Var]:
    """Broadcast several arrays against each other (MNN: `numpy.broadcast_arrays`)."""
    vs = [var(a) for a in args]
    target = list(np.broadcast_shapes(*[tuple(v.shape) for v in vs]))
    return [v if v.shape == target else es.broadcast_to(v, target) for v in vs]


def concatenate(args: Sequence[Any], axis: int | None = 0, out: Any = None, dtype: Any = None,
                casting: str = "same_kind") -> Var:
    """Join along an existing axis (flattened when axis is None) (MNN: `numpy.concatenate`)."""
    vs = seq(args)
    if axis is None:
        return es.concat([es.reshape(v, [-1]) for v in vs], 0)
    return es.concat(vs, int(axis))


def stack(arrays: Sequence[Any], axis: int = 0, out: Any = None) -> Var:
    """Join along a new axis (MNN: `numpy.stack`)."""
    return es.stack(seq(arrays), int(axis))


def vstack(tup: Sequence[Any]) -> Var:
    """Stack rows (MNN: `numpy.vstack`)."""
    return es.concat(atleast_list(2, tup), 0)


row_stack = vstack


def hstack(tup: Sequence[Any]) -> Var:
    """Stack columns (MNN: `numpy.hstack`)."""
    vs = atleast_list(1, tup)
    return es.concat(vs, 0 if vs[0].ndim == 1 else 1)


def dstack(tup: Sequence[Any]) -> Var:
    """Stack along the third axis (MNN: `numpy.dstack`)."""
    return es.concat(atleast_list(3, tup), 2)


def column_stack(tup: Sequence[Any]) -> Var:
    """1-D arrays as columns of a 2-D array (MNN: `numpy.column_stack`)."""
    vs = seq(tup)
    cols = [es.reshape(v, [-1, 1]) if v.ndim < 2 else v for v in vs]
    return es.concat(cols, 1)


def atleast_list(n: int, tup: Sequence[Any]) -> list[Var]:
    """Several array-likes with a common dtype and at least n axes."""
    vs = seq(tup)
    out = _atleast(n, tuple(vs))
    return out if isinstance(out, list) else [out]


def _split_sizes(length: int, indices_or_sections: Any, strict: bool) -> list[int]:
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if strict and length % n:
            raise ValueError("array split does not result in an equal division")
        base, extra = length // n, length % n
        return [base + 1] * extra + [base] * (n - extra)
    points = [0, *[min(int(i), length) for i in indices_or_sections], length]
    return [max(0, b - a) for a, b in itertools.pairwise(points)]


def _split(ary: Any, ios: Any, axis: int, strict: bool) -> list[Var]:
    v = var(ary)
    ax = axis + v.ndim if axis < 0 else axis
    sizes = _split_sizes(v.shape[ax], ios, strict)
    if len(sizes) == 1:
        return [v]
    if 0 in sizes:
        shp = v.shape
        out = []
        start = 0
        for s in sizes:
            starts = [0] * len(shp)
            starts[ax] = start
            size = list(shp)
            size[ax] = s
            out.append(es.slice(v, starts, size))
            start += s
        return out
    return es.split(v, sizes, ax)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Var]:
    """Split into equal sections or at indices (MNN: `numpy.split`)."""
    return _split(ary, indices_or_sections, axis, True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Var]:
    """Split allowing unequal sections (MNN: `numpy.array_split`)."""
    return _split(ary, indices_or_sections, axis, False)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Var]:
    """Split along columns (MNN: `numpy.hsplit`)."""
    v = var(ary)
    return _split(v, indices_or_sections, 0 if v.ndim == 1 else 1, True)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Var]:
    """Split along rows (MNN: `numpy.vsplit`)."""
    return _split(ary, indices_or_sections, 0, True)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Var]:
    """Split along the third axis (MNN: `numpy.dsplit`)."""
    return _split(ary, indices_or_sections, 2, True)


def tile(A: Any, reps: Any) -> Var:  # noqa: N803 - numpy's name
    """Repeat the whole array (MNN: `numpy.tile`)."""
    v = var(A)
    r = shape_of(reps)
    n = max(v.ndim, len(r))
    if v.ndim < n:
        v = es.reshape(v, [1] * (n - v.ndim) + v.shape)
    r = [1] * (n - len(r)) + r
    return es.tile(v, r)


def repmat(a: Any, m: int, n: int) -> Var:
    """Tile a 2-D array m x n times (MNN: `numpy.repmat`)."""
    return tile(atleast_2d(a), [m, n])


def repeat(a: Any, repeats: Any, axis: int | None = None) -> Var:
    """Repeat elements (MNN: `numpy.repeat`)."""
    v = var(a)
    if axis is None:
        v = es.reshape(v, [-1])
        axis = 0
    ax = axis + v.ndim if axis < 0 else axis
    length = v.shape[ax]
    index = np.repeat(np.arange(length, dtype=np.int32), np.asarray(repeats).astype(np.int64))
    return es.gather(v, const_of(index), ax)


_PAD_MODES = {"constant": PadValue_Mode.CONSTANT, "reflect": PadValue_Mode.REFLECT,
              "symmetric": PadValue_Mode.SYMMETRIC}


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: float = 0) -> Var:
    """Pad with numpy's pad_width forms; constant / reflect / symmetric / edge (MNN: `numpy.pad`)."""
    v = var(array)
    widths = np.broadcast_to(np.asarray(pad_width, np.int64).reshape(-1, 2) if np.ndim(pad_width) else
                             np.full((1, 2), int(pad_width)), (v.ndim, 2))
    if mode == "edge":
        from mnnpy.expr.var import apply
        from mnnpy.schema import mnn_generated as fb

        p = fb.PadParamT()
        p.mode = fb.PadValueMode.EDGE
        return apply(fb.OpType.Padding, [v, const_of(widths.astype(np.int32).reshape(-1))], fb.OpParameter.PadParam,
                     p)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"mnnpy.numpy pad does not implement mode {mode!r}")
    return es.pad(v, widths, _PAD_MODES[mode], float(constant_values))


def meshgrid(*xi: Any, **kwargs: Any) -> list[Var]:
    """Coordinate matrices (indexing 'xy' or 'ij') (MNN: `numpy.meshgrid`)."""
    indexing = kwargs.get("indexing", "xy")
    vs = [es.reshape(var(x), [-1]) for x in xi]
    n = len(vs)
    sizes = [v.shape[0] for v in vs]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vs):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shp = [1] * n
        shp[pos] = v.shape[0]
        out.append(es.broadcast_to(es.reshape(v, shp), sizes))
    return out


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[Var, ...]:
    """Flat indices to coordinate arrays (MNN: `numpy.unravel_index`)."""
    dims = shape_of(shape)
    coords = es.unravel_index(var(indices), dims)
    return tuple(es.squeeze(c, [0]) for c in es.split(coords, [1] * len(dims), 0)) if len(dims) > 1 else \
        (es.squeeze(coords, [0]),)
