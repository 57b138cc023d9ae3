"""Data-movement ops: Concat, Split, Slice, Gather, GatherElements, Pad, TopK, NonZero, Compress, Unique."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .shape import _strided_slice

INT32_MAX = 2**31 - 1


@onnx_op("Concat")
def concat(ctx: Context, node: OnnxNode, *, axis: int = 0) -> None:
    """Concat -> Concat(axis)."""
    param = fb.AxisT()
    param.axis = axis
    ctx.emit(OP.Concat, [name for name in node.inputs if name], node.outputs, PARAM.Axis, param, name=node.name)


@onnx_op("Split")
def split(ctx: Context, node: OnnxNode, *, axis: int = 0, split: list[int] | None = None,
          num_outputs: int | None = None) -> None:
    """Split -> Slice(axis, slicePoints = sizes, sourceType TORCH); no sizes means equal parts."""
    sizes = split
    if sizes is None and node.input(1):
        value = ctx.value(node.input(1))
        if value is None:
            _split_dynamic(ctx, node, axis)
            return
        sizes = [int(v) for v in value.ravel()]
    if sizes is None and num_outputs is not None:
        shape = ctx.shape(node.inputs[0])
        dim = None if shape is None else shape[axis]
        if dim is not None and dim % num_outputs:
            chunk = -(-dim // num_outputs)
            sizes = [chunk] * (num_outputs - 1) + [dim - chunk * (num_outputs - 1)]
    param = fb.SliceT()
    param.axis = axis
    param.slicePoints = None if sizes is None else list(sizes)
    param.sourceType = fb.NetSource.TORCH
    ctx.emit(OP.Slice, [node.inputs[0]], node.outputs, PARAM.Slice, param, name=node.name)


def _split_dynamic(ctx: Context, node: OnnxNode, axis: int) -> None:
    """Split with run-time sizes: each output is a StridedSlice between running sums of the sizes."""
    sizes = ctx.reshape(node.inputs[1], [-1])
    ends = ctx.out(OP.CumSum, [sizes, ctx.const(np.int32(0), "axis")], None, PARAM.CumSum, fb.CumSumT(),
                   name="CumSum")
    begins = ctx.binary(BIN.SUB, ends, sizes)
    axis_name = ctx.const(np.asarray([axis], np.int32), "axis")
    for i, out in enumerate(node.outputs):
        index = ctx.const(np.asarray([i], np.int32), "index")
        begin = ctx.out(OP.GatherV2, [begins, index, ctx.const(np.int32(0))], name="GatherV2")
        end = ctx.out(OP.GatherV2, [ends, index, ctx.const(np.int32(0))], name="GatherV2")
        _strided_slice(ctx, [node.inputs[0], begin, end, axis_name], out)


@onnx_op("Slice")
def slice_v1(ctx: Context, node: OnnxNode, *, axes: list[int] | None = None, ends: list[int] | None = None,
             starts: list[int] | None = None) -> None:
    """Slice (opset 1-9, attributes) -> StridedSlice(fromType 1) with Const starts/ends/axes."""
    if starts is None or ends is None:
        raise UseFunctionBody(f"{node.label()}: starts and ends are required")
    inputs = [node.inputs[0], ctx.const(np.asarray(starts, np.int64), "starts"),
              ctx.const(np.asarray(ends, np.int64), "ends")]
    if axes is not None:
        inputs.append(ctx.const(np.asarray(axes, np.int64), "axes"))
    _strided_slice(ctx, inputs, node.outputs[0])


@onnx_op("Slice", since=10)
def slice_v10(ctx: Context, node: OnnxNode) -> None:
    """Slice -> StridedSlice(fromType 1) with inputs x, starts, ends[, axes[, steps]] (int32)."""
    inputs = [node.inputs[0], node.inputs[1], node.inputs[2]]
    axes, steps = node.input(3), node.input(4)
    if steps and not axes:
        count = ctx.need_value(node, 1, "starts").size
        axes = ctx.const(np.arange(count, dtype=np.int32), "axes")
    if axes:
        inputs.append(axes)
    if steps:
        inputs.append(steps)
    _strided_slice(ctx, inputs, node.outputs[0])


@onnx_op("Gather")
def gather(ctx: Context, node: OnnxNode, *, axis: int = 0) -> None:
    """Gather -> GatherV2(x, indices, axis); constant negative indices are made positive when the dim is known."""
    indices = node.inputs[1]
    value = ctx.value(indices)
    if value is not None and (value < 0).any():
        shape = ctx.shape(node.inputs[0])
        dim = None if shape is None else shape[axis]
        if dim is None:
            raise UseFunctionBody(f"{node.label()}: negative indices need a known size of axis {axis}")
        indices = ctx.const(np.where(value < 0, value + dim, value).astype(np.int32), indices)
    elif value is None:
        indices = _wrap_indices(ctx, node, indices, axis)
    ctx.emit(OP.GatherV2, [node.inputs[0], indices, ctx.const(np.int32(axis), "axis")], node.outputs,
             name=node.name)


def _wrap_indices(ctx: Context, node: OnnxNode, indices: str, axis: int) -> str:
    """(idx + dim) mod dim with dim read from Shape(x) at run time (MNNConvert adds the same fix-up)."""
    if axis < 0:
        axis += ctx.need_rank(node, node.inputs[0])
    shape = ctx.shape(node.inputs[0])
    dim = None if shape is None else shape[axis]
    if dim is not None:
        size = ctx.const(np.int32(dim), "dim")
    else:
        full = ctx.shape_of(node.inputs[0])
        size = ctx.out(OP.GatherV2, [full, ctx.const(np.int32(axis)), ctx.const(np.int32(0))], name="GatherV2")
    return ctx.binary(BIN.FLOORMOD, ctx.binary(BIN.ADD, indices, size), size)


@onnx_op("GatherElements")
def gather_elements(ctx: Context, node: OnnxNode, *, axis: int = 0) -> None:
    """GatherElements -> GatherElements(x, indices, axis); indices wrapped into [0, dim) unless known non-negative."""
    if axis < 0:
        axis += ctx.need_rank(node, node.inputs[0])
    indices = node.inputs[1]
    value = ctx.value(indices)
    if value is None or (value < 0).any():
        indices = _wrap_indices(ctx, node, indices, axis)
    ctx.emit(OP.GatherElements, [node.inputs[0], indices, ctx.const(np.int32(axis), "axis")], node.outputs,
             name=node.name)


@onnx_op("GatherND")
def gather_nd(ctx: Context, node: OnnxNode, *, batch_dims: int = 0) -> None:
    """GatherND -> GatherND. With batch_dims b (a static index shape), each index row gets its own b batch
    coordinates in front (a constant grid concatenated on the last axis), which is GatherND with batch_dims 0."""
    indices = node.inputs[1]
    if batch_dims:
        shape = ctx.shape(indices)
        if shape is None or None in shape:
            raise UseFunctionBody(f"{node.label()}: batch_dims needs a static indices shape")
        rows = [int(d) for d in shape[:-1]]
        grid = np.stack(np.meshgrid(*[np.arange(d) for d in rows[:batch_dims]],
                                    *[np.zeros(d, np.int64) for d in rows[batch_dims:]], indexing="ij")[:batch_dims],
                        axis=-1).astype(np.int32)
        param = fb.AxisT()
        param.axis = -1
        index32 = ctx.out(OP.Cast, [indices], None, PARAM.CastParam, _cast_param(fb.DataType.DT_INT32), name="Cast")
        indices = ctx.out(OP.Concat, [ctx.const(grid, "batch_coords"), index32], None, PARAM.Axis, param,
                          name="Concat")
    ctx.emit(OP.GatherND, [node.inputs[0], indices], node.outputs, name=node.name)



_PAD_MODES = {"constant": fb.PadValueMode.CONSTANT, "reflect": fb.PadValueMode.REFLECT,
              "edge": fb.PadValueMode.EDGE, "wrap": None}


def _pad_op(ctx: Context, node: OnnxNode, mode: str, pads_name: str, value_name: str) -> None:
    if _PAD_MODES.get(mode) is None:
        raise UseFunctionBody(f"{node.label()}: pad mode '{mode}' is not supported")
    param = fb.PadParamT()
    param.mode = _PAD_MODES[mode]
    inputs = [node.inputs[0], pads_name] + ([value_name] if value_name else [])
    ctx.emit(OP.Padding, inputs, node.outputs, PARAM.PadParam, param, name=node.name)


def _pairs(pads: np.ndarray) -> np.ndarray:
    """ONNX [b0, b1, .., e0, e1, ..] -> MNN [b0, e0, b1, e1, ..]."""
    return np.asarray(pads, np.int64).reshape(2, -1).T.reshape(-1).astype(np.int32)


@onnx_op("Pad")
def pad_v2(ctx: Context, node: OnnxNode, *, mode: str = "constant", pads: list[int] | None = None,
           paddings: list[int] | None = None, value: float = 0.0) -> None:
    """Pad (opset 2-10, attributes) -> Padding with a Const int32 pads input."""
    raw = pads if pads is not None else paddings
    if raw is None:
        raise UseFunctionBody(f"{node.label()}: pads are required")
    value_name = ctx.const(np.float32(value), "value") if value else ""
    _pad_op(ctx, node, mode, ctx.const(_pairs(np.asarray(raw)), "pads"), value_name)


def _runtime_axes_pads(ctx: Context, node: OnnxNode) -> str:
    """Pads for run-time axes: ScatterNd the [n, 2] (begin, end) pairs into a zero [rank, 2] table, flattened."""
    rank = ctx.need_rank(node, node.inputs[0])
    rank_name = ctx.const(np.int32(rank))
    axes = ctx.binary(BIN.MOD, ctx.binary(BIN.ADD, node.inputs[3], rank_name), rank_name)  # int MOD: Python mod
    indices = ctx.reshape(axes, [-1, 1])
    pairs = ctx.permute(ctx.reshape(node.inputs[1], [2, -1]), [1, 0])
    table = ctx.out(OP.ScatterNd, [indices, pairs, ctx.const(np.int32([rank, 2]))], name="ScatterNd")
    return ctx.reshape(table, [-1])


@onnx_op("Pad", since=11)
def pad(ctx: Context, node: OnnxNode, *, mode: str = "constant") -> None:
    """Pad -> Padding(x, pads as per-dim pairs[, value]); run-time pads are reordered with Reshape/Permute."""
    pads_value = ctx.value(node.inputs[1])
    axes = ctx.value(node.input(3))
    if pads_value is not None and axes is not None:
        rank = ctx.need_rank(node, node.inputs[0])
        full = np.zeros(2 * rank, np.int64)
        half = len(axes)
        for i, a in enumerate(axes.ravel()):
            full[int(a) % rank] = pads_value[i]
            full[int(a) % rank + rank] = pads_value[i + half]
        pads_value = full
    elif node.input(3):
        _pad_op(ctx, node, mode, _runtime_axes_pads(ctx, node), node.input(2))
        return
    if mode == "wrap" and pads_value is not None:
        _wrap_pad(ctx, node, np.asarray(pads_value, np.int64).reshape(-1))
        return
    if pads_value is not None:
        pads_name = ctx.const(_pairs(pads_value), "pads")
    else:
        pairs = ctx.permute(ctx.reshape(node.inputs[1], [2, -1]), [1, 0])
        pads_name = ctx.reshape(pairs, [-1])
    _pad_op(ctx, node, mode, pads_name, node.input(2))


def _wrap_pad(ctx: Context, node: OnnxNode, pads: np.ndarray) -> None:
    """Pad mode 'wrap' with constant pads (begins, then ends) on a static shape: per padded axis, the last `begin`
    and the first `end` entries sliced off and concatenated around x (np.pad's wrap; pads up to the dim size)."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    rank = len(pads) // 2
    if shape is None or None in shape or (pads < 0).any() or \
            any(pads[a] > shape[a] or pads[a + rank] > shape[a] for a in range(rank)):
        raise UseFunctionBody(f"{node.label()}: wrap padding needs a static shape and pads from 0 to the dim size")
    axes = [a for a in range(rank) if pads[a] or pads[a + rank]]
    if not axes:
        ctx.alias(x, node.outputs[0])
        return
    for k, axis in enumerate(axes):
        before, after, dim = int(pads[axis]), int(pads[axis + rank]), int(shape[axis])
        where = ctx.const(np.array([axis], np.int32), "axis")
        parts = [_strided_slice(ctx, [x, ctx.const(np.array([dim - before], np.int32)),
                                      ctx.const(np.array([dim], np.int32)), where])] if before else []
        parts.append(x)
        if after:
            parts.append(_strided_slice(ctx, [x, ctx.const(np.array([0], np.int32)),
                                              ctx.const(np.array([after], np.int32)), where]))
        param = fb.AxisT()
        param.axis = axis
        x = ctx.out(OP.Concat, parts, [node.outputs[0]] if k == len(axes) - 1 else None, PARAM.Axis, param,
                    name=None if k == len(axes) - 1 else "Concat")


@onnx_op("TopK")
def topk(ctx: Context, node: OnnxNode, *, axis: int = -1, largest: int = 1, sorted: int = 1) -> None:
    """TopK -> TopKV2(x, k, axis) (int32 indices)."""
    param = fb.TopKV2T()
    param.sorted = bool(sorted)
    param.largest = bool(largest)
    k = node.inputs[1]
    k_value = ctx.value(k)
    if k_value is not None:
        k = ctx.const(np.asarray(k_value, np.int64).reshape(1), "k")
    ctx.emit(OP.TopKV2, [node.inputs[0], k, ctx.const(np.int32(axis), "axis")], node.outputs, PARAM.TopKV2, param,
             name=node.name)


@onnx_op("CumSum")
def cumsum(ctx: Context, node: OnnxNode, *, exclusive: int = 0, reverse: int = 0) -> None:
    """CumSum -> CumSum(x, axis) with exclusive / reverse flags."""
    param = fb.CumSumT()
    param.exclusive = bool(exclusive)
    param.reverse = bool(reverse)
    ctx.emit(OP.CumSum, [node.inputs[0], node.inputs[1]], node.outputs, PARAM.CumSum, param, name=node.name)


@onnx_op("CumProd")
def cumprod(ctx: Context, node: OnnxNode, *, exclusive: int = 0, reverse: int = 0) -> None:
    """CumProd as sign * exp(CumSum(log|x|)), zero once a zero has been seen (float arithmetic, ints rounded)."""
    x, axis = node.inputs[0], node.inputs[1]
    floating = ctx.is_float(x)
    if not floating:
        x = ctx.out(OP.Cast, [x], None, PARAM.CastParam, _cast_param(fb.DataType.DT_FLOAT), name="Cast")

    def running(values: str) -> str:
        param = fb.CumSumT()
        param.exclusive = bool(exclusive)
        param.reverse = bool(reverse)
        return ctx.out(OP.CumSum, [values, axis], None, PARAM.CumSum, param, name="CumSum")

    zero = ctx.const(np.float32(0))
    is_zero = ctx.out(OP.Cast, [ctx.binary(BIN.EQUAL, x, zero)], None, PARAM.CastParam,
                      _cast_param(fb.DataType.DT_FLOAT), name="Cast")
    is_negative = ctx.out(OP.Cast, [ctx.binary(BIN.GREATER, zero, x)], None, PARAM.CastParam,
                          _cast_param(fb.DataType.DT_FLOAT), name="Cast")
    magnitude = ctx.binary(BIN.ADD, ctx.unary(UN.ABS, x), is_zero)  # zeros -> 1 so log stays finite
    product = ctx.unary(UN.EXP, running(ctx.unary(UN.LOG, magnitude)))
    parity = ctx.binary(BIN.FLOORMOD, running(is_negative), ctx.const(np.float32(2)))  # float FLOORMOD: Python mod
    sign = ctx.binary(BIN.SUB, ctx.const(np.float32(1)), ctx.binary(BIN.MUL, parity, ctx.const(np.float32(2))))
    seen_zero = ctx.binary(BIN.GREATER, running(is_zero), zero)
    result = ctx.out(OP.Select, [seen_zero, zero, ctx.binary(BIN.MUL, sign, product)], name="Select")
    if floating:
        ctx.alias(result, node.outputs[0])
        return
    rounded = ctx.unary(UN.FLOOR, ctx.binary(BIN.ADD, result, ctx.const(np.float32(0.5))))
    ctx.emit(OP.Cast, [rounded], node.outputs, PARAM.CastParam, _cast_param(fb.DataType.DT_INT32))


def _cast_param(dtype: int) -> fb.CastParamT:
    param = fb.CastParamT()
    param.dstT = dtype
    return param


def _true_coordinates(ctx: Context, x: str) -> str:
    """Where(x != 0): the int32 [count, rank] coordinates of x's non-zero elements, row-major (TF's where; the
    count, so the shape, comes from x's values: see `mnnpy.nn._segments` for how such a net runs)."""
    zero = ctx.const(np.float32(0) if ctx.is_float(x) else np.int32(0), "zero")
    # an empty Extra parameter, as MNN's own converter writes it: official MNN's Module API gives wrong counts
    # (the element count of cond) for a Where without one
    return ctx.out(OP.Where, [ctx.binary(BIN.NOTEQUAL, x, zero)], None, PARAM.Extra, fb.ExtraT(), name="Where")


@onnx_op("NonZero", since=9)
def non_zero(ctx: Context, node: OnnxNode) -> None:
    """NonZero -> Where(x != 0), transposed to ONNX's [rank, count] (int32, as MNN holds int64)."""
    ctx.permute(_true_coordinates(ctx, node.inputs[0]), [1, 0], node.outputs[0])


@onnx_op("Compress", since=9)
def compress(ctx: Context, node: OnnxNode, *, axis: int | None = None) -> None:
    """Compress (x, condition) -> GatherV2 of x (flattened without an axis) at the positions where the 1-D
    condition is true: Where(condition != 0) reshaped to [count]. A condition shorter than the axis keeps only
    positions it covers, as ONNX says."""
    x = node.inputs[0]
    if axis is None:
        x, axis = ctx.reshape(x, [-1]), 0
    elif axis < 0:
        axis += ctx.need_rank(node, x)
    positions = ctx.reshape(_true_coordinates(ctx, node.inputs[1]), [-1])
    ctx.emit(OP.GatherV2, [x, positions, ctx.const(np.int32(axis), "axis")], node.outputs, name=node.name)


@onnx_op("Unique", since=11)
def unique(ctx: Context, node: OnnxNode, *, axis: int | None = None, sorted: int = 1) -> None:
    """Unique without an axis, sorted -> Unique (four outputs: values, first indices, inverse indices, counts), as
    MNN's converter writes it. MNN's Unique flattens and sorts whatever the attributes say, so an axis or
    sorted=0 is refused rather than computed otherwise."""
    if axis is not None or not sorted:
        raise UseFunctionBody(f"{node.label()}: only the sorted form without an axis is supported (MNN's Unique)")
    outputs = [node.outputs[i] if i < len(node.outputs) and node.outputs[i] else ctx.graph.unique_name(
        f"{node.name}_unused{i}") for i in range(4)]
    ctx.emit(OP.Unique, [node.inputs[0]], outputs, name=node.name)


@onnx_op("TensorScatter", since=24)
def tensor_scatter(ctx: Context, node: OnnxNode, *, axis: int = -2, mode: str = "linear") -> None:
    """TensorScatter (a KV-cache write) -> GatherElements + Select: the cache seen as [B, M, L, K] (L the
    sequence axis), each position p of batch b reads update row p - write_indices[b] (modulo L in circular mode)
    where that row exists, else keeps the cache. Exact (no arithmetic on the values); static cache and update
    shapes. A linear write past the end of the cache (an error in the ONNX reference) leaves the cache as it is."""
    cache, update, where = node.inputs[0], node.inputs[1], node.input(2)
    cache_shape, update_shape = ctx.shape(cache), ctx.shape(update)
    if cache_shape is None or update_shape is None or None in cache_shape or None in update_shape \
            or mode not in ("linear", "circular"):
        raise UseFunctionBody(f"{node.label()}: needs static cache and update shapes and mode linear or circular")
    rank = len(cache_shape)
    axis %= rank
    dims, steps = [int(v) for v in cache_shape], [int(v) for v in update_shape]
    if axis == 0 or len(steps) != rank or any(a != b for i, (a, b) in enumerate(zip(dims, steps, strict=True))
                                             if i != axis) or steps[axis] > dims[axis]:
        raise UseFunctionBody(f"{node.label()}: cache {dims} and update {steps} do not fit along axis {axis}")
    batch, length, count = dims[0], dims[axis], steps[axis]
    inner = int(np.prod(dims[1:axis], dtype=np.int64))
    outer = int(np.prod(dims[axis + 1:], dtype=np.int64))
    positions = ctx.const(np.arange(length, dtype=np.int32).reshape(1, length), "positions")
    if where:
        start = ctx.reshape(ctx.cast(where, fb.DataType.DT_INT32), [batch, 1])
        rel = ctx.binary(BIN.SUB, positions, start)  # [B, L]: the update row each cache position takes
    else:
        rel = ctx.binary(BIN.ADD, positions, ctx.const(np.zeros((batch, 1), np.int32)))
    if mode == "circular":
        rel = ctx.binary(BIN.MOD, rel, ctx.const(np.int32(length)))  # MNN's int MOD is Python's (see Mod)
        hit = ctx.binary(BIN.LESS, rel, ctx.const(np.int32(count)))
    else:
        hit = ctx.binary(BIN.MUL, ctx.binary(BIN.GREATER_EQUAL, rel, ctx.const(np.int32(0))),
                         ctx.binary(BIN.LESS, rel, ctx.const(np.int32(count))))
    row = ctx.binary(BIN.MAXIMUM, ctx.binary(BIN.MINIMUM, rel, ctx.const(np.int32(count - 1))),
                     ctx.const(np.int32(0)))
    index = ctx.binary(BIN.ADD, ctx.reshape(row, [batch, 1, length, 1]),
                       ctx.const(np.zeros((1, inner, 1, outer), np.int32), "spread"))  # [B, M, L, K]
    rows = ctx.out(OP.GatherElements, [ctx.reshape(update, [batch, inner, count, outer]), index,
                                       ctx.const(np.int32(2), "axis")], name="GatherElements")
    kept = ctx.out(OP.Select, [ctx.reshape(hit, [batch, 1, length, 1]), rows,
                               ctx.reshape(cache, [batch, inner, length, outer])], name="Select")
    ctx.reshape(kept, dims, node.outputs[0])
