"""`Var[...]` and `Var[...] = v`: basic numpy indexing as StridedSlice / Unsqueeze / GatherV2 / Select ops."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr import shape_ops
from mnnpy.expr.var import Var, const_of, to_var

BIG = 2**31 - 1


def _expand(index: Any, rank: int) -> list[Any]:
    items = list(index) if isinstance(index, tuple) else [index]
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > rank:
        raise IndexError(f"too many indices ({used}) for a Var of rank {rank}")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [builtins.slice(None)] * (rank - used)
    else:
        items += [builtins.slice(None)] * (rank - used)
    return items


def _mask(x: Var, index: Any) -> Var | None:
    """The index as a 0/1 mask Var when it is a boolean mask of x's shape (bool array or comparison result)."""
    if isinstance(index, np.ndarray) and index.dtype == np.bool_:
        return const_of(index.astype(np.int32)) if list(index.shape) == x.shape else None
    if isinstance(index, Var) and index.node.kind == "op" and index.node.op.type == m.OT.BinaryOp \
            and index.node.op.main.opType in m.COMPARE and index.shape == x.shape:
        return index
    return None


def getitem(x: Var, index: Any) -> Var:
    """numpy basic indexing (ints, slices, None, ...) and int-array indexing on axis 0 (MNN: `Var.__getitem__`)."""
    shape = x.shape
    mask = _mask(x, index)
    if mask is not None:  # boolean mask: data-dependent count, computed first
        from mnnpy.expr.reduce import flat_nonzero

        return shape_ops.gather(shape_ops.reshape(x, [-1]), flat_nonzero(mask), 0)
    if isinstance(index, (Var, list, np.ndarray)):
        idx = to_var(index)
        if idx.np_dtype.kind == "f":
            idx = m.cast(idx, np.int32)
        return shape_ops.gather(x, idx, 0)
    items = _expand(index, len(shape))
    begin: list[int] = []
    end: list[int] = []
    strides: list[int] = []
    bmask = emask = smask = 0
    new_axes: list[int] = []
    out_axis = 0
    dim = 0
    for it in items:
        if it is None:
            new_axes.append(out_axis)
            out_axis += 1
            continue
        bit = 1 << dim
        if isinstance(it, builtins.slice):
            step = 1 if it.step is None else int(it.step)
            begin.append(0 if it.start is None else int(it.start))
            end.append(0 if it.stop is None else int(it.stop))
            strides.append(step)
            bmask |= bit if it.start is None else 0
            emask |= bit if it.stop is None else 0
            out_axis += 1
        else:
            i = int(it)
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {shape[dim]}")
            begin.append(i + shape[dim] if i < 0 else i)
            end.append(0)
            strides.append(1)
            smask |= bit
        dim += 1
    y = x
    trivial = not smask and all(isinstance(it, builtins.slice) and it == builtins.slice(None) for it in items
                                if it is not None)
    if not trivial:
        y = shape_ops.strided_slice(x, begin, end, strides, bmask, emask, 0, 0, smask)
    if new_axes:
        y = shape_ops.unsqueeze(y, new_axes)
    return y


def _positions(shape: list[int], index: Any) -> np.ndarray:
    """Flat positions the index selects, in selection order (index arithmetic on the shape only)."""
    flat = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    if isinstance(index, Var):
        index = index.read()
    return np.asarray(flat[index])


def setitem(x: Var, index: Any, value: Any) -> Var:
    """The Var that `x[index] = value` leaves: ScatterNd of the values + Select (MNN: `Var.__setitem__`)."""
    shape = x.shape
    bool_mask = _mask(x, index)
    if bool_mask is not None:
        val = to_var(value, x)
        if val.np_dtype != x.np_dtype:
            val = m.cast(val, x.np_dtype)
        if val.size != 1:
            raise NotImplementedError("mnnpy.expr: assigning an array through a boolean mask is not supported")
        return shape_ops.select(bool_mask, shape_ops.reshape(val, []), x)
    pos = _positions(shape, index)
    mask = np.zeros(int(np.prod(shape, dtype=np.int64)), np.int32)
    mask[pos.ravel()] = 1
    mask_var = const_of(mask.reshape(shape))
    val = to_var(value, x)
    if val.np_dtype != x.np_dtype:
        val = m.cast(val, x.np_dtype)
    if val.ndim == 0 or val.size == 1:
        return shape_ops.select(mask_var, shape_ops.reshape(val, []) if val.ndim else val, x)
    coords = np.stack(np.unravel_index(pos.ravel(), shape), axis=-1).astype(np.int32)
    upd = shape_ops.reshape(shape_ops.broadcast_to(val, list(pos.shape)), [-1])
    scattered = shape_ops.scatter_nd(const_of(coords), upd, shape)
    return shape_ops.select(mask_var, scattered, x)
