"""Shape and data-movement ops of `MNN.expr` (the core lowers most of them to Raster regions by geometry)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr.enums import PadValue_Mode
from mnnpy.expr.var import Var, apply, const_of, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter
I32 = np.dtype(np.int32)


def _ints(values: Any) -> Var:
    if isinstance(values, Var):
        return values
    return const_of(np.asarray(values, dtype=np.int32).reshape(-1))


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def reshape(x: Any, shape: Sequence[int], original_format: Any = None) -> Var:
    """New shape, -1 inferred, 0 copies the input dim (MNN: `expr.reshape`)."""
    p = fb.ReshapeT()
    p.dims = [int(d) for d in shape]
    p.dimType = fb.MNN_DATA_FORMAT.NCHW
    return apply(OT.Reshape, [to_var(x), _ints(list(shape))], PT.Reshape, p)


def transpose(x: Any, perm: Sequence[int] | None = None) -> Var:
    """Permute axes (reversed when perm is None) (MNN: `expr.transpose`)."""
    v = to_var(x)
    if perm is None:
        perm = list(builtins.range(v.ndim))[::-1]
    return apply(OT.Transpose, [v, _ints([int(p) for p in perm])], PT.Transpose, fb.TransposeT())


def concat(values: Sequence[Any], axis: int) -> Var:
    """Join along an existing axis (MNN: `expr.concat`)."""
    vs = [to_var(v) for v in values]
    p = fb.AxisT()
    p.axis = int(axis)
    return apply(OT.Concat, vs, PT.Axis, p)


def split(x: Any, size_splits: Sequence[int] | int, axis: int) -> list[Var]:
    """Split into parts of the given sizes, or into n equal parts (MNN: `expr.split`)."""
    v = to_var(x)
    shape = v.shape
    ax = _norm(int(axis), len(shape))
    if isinstance(size_splits, (int, np.integer)):
        n = int(size_splits)
        sizes = [shape[ax] // n] * n
    else:
        sizes = [int(s) for s in size_splits]
    if len(sizes) == 1:
        return [v]
    p = fb.SliceT()
    p.axis = ax
    p.slicePoints = sizes
    p.sourceType = 2
    return apply(OT.Slice, [v, _ints(sizes)], PT.Slice, p, n_out=len(sizes))


def slice(x: Any, starts: Sequence[int], sizes: Sequence[int]) -> Var:
    """begin + size per axis, -1 = to the end (MNN: `expr.slice`)."""
    return apply(OT.SliceTf, [to_var(x), _ints(starts), _ints(sizes)])


def strided_slice(x: Any, begin: Sequence[int], end: Sequence[int], strides: Sequence[int], begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0) -> Var:
    """TF StridedSlice with begin/end/shrink masks (MNN: `expr.strided_slice`)."""
    if ellipsis_mask or new_axis_mask:
        raise NotImplementedError("mnnpy.expr strided_slice: ellipsis/new-axis masks are not supported by the core")
    p = fb.StridedSliceParamT()
    p.fromType = 0
    p.beginMask, p.endMask, p.shrinkAxisMask = int(begin_mask), int(end_mask), int(shrink_axis_mask)
    p.ellipsisMask = p.newAxisMask = 0
    p.t = fb.DataType.DT_FLOAT
    return apply(OT.StridedSlice, [to_var(x), _ints(begin), _ints(end), _ints(strides)], PT.StridedSliceParam, p)


def squeeze(x: Any, axes: Sequence[int] = ()) -> Var:
    """Drop size-1 axes (all when empty) (MNN: `expr.squeeze`)."""
    p = fb.SqueezeParamT()
    p.squeezeDims = [int(a) for a in axes]
    return apply(OT.Squeeze, [to_var(x)], PT.SqueezeParam, p)


def unsqueeze(x: Any, axes: Sequence[int] = ()) -> Var:
    """Insert size-1 axes (MNN: `expr.unsqueeze`)."""
    p = fb.SqueezeParamT()
    p.squeezeDims = [int(a) for a in axes]
    return apply(OT.Unsqueeze, [to_var(x)], PT.SqueezeParam, p)


def expand_dims(x: Any, axis: int) -> Var:
    """Insert one size-1 axis (MNN: `expr.expand_dims`)."""
    return unsqueeze(x, [int(axis)])


def stack(values: Sequence[Any], axis: int = 0) -> Var:
    """Join along a new axis (MNN: `expr.stack`)."""
    vs = [to_var(v) for v in values]
    rank = vs[0].ndim + 1
    ax = _norm(int(axis), rank)
    return concat([expand_dims(v, ax) for v in vs], ax)


def unstack(x: Any, axis: int = 0) -> list[Var]:
    """Split along an axis and drop it (MNN: `expr.unstack`)."""
    v = to_var(x)
    ax = _norm(int(axis), v.ndim)
    n = v.shape[ax]
    parts = split(v, [1] * n, ax) if n > 1 else [v]
    return [squeeze(p, [ax]) for p in parts]


def tile(x: Any, multiples: Sequence[int]) -> Var:
    """Repeat the whole tensor per axis (MNN: `expr.tile`)."""
    return apply(OT.Tile, [to_var(x), _ints(multiples)])


def broadcast_to(input: Any, shape: Sequence[int]) -> Var:
    """numpy broadcasting to a shape (MNN: `expr.broadcast_to`)."""
    return apply(OT.BroadcastTo, [to_var(input), _ints(shape)])


def pad(x: Any, paddings: Any, mode: PadValue_Mode = PadValue_Mode.CONSTANT, value: float = 0.0) -> Var:
    """Pad with [[before, after], ...] per axis; CONSTANT / REFLECT / SYMMETRIC (MNN: `expr.pad`)."""
    v = to_var(x)
    p = fb.PadParamT()
    p.mode = mode.value if isinstance(mode, PadValue_Mode) else int(mode)
    pads = np.asarray(paddings.read() if isinstance(paddings, Var) else paddings, dtype=np.int32).reshape(-1)
    ins = [v, const_of(pads)]
    if value:
        ins.append(const_of(np.asarray(value, dtype=v.np_dtype)))
    return apply(OT.Padding, ins, PT.PadParam, p)


def gather(x: Any, index: Any, axis: int = 0) -> Var:
    """Take slices along an axis at int indices (MNN: `expr.gather`)."""
    idx = to_var(index)
    return apply(OT.GatherV2, [to_var(x), idx, const_of(np.array([int(axis)], np.int32))])


def gather_nd(x: Any, indices: Any) -> Var:
    """Gather slices by index tuples in the last axis of `indices` (MNN: `expr.gather_nd`)."""
    return apply(OT.GatherND, [to_var(x), to_var(indices)])


def scatter_nd(indices: Any, updates: Any, shape: Sequence[int]) -> Var:
    """Zeros of `shape` with `updates` written at `indices` (MNN: `expr.scatter_nd`)."""
    upd = to_var(updates)
    return apply(OT.ScatterNd, [to_var(indices), upd, _ints(shape)], dtypes=[upd.np_dtype])


def select(cond: Any, x: Any, y: Any) -> Var:
    """cond ? x : y with broadcasting (MNN: `expr.select`)."""
    from mnnpy.expr.math import _pair

    a, b = _pair(x, y)
    return apply(OT.Select, [to_var(cond), a, b], dtypes=[a.np_dtype])


def where(x: Any) -> Var:
    """Coordinates of the non-zero elements, [count, rank] int32 (MNN: `expr.where`).

    The core cannot plan Where's data-dependent shape; the count is computed first (see `reduce.flat_nonzero`).
    """
    from mnnpy.expr.reduce import flat_nonzero

    v = to_var(x)
    flat = flat_nonzero(v)
    if v.ndim <= 1:
        return reshape(flat, [-1, 1])
    return transpose(unravel_index(flat, v.shape), [1, 0])


def setdiff1d(x: Any, y: Any) -> Var:
    """Elements of 1-D x not in y, in x's order (MNN: `expr.setdiff1d`; the count is computed first)."""
    from mnnpy.expr.math import not_equal
    from mnnpy.expr.reduce import flat_nonzero, reduce_all

    a, b = to_var(x), to_var(y)
    keep = reduce_all(not_equal(unsqueeze(a, [1]), unsqueeze(b, [0])), [1])
    return gather(a, flat_nonzero(keep), 0)


def one_hot(indices: Any, depth: int, onValue: float = 1.0, offValue: float = 0.0,  # noqa: N803 - MNN's names
            axis: int = -1) -> Var:
    """One-hot encoding along a new axis (MNN: `expr.one_hot`)."""
    p = fb.OneHotParamT()
    p.axis = int(axis)
    p.dType = fb.DataType.DT_FLOAT
    on = const_of(np.asarray(onValue, np.float32))
    off = const_of(np.asarray(offValue, np.float32))
    return apply(OT.OneHot, [to_var(indices), _ints([depth]), on, off], PT.OneHotParam, p,
                 dtypes=[np.float32])


def shape(x: Any) -> Var:
    """The shape as an int32 Var (MNN: `expr.shape`)."""
    return apply(OT.Shape, [to_var(x)], dtypes=[I32])


def rank(x: Any) -> Var:
    """The rank as an int32 scalar Var (MNN: `expr.rank`)."""
    return apply(OT.Rank, [to_var(x)], dtypes=[I32])


def size(x: Any) -> Var:
    """The element count as an int32 scalar Var (MNN: `expr.size`)."""
    return apply(OT.Size, [to_var(x)], dtypes=[I32])


def fill(shape: Sequence[int], value: Any) -> Var:
    """A tensor of `shape` filled with `value` (MNN: `expr.fill`)."""
    val = to_var(value)
    return apply(OT.Fill, [_ints(shape), val], dtypes=[val.np_dtype])


def zeros_like(x: Any) -> Var:
    """Zeros of x's shape and dtype (MNN: `expr.zeros_like`)."""
    return apply(OT.ZerosLike, [to_var(x)])


def range(start: Any, limit: Any, delta: Any) -> Var:
    """[start, limit) by delta (MNN: `expr.range`)."""
    vals = [np.asarray(v.read() if isinstance(v, Var) else v) for v in (start, limit, delta)]
    dt = np.float32 if any(v.dtype.kind == "f" for v in vals) else np.int32
    ins = [const_of(v.astype(dt).reshape(())) for v in vals]
    return apply(OT.Range, ins, dtypes=[dt])


def _depth_space(x: Any, block: int, op_type: int) -> Var:
    p = fb.DepthSpaceParamT()
    p.blockSize = int(block)
    return apply(op_type, [to_var(x)], PT.DepthSpaceParam, p)


def space_to_depth(x: Any, axis: int) -> Var:
    """Move block x block spatial patches into channels, NCHW (MNN: `expr.space_to_depth`, axis = block size)."""
    return _depth_space(x, axis, OT.SpaceToDepth)


def depth_to_space(x: Any, axis: int) -> Var:
    """Move channels into block x block spatial patches, NCHW (MNN: `expr.depth_to_space`, axis = block size)."""
    return _depth_space(x, axis, OT.DepthToSpace)


def reverse(x: Any, axis: Any) -> Var:
    """Reverse along axes (MNN: `expr.reverse`)."""
    v = to_var(x)
    rank = v.ndim
    axes = {_norm(int(a), rank) for a in (np.asarray(axis.read() if isinstance(axis, Var) else axis).ravel())}
    begin = [-1 if i in axes else 0 for i in builtins.range(rank)]
    end = [0] * rank
    strides = [-1 if i in axes else 1 for i in builtins.range(rank)]
    mask = sum(1 << i for i in builtins.range(rank))
    return strided_slice(v, begin, end, strides, begin_mask=mask & ~sum(1 << a for a in axes), end_mask=mask)


def crop(x: Any, size: Any, axis: int, offset: Sequence[int]) -> Var:
    """Crop x to `size`'s shape from `axis` on, at offsets (MNN: `expr.crop`)."""
    v = to_var(x)
    target = to_var(size).shape
    rank = v.ndim
    starts = [0] * rank
    sizes = list(v.shape)
    offs = list(offset)
    for i in builtins.range(int(axis), rank):
        starts[i] = int(offs[i - axis] if len(offs) > 1 else offs[0])
        sizes[i] = target[i]
    return slice(v, starts, sizes)


def channel_shuffle(x: Any, axis: int) -> Var:
    """ShuffleNet channel shuffle of an NCHW tensor into `axis` groups (MNN: `expr.channel_shuffle`)."""
    v = to_var(x)
    n, c, h, w = v.shape
    g = int(axis)
    y = reshape(v, [n, g, c // g, h, w])
    return reshape(transpose(y, [0, 2, 1, 3, 4]), [n, c, h, w])


def space_to_batch_nd(x: Any, block_shape: Sequence[int], paddings: Any) -> Var:
    """TF SpaceToBatchND on NCHW spatial axes, via Padding, Reshape and Transpose (MNN: `expr.space_to_batch_nd`)."""
    v = to_var(x)
    blocks = [int(b) for b in np.asarray(block_shape).ravel()]
    pads = np.asarray(paddings, np.int32).reshape(-1, 2)
    k = len(blocks)
    full = np.zeros((v.ndim, 2), np.int32)
    full[2:2 + k] = pads
    y = pad(v, full)
    shp = y.shape
    n, c, sp = shp[0], shp[1], shp[2:]
    dims = [n, c]
    for s, b in zip(sp, blocks, strict=True):
        dims += [s // b, b]
    y = reshape(y, dims)
    perm = [3 + 2 * i for i in builtins.range(k)] + [0, 1] + [2 + 2 * i for i in builtins.range(k)]
    y = transpose(y, perm)
    return reshape(y, [n * int(np.prod(blocks)), c] + [s // b for s, b in zip(sp, blocks, strict=True)])


def batch_to_space_nd(x: Any, block_shape: Sequence[int], crops: Any) -> Var:
    """TF BatchToSpaceND on NCHW spatial axes, via Reshape, Transpose and Slice (MNN: `expr.batch_to_space_nd`)."""
    v = to_var(x)
    blocks = [int(b) for b in np.asarray(block_shape).ravel()]
    cr = np.asarray(crops, np.int32).reshape(-1, 2)
    k = len(blocks)
    shp = v.shape
    nb, c, sp = shp[0], shp[1], shp[2:]
    n = nb // int(np.prod(blocks))
    y = reshape(v, [*blocks, n, c, *sp])
    perm = [k, k + 1]
    for i in builtins.range(k):
        perm += [k + 2 + i, i]
    y = transpose(y, perm)
    full = [n, c] + [s * b for s, b in zip(sp, blocks, strict=True)]
    y = reshape(y, full)
    starts = [0, 0] + [int(cr[i, 0]) for i in builtins.range(k)]
    sizes = [n, c] + [full[2 + i] - int(cr[i, 0]) - int(cr[i, 1]) for i in builtins.range(k)]
    return slice(y, starts, sizes)


def matrix_band_part(x: Any, num_lower: int, num_upper: int) -> Var:
    """Keep a diagonal band of the last two axes (MNN: `expr.matrix_band_part`)."""
    from mnnpy.expr.math import multiply

    v = to_var(x)
    m, n = v.shape[-2:]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    lo, up = int(num_lower), int(num_upper)
    band = ((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up))
    return multiply(v, const_of(band.astype(v.np_dtype)))


def unravel_index(indices: Any, shape: Any) -> Var:
    """Flat indices -> coordinates, stacked on axis 0 (MNN: `expr.unravel_index`)."""
    from mnnpy.expr.math import floordiv, floormod

    idx = to_var(indices)
    dims = [int(d) for d in np.asarray(shape.read() if isinstance(shape, Var) else shape).ravel()]
    coords = []
    rest = idx
    for d in reversed(dims):
        coords.append(floormod(rest, d))
        rest = floordiv(rest, d)
    return stack(list(reversed(coords)), 0)


def reverse_sequence(x: Any, y: Any, batch_dim: int, seq_dim: int) -> Var:
    """Reverse the first y[b] elements along seq_dim for each batch b (MNN: `expr.reverse_sequence`).

    The per-element source index is built with Range-like constants, Less and Select, then GatherElements.
    """
    from mnnpy.expr.math import cast, less, subtract

    v = to_var(x)
    shp = v.shape
    rank = len(shp)
    bd, sd = _norm(int(batch_dim), rank), _norm(int(seq_dim), rank)
    t_shape = [1] * rank
    t_shape[sd] = shp[sd]
    t = const_of(np.arange(shp[sd], dtype=np.int32).reshape(t_shape))
    l_shape = [1] * rank
    l_shape[bd] = shp[bd]
    lengths = reshape(cast(to_var(y), np.int32), l_shape)
    index = select(less(t, lengths), subtract(subtract(lengths, 1), t), t)
    index = broadcast_to(index, shp)
    return apply(OT.GatherElements, [v, index, const_of(np.array([sd], np.int32))])
