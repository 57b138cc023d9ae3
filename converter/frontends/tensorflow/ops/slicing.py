"""ConcatV2, Pad/PadV2/MirrorPad, StridedSlice, Slice, GatherV2 (constant inputs are evaluated here)."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, TfNode
from ..registry import tf_op

NHWC_TO_NCHW_AXIS = [0, 2, 3, 1]  # TF axis of a 4-D feature map -> the same axis in its NCHW copy


def _const_out(ctx: Context, node: TfNode, value: np.ndarray) -> None:
    ctx.set_out(node.name, ctx.const(value, node.name))


@tf_op("ConcatV2", "Concat")
def concat(ctx: Context, node: TfNode) -> None:
    """ConcatV2(values..., axis) -> Concat; on NCHW feature maps the axis is remapped instead of permuting."""
    if node.op == "Concat":
        axis_key, keys = node.inputs[0], node.inputs[1:]
    else:
        axis_key, keys = node.inputs[-1], node.inputs[:-1]
    axis = int(np.asarray(ctx.value(axis_key)).ravel()[0]) if ctx.value(axis_key) is not None else None
    if axis is None:
        raise ConvertError(f"{node.label()}: the axis must be a constant")
    values = [ctx.value(key) for key in keys]
    if all(v is not None for v in values):
        _const_out(ctx, node, np.concatenate(values, axis=axis))
        return
    shapes = [ctx.shape(key) for key in keys]
    out_shape = None
    if all(s is not None for s in shapes):
        rank = len(shapes[0])
        out_shape = list(shapes[0])
        dims = [s[axis % rank] for s in shapes]
        out_shape[axis % rank] = None if any(d is None for d in dims) else sum(dims)
    nchw = all(ctx.is_nchw(key) for key in keys)
    if nchw:
        out = ctx.out_name(node.name, nchw=True)
        ctx.axis_op(OP.Concat, [ctx.x_nchw(key) for key in keys], NHWC_TO_NCHW_AXIS[axis % 4], out)
        ctx.set_out(node.name, out, nchw=True, shape=out_shape)
        return
    ctx.axis_op(OP.Concat, [ctx.x(key) for key in keys], axis, node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


_PAD_MODES = {"REFLECT": fb.PadValueMode.REFLECT, "SYMMETRIC": fb.PadValueMode.SYMMETRIC}


@tf_op("Pad", "PadV2", "MirrorPad")
def pad(ctx: Context, node: TfNode) -> None:
    """Pad/PadV2/MirrorPad -> Padding(x, int32 per-dim [begin, end] pairs[, value]); NCHW maps stay NCHW."""
    x = node.inputs[0]
    paddings = np.asarray(ctx.need_value(node, 1, "the paddings"), np.int64).reshape(-1, 2)
    shape = ctx.shape(x)
    out_shape = None
    if shape is not None:
        out_shape = [None if d is None else d + int(p.sum()) for d, p in zip(shape, paddings, strict=False)]
    param = fb.PadParamT()
    param.mode = _PAD_MODES.get(node.attr("mode", "CONSTANT"), fb.PadValueMode.CONSTANT)
    nchw = ctx.is_nchw(x) and len(paddings) == 4
    if nchw:
        paddings = paddings[[0, 3, 1, 2]]
    inputs = [ctx.x_nchw(x) if nchw else ctx.x(x), ctx.const(paddings.ravel().astype(np.int32), node.name + "/pads")]
    if node.op == "PadV2" and len(node.inputs) > 2:
        inputs.append(ctx.x(node.inputs[2]))
    out = ctx.out_name(node.name, nchw)
    ctx.emit(OP.Padding, inputs, [out], PARAM.PadParam, param, name=node.name)
    ctx.set_out(node.name, out, nchw, out_shape)


def strided_slice_numpy(data: np.ndarray, begin: list[int], end: list[int], strides: list[int], masks: dict[str, int],
                        ) -> np.ndarray:
    """TF StridedSlice semantics (begin/end/ellipsis/new-axis/shrink masks) on a numpy array."""
    index: list[object] = []
    shrink: list[int] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides, strict=True)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            index.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            index.append(None)
        elif masks["shrink_axis_mask"] & bit:
            index.append(b)
            shrink.append(i)
        else:
            index.append(slice(None if masks["begin_mask"] & bit else b, None if masks["end_mask"] & bit else e, s))
    return np.asarray(data[tuple(index)])


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def expand_spec(rank: int, begin: list[int], end: list[int], strides: list[int], masks: dict[str, int],
                ) -> tuple[list[int], list[int], list[int], dict[str, int], list[int]]:
    """Rewrite a slice spec with ellipsis / new-axis entries into one entry per input dim (masks without those two)
    plus the output positions where new axes of size 1 are inserted afterwards."""
    entries = len(begin)
    new_count = sum(1 for i in range(entries) if masks["new_axis_mask"] >> i & 1)
    out_b: list[int] = []
    out_e: list[int] = []
    out_s: list[int] = []
    bits = {"begin_mask": 0, "end_mask": 0, "shrink_axis_mask": 0}
    new_axes: list[int] = []
    out_dim = 0

    def full() -> None:
        nonlocal out_dim
        bit = 1 << len(out_b)
        bits["begin_mask"] |= bit
        bits["end_mask"] |= bit
        out_b.append(0)
        out_e.append(0)
        out_s.append(1)
        out_dim += 1

    for i in range(entries):
        if masks["ellipsis_mask"] >> i & 1:
            for _ in range(rank - (entries - 1 - new_count)):
                full()
        elif masks["new_axis_mask"] >> i & 1:
            new_axes.append(out_dim)
            out_dim += 1
        else:
            bit = 1 << len(out_b)
            for name in bits:
                if masks[name] >> i & 1:
                    bits[name] |= bit
            out_b.append(begin[i])
            out_e.append(end[i])
            out_s.append(strides[i])
            out_dim += 0 if masks["shrink_axis_mask"] >> i & 1 else 1
    while len(out_b) < rank:
        full()
    return out_b, out_e, out_s, {**bits, "ellipsis_mask": 0, "new_axis_mask": 0}, new_axes


@tf_op("StridedSlice")
def strided_slice(ctx: Context, node: TfNode) -> None:
    """StridedSlice -> StridedSlice(fromType 0, TF masks) with inputs x, begin, end, strides."""
    masks = {name: int(node.attr(name, 0)) for name in _MASKS}
    consts = [ctx.value(key) for key in node.inputs[1:4]]
    value = ctx.value(node.inputs[0])
    shape = ctx.shape(node.inputs[0])
    out_shape = None
    if all(c is not None for c in consts):
        begin, end, strides = ([int(v) for v in c.ravel()] for c in consts)
        if value is not None:
            _const_out(ctx, node, strided_slice_numpy(value, begin, end, strides, masks))
            return
        if shape is not None and all(d is not None for d in shape):
            out_shape = list(strided_slice_numpy(np.empty(shape, np.bool_), begin, end, strides, masks).shape)
    rank = ctx.rank(node.inputs[0])
    inputs = [ctx.x(key) for key in node.inputs[:4]]
    new_axes: list[int] = []
    if (masks["ellipsis_mask"] or masks["new_axis_mask"]) and rank is not None and all(c is not None for c in consts):
        begin, end, strides, masks, new_axes = expand_spec(rank, *([int(v) for v in c.ravel()] for c in consts),
                                                           masks)
        inputs[1:] = [ctx.const(np.asarray(v, np.int32), node.name + "/spec") for v in (begin, end, strides)]
    param = fb.StridedSliceParamT()
    param.Index = fb.DataType.DT_INT32
    param.T = fb.DataType.DT_FLOAT
    param.beginMask, param.endMask = masks["begin_mask"], masks["end_mask"]
    param.ellipsisMask, param.newAxisMask = masks["ellipsis_mask"], masks["new_axis_mask"]
    param.shrinkAxisMask = masks["shrink_axis_mask"]
    param.fromType = 0
    sliced = ctx.graph.unique_name(node.name + "/sliced") if new_axes else node.name
    ctx.emit(OP.StridedSlice, inputs, [sliced], PARAM.StridedSliceParam, param, name=node.name)
    if new_axes:
        unsqueeze = fb.SqueezeParamT()
        unsqueeze.squeezeDims = new_axes
        ctx.emit(OP.Unsqueeze, [sliced], [node.name], PARAM.SqueezeParam, unsqueeze, name=node.name + "/new_axes")
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Slice")
def slice_op(ctx: Context, node: TfNode) -> None:
    """Slice(x, begin, size) -> SliceTf (size -1 = to the end)."""
    value, begin, size = (ctx.value(key) for key in node.inputs[:3])
    shape = ctx.shape(node.inputs[0])
    out_shape = None
    if begin is not None and size is not None:
        b, s = [int(v) for v in begin.ravel()], [int(v) for v in size.ravel()]
        if value is not None:
            index = tuple(slice(x, None if n < 0 else x + n) for x, n in zip(b, s, strict=True))
            _const_out(ctx, node, value[index])
            return
        if shape is not None:
            out_shape = [(None if d is None else d - x) if n < 0 else n for d, x, n in zip(shape, b, s, strict=True)]
    ctx.emit(OP.SliceTf, [ctx.x(key) for key in node.inputs[:3]], [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("GatherV2", "Gather")
def gather(ctx: Context, node: TfNode) -> None:
    """GatherV2(params, indices, axis) -> GatherV2 (constants gather here)."""
    params, indices = ctx.value(node.inputs[0]), ctx.value(node.inputs[1])
    axis_value = ctx.value(node.inputs[2]) if len(node.inputs) > 2 else np.int32(0)
    if axis_value is None:
        raise ConvertError(f"{node.label()}: the axis must be a constant")
    axis = int(np.asarray(axis_value).ravel()[0])
    if params is not None and indices is not None:
        _const_out(ctx, node, np.take(params, indices.astype(np.int64), axis=axis))
        return
    p_shape, i_shape = ctx.shape(node.inputs[0]), ctx.shape(node.inputs[1])
    out_shape = None
    if p_shape is not None and i_shape is not None:
        a = axis % len(p_shape)
        out_shape = [*p_shape[:a], *i_shape, *p_shape[a + 1:]]
    inputs = [ctx.x(node.inputs[0]), ctx.x(node.inputs[1]), ctx.const(np.int32(axis), node.name + "/axis")]
    ctx.emit(OP.GatherV2, inputs, [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)
