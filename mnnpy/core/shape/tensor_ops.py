"""Shapes of data-movement ops (the ones geometry turns into regions)."""

from __future__ import annotations

import math
from typing import Any

from mnnpy.core.ir import NC4HW4, NCHW, NHWC, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._slicing import slice_tf, split_points, strided_slice
from mnnpy.core.shape._util import broadcast, ints, norm_axis, same
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


@shape_fn(OT.Reshape, needs_values=(1,))
def reshape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    dims = ints(values[1]) if len(values) > 1 else ints(op.main.dims)
    dims = [x.shape[i] if d == 0 and i < len(x.shape) else d for i, d in enumerate(dims)]
    if dims.count(-1) == 1:
        known = math.prod(d for d in dims if d != -1)
        dims[dims.index(-1)] = x.size // known if known else 0
    if math.prod(dims) != x.size:
        raise ModelError(f"op {op.name!r}: cannot reshape {x.shape} to {dims}")
    return [same(x, dims)]


@shape_fn(OT.Flatten)
def flatten(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    rank = len(x.shape)
    axis = op.main.axis + rank if op.main.axis < 0 else op.main.axis
    end = op.main.endAxis
    if end == 0:
        return [same(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))]
    end = end + rank if end < 0 else end
    return [same(x, (*x.shape[:axis], math.prod(x.shape[axis:end + 1]), *x.shape[end + 1:]))]


@shape_fn(OT.Squeeze, needs_values=(1,))
def squeeze(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    given = ints(values[1]) if len(values) > 1 else ints(op.main.squeezeDims if op.main else None)
    rank = len(x.shape)
    axes = {norm_axis(a, rank, op.name) for a in given} if given else {i for i, d in enumerate(x.shape) if d == 1}
    return [same(x, [d for i, d in enumerate(x.shape) if i not in axes])]


@shape_fn(OT.Unsqueeze, OT.ExpandDims, needs_values=(1,))
def unsqueeze(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    if len(values) > 1:
        axes = ints(values[1])
    elif op.type == OT.ExpandDims:
        axes = [op.main.axis]
    else:
        axes = ints(op.main.squeezeDims)
    rank = len(x.shape) + len(axes)
    axes = sorted(norm_axis(a, rank, op.name) for a in axes)
    dims = list(x.shape)
    for a in axes:
        dims.insert(a, 1)
    return [same(x, dims)]


@shape_fn(OT.Permute, OT.Transpose, needs_values=(1,))
def permute(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    perm = permutation(op, descs[0], values)
    return [same(descs[0], [descs[0].shape[p] for p in perm])]


def permutation(op: Any, x: TensorDesc, values: list) -> list[int]:
    """The permutation of a Permute (param) or Transpose (input 1) op."""
    perm = ints(values[1]) if op.type == OT.Transpose else ints(op.main.dims)
    if not perm:
        perm = list(range(len(x.shape)))[::-1]
    if sorted(perm) != list(range(len(x.shape))):
        raise ModelError(f"op {op.name!r}: {perm} is not a permutation of rank {len(x.shape)}")
    return perm


@shape_fn(OT.Concat)
def concat(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    axis = norm_axis(op.main.axis if op.main else 0, len(x.shape), op.name)
    total = 0
    for d in descs:
        rest = [v for i, v in enumerate(d.shape) if i != axis]
        if len(d.shape) != len(x.shape) or rest != [v for i, v in enumerate(x.shape) if i != axis]:
            raise ModelError(f"op {op.name!r}: cannot concatenate {d.shape} with {x.shape} on axis {axis}")
        total += d.shape[axis]
    return [same(x, (*x.shape[:axis], total, *x.shape[axis + 1:]))]


@shape_fn(OT.Slice, needs_values=(1,))
def slice_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    n_out = len(op.outputIndexes)
    axis, pts = split_points(op, x.shape, n_out, values)
    return [same(x, (*x.shape[:axis], pts[i + 1] - pts[i], *x.shape[axis + 1:])) for i in range(n_out)]


@shape_fn(OT.SliceTf, needs_values=(2,))
def slicetf(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    if values[1] is None:  # runtime begin: sizes must be explicit
        sizes = ints(values[2])
        if any(n < 0 for n in sizes):
            raise ModelError(f"op {op.name!r}: SliceTf with a runtime begin needs explicit sizes, got {sizes}")
        return [same(descs[0], sizes)]
    return [same(descs[0], [c for _, c, _ in slice_tf(descs[0].shape, values)])]


@shape_fn(OT.StridedSlice, needs_values=(1, 2, 3, 4))
def stridedslice(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [same(descs[0], strided_slice(op, descs[0].shape, values)[1])]


@shape_fn(OT.Padding, needs_values=(1,))
def padding(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    pads = ints(values[1])
    return [same(x, [d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x.shape)])]


@shape_fn(OT.Tile, needs_values=(1,))
def tile(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    reps = ints(values[1])
    return [same(descs[0], [d * r for d, r in zip(descs[0].shape, reps, strict=True)])]


@shape_fn(OT.BroadcastTo, needs_values=(1,))
def broadcast_to(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [same(descs[0], broadcast([descs[0].shape, tuple(ints(values[1]))], op.name))]


@shape_fn(OT.DepthToSpace, OT.SpaceToDepth)
def depth_space(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    n, c, h, w = descs[0].shape
    b = op.main.blockSize
    if op.type == OT.DepthToSpace:
        return [same(descs[0], (n, c // (b * b), h * b, w * b))]
    return [same(descs[0], (n, c * b * b, h // b, w // b))]


def channel_move(rank: int, src_nhwc: bool, dst_nhwc: bool) -> list[int] | None:
    """The permutation a ConvertTensor applies to the logical shape, or None: NHWC keeps channels last, NCHW and
    NC4HW4 second, for every rank above 2 (MNN's TensorConvertSizeComputer); rank <= 2 and same-order moves
    keep the shape."""
    if rank <= 2 or src_nhwc == dst_nhwc:
        return None
    if src_nhwc:
        return [0, rank - 1, *range(1, rank - 1)]
    return [0, *range(2, rank), 1]


@shape_fn(OT.ConvertTensor)
def convert(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    dst = {0: NCHW, 1: NHWC, 2: NC4HW4}.get(op.main.dest, NCHW)
    perm = channel_move(len(x.shape), x.fmt == NHWC, dst == NHWC)
    shape = x.shape if perm is None else tuple(x.shape[p] for p in perm)
    return [x.with_(shape=shape, fmt=dst)]


@shape_fn(OT.GatherV2, OT.Gather, needs_values=(2,))
def gather(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    params, indices = descs[0], descs[1]
    axis = gather_axis(op, params, values)
    shape = (*params.shape[:axis], *indices.shape, *params.shape[axis + 1:])
    return [TensorDesc(shape, params.dtype, NCHW)]


def gather_axis(op: Any, params: TensorDesc, values: list) -> int:
    """Axis of a GatherV2 (input 2, else the param, else 0)."""
    axis = 0
    if len(values) > 2 and values[2] is not None:
        axis = ints(values[2])[0]
    elif op.main is not None and hasattr(op.main, "axis"):
        axis = op.main.axis
    return norm_axis(axis, len(params.shape), op.name)
