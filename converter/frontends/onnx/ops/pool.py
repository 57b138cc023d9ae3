"""Pooling: MaxPool, AveragePool -> Pooling; GlobalAveragePool, GlobalMaxPool -> Pooling3D(isGlobal), as MNNConvert.
Dilated windows, which MNN's Pool has no field for, become a sum or max of strided slices (`_dilated_pool`)."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .conv import same_lower_pads
from .shape import _strided_slice


def _pool(ctx: Context, node: OnnxNode, pool_type: int, auto_pad: str, ceil_mode: int, kernel_shape: list[int],
          pads: list[int] | None, strides: list[int] | None, count_include_pad: int) -> None:
    if len(kernel_shape) == 3:
        from .conv3d import pool3d

        pool3d(ctx, node, pool_type, auto_pad, ceil_mode, kernel_shape, pads, strides, count_include_pad)
        return
    if len(kernel_shape) not in (1, 2):
        raise UseFunctionBody(f"{node.label()}: {len(kernel_shape)}-D pooling is not supported yet")
    one_d = len(kernel_shape) == 1
    x, out = node.inputs[0], node.outputs[0]
    if one_d:
        kernel_shape = [kernel_shape[0], 1]
        strides = None if strides is None else [strides[0], 1]
        pads = None if pads is None else [pads[0], 0, pads[1], 0]
        x = ctx.squeeze(x, [3], unsqueeze=True)
        out = ctx.graph.unique_name(out + "_2d")
    if auto_pad == "SAME_LOWER" and not one_d:
        explicit = same_lower_pads(ctx, x, kernel_shape, strides, None)
        if explicit is not None:
            auto_pad, pads = "NOTSET", explicit
    elif auto_pad == "SAME_UPPER" and pool_type == fb.PoolType.AVEPOOL and count_include_pad and not one_d:
        # explicit pads: official MNN 3.6.1's SAME average leaves the padding out of the count whatever countType
        lower = same_lower_pads(ctx, x, kernel_shape, strides, None)
        if lower is not None:
            auto_pad, pads = "NOTSET", [lower[2], lower[3], lower[0], lower[1]]  # the extra pad at the end
    if ceil_mode and auto_pad in ("NOTSET", "") and not (pool_type == fb.PoolType.AVEPOOL and count_include_pad):
        shape = ctx.shape(x) if not one_d else None
        if one_d and ctx.shape(node.inputs[0]) is not None:
            shape = [*ctx.shape(node.inputs[0]), 1]
        if shape is not None and len(shape) == 4 and None not in shape[2:]:
            pads = _ceil_as_floor_pads(shape[2:], kernel_shape, strides or [1, 1], pads or [0, 0, 0, 0])
            ceil_mode = 0
    if pool_type == fb.PoolType.AVEPOOL and count_include_pad and pads is not None and \
            auto_pad in ("NOTSET", "") and (pads[0] != pads[2] or pads[1] != pads[3]):
        # MNN 3.6.1 averages asymmetric padding wrongly when padding counts: pad explicitly with zeros instead
        pad_param = fb.PadParamT()
        pairs = np.asarray([0, 0, 0, 0, pads[0], pads[2], pads[1], pads[3]], np.int32)
        x = ctx.out(OP.Padding, [x, ctx.const(pairs, "pads")], None, PARAM.PadParam, pad_param, name="Padding")
        pads = None
    param = fb.PoolT()
    param.type = pool_type
    param.kernelY, param.kernelX = kernel_shape
    param.strideY, param.strideX = strides or [1, 1]
    param.ceilModel = bool(ceil_mode)
    param.isGlobal = False
    if auto_pad in ("NOTSET", ""):
        param.padType = fb.PoolPadType.CAFFE
        if pads is not None:
            param.padY, param.padX = pads[0], pads[1]
            param.pads = list(pads)
    elif auto_pad == "VALID":
        param.padType = fb.PoolPadType.VALID
    elif auto_pad == "SAME_UPPER":
        param.padType = fb.PoolPadType.SAME
    else:
        raise UseFunctionBody(f"{node.label()}: auto_pad={auto_pad} is not supported by MNN")
    if pool_type == fb.PoolType.AVEPOOL:
        param.countType = fb.AvgPoolCountType.INCLUDE_PADDING if count_include_pad else \
            fb.AvgPoolCountType.EXCLUDE_PADDING
    ctx.emit(OP.Pooling, [x], [out], PARAM.Pool, param, name=node.name)
    if one_d:
        ctx.squeeze(out, [3], output=node.outputs[0])


def _ceil_as_floor_pads(spatial: list[int], kernel: list[int], strides: list[int], pads: list[int]) -> list[int]:
    """End pads that make floor-mode pooling produce ONNX's ceil-mode size (whose last window must start inside the
    input or the begin padding; MNN's ceil mode lacks that rule)."""
    result = list(pads)
    for i, (size, k, s) in enumerate(zip(spatial, kernel, strides, strict=True)):
        begin, end = pads[i], pads[i + 2]
        out = -(-(size + begin + end - k) // s) + 1
        if (out - 1) * s >= size + begin:
            out -= 1
        result[i + 2] = max(end, (out - 1) * s + k - size - begin)
    return result


class _Taps(NamedTuple):
    """A pooling window's kernel taps as strided slices of the padded input (``_pool_taps``)."""

    pieces: list[tuple[tuple[int, ...], str]]  # (tap, slice of the padded input: [N, C, *outs])
    outs: list[int]
    pads: list[int]  # begin pads, then end pads (as declared or from auto_pad)
    spatial: list[int]


def _pool_taps(ctx: Context, node: OnnxNode, kind: str, x: str, auto_pad: str, ceil_mode: int, kernel: list[int],
               dilations: list[int], pads: list[int] | None, strides: list[int] | None) -> _Taps:
    """One strided slice per kernel tap of the input padded with -inf ("max") or 0, in row-major tap order.
    ONNX's rules: the output size by floor or ceil mode, where a ceil-mode window must start inside the input or
    its begin padding; SAME pads split with the odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER)."""
    shape = ctx.shape(x)
    n = len(kernel)
    if shape is None or len(shape) != n + 2 or None in shape[2:]:
        raise UseFunctionBody(f"{node.label()}: this pooling needs the input's spatial shape")
    spatial = [int(v) for v in shape[2:]]
    strides = list(strides or [1] * n)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        outs = [-(-size // s) for size, s in zip(spatial, strides, strict=True)]
        total = [max(0, (o - 1) * s + e - size) for o, s, e, size in zip(outs, strides, extent, spatial, strict=True)]
        small = [t // 2 for t in total]
        begin = small if auto_pad == "SAME_UPPER" else [t - h for t, h in zip(total, small, strict=True)]
        pads = begin + [t - b for t, b in zip(total, begin, strict=True)]
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    pads = list(pads or [0] * (2 * n))
    outs = []
    for i in range(n):
        span = spatial[i] + pads[i] + pads[i + n] - extent[i]
        o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= spatial[i] + pads[i]:
            o -= 1
        outs.append(o)
    if min(outs) < 1:
        raise UseFunctionBody(f"{node.label()}: the pooling window does not fit the input")
    # pad by the declared begin padding, and at the end by whatever the last window reaches
    ends = [max(0, (o - 1) * s + e - b - size)
            for o, s, e, b, size in zip(outs, strides, extent, pads[:n], spatial, strict=True)]
    fill = np.float32(-np.inf) if kind == "max" else np.float32(0.0)
    pairs = np.asarray([0, 0, 0, 0] + [v for i in range(n) for v in (pads[i], ends[i])], np.int32)
    padded = ctx.out(OP.Padding, [x, ctx.const(pairs, "pads"), ctx.const(fill, "value")], None, PARAM.PadParam,
                     fb.PadParamT(), name="Padding") if pairs.any() else x
    axes = ctx.const(np.arange(2, n + 2, dtype=np.int32), "axes")
    steps = ctx.const(np.asarray(strides, np.int32), "steps")
    pieces = []
    for tap in itertools.product(*(range(k) for k in kernel)):
        starts = [t * d for t, d in zip(tap, dilations, strict=True)]
        stops = [b + (o - 1) * s + 1 for b, o, s in zip(starts, outs, strides, strict=True)]
        pieces.append((tap, _strided_slice(ctx, [padded, ctx.const(np.asarray(starts, np.int32), "starts"),
                                                 ctx.const(np.asarray(stops, np.int32), "ends"), axes, steps])))
    return _Taps(pieces, outs, pads, spatial)


def _dilated_pool(ctx: Context, node: OnnxNode, kind: str, x: str, auto_pad: str, ceil_mode: int,
                  kernel: list[int], dilations: list[int], pads: list[int] | None, strides: list[int] | None,
                  count_include_pad: int = 0) -> str:
    """A dilated pooling window (any spatial rank, static shape) as one strided slice per kernel tap of the padded
    input (``_pool_taps``), combined by MAXIMUM ("max") or summed ("sum", "avg"; "avg" then times a constant 1 /
    count per output position): padding and the ceil overhang never win a max; an average counts the declared
    padding only with count_include_pad, never the overhang. Returns the result's name."""
    taps = _pool_taps(ctx, node, kind, x, auto_pad, ceil_mode, kernel, dilations, pads, strides)
    n, outs, pads, spatial = len(kernel), taps.outs, taps.pads, taps.spatial
    strides = list(strides or [1] * n)
    result = ""
    for _, piece in taps.pieces:
        result = piece if not result else ctx.binary(BIN.MAXIMUM if kind == "max" else BIN.ADD, result, piece)
    if kind != "avg":
        return result
    counts = np.ones(outs, np.float64)
    for i in range(n):  # taps per output position along axis i, inside the input (or the declared padding)
        lo, hi = (-pads[i], spatial[i] + pads[i + n]) if count_include_pad else (0, spatial[i])
        first = np.arange(outs[i]) * strides[i] - pads[i]
        taps = first[:, None] + np.arange(kernel[i])[None, :] * dilations[i]
        per_axis = ((taps >= lo) & (taps < hi)).sum(axis=1)
        counts = counts * per_axis.reshape([-1 if j == i else 1 for j in range(n)])
    scale = (1.0 / np.maximum(counts, 1.0)).astype(np.float32).reshape([1, 1, *outs])
    return ctx.binary(BIN.MUL, result, ctx.const(scale, "scale"))


@onnx_op("MaxPool")
def max_pool(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
             storage_order: int = 0, strides: list[int] | None = None) -> None:
    """MaxPool -> Pooling(MAXPOOL); with the Indices output, strided slices per tap (``_max_with_indices``)."""
    if kernel_shape is None:
        raise UseFunctionBody(f"{node.label()}: kernel_shape is required")
    if len(node.outputs) > 1 and node.outputs[1]:
        _max_with_indices(ctx, node, auto_pad, ceil_mode, kernel_shape, dilations or [1] * len(kernel_shape), pads,
                          strides, storage_order)
        return
    if dilations is not None and any(d != 1 for d in dilations):
        result = _dilated_pool(ctx, node, "max", node.inputs[0], auto_pad, ceil_mode, kernel_shape, dilations, pads,
                               strides)
        ctx.alias(result, node.outputs[0])
        return
    _pool(ctx, node, fb.PoolType.MAXPOOL, auto_pad, ceil_mode, kernel_shape, pads, strides, 0)


def _max_with_indices(ctx: Context, node: OnnxNode, auto_pad: str, ceil_mode: int, kernel: list[int],
                      dilations: list[int], pads: list[int] | None, strides: list[int] | None,
                      storage_order: int) -> None:
    """MaxPool with its Indices output (MNN's Pool has none), 2-D, static shape: the max of the taps' strided
    slices, and the flat input position (over N, C, H, W; column-major within a channel with storage_order 1) of
    the first tap in row-major order that holds it, chosen by a Select per tap from constant position tables.
    Padding never wins: a tap's position counts only where it lies inside the input."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    if len(kernel) != 2 or shape is None or len(shape) != 4 or None in shape:
        raise UseFunctionBody(f"{node.label()}: the Indices output of MaxPool needs a 2-D pool with a static input "
                              f"shape")
    batch, channels, height, width = (int(v) for v in shape)
    taps = _pool_taps(ctx, node, "max", x, auto_pad, ceil_mode, kernel, dilations, pads, strides)
    sh, sw = strides or [1, 1]
    oh, ow = taps.outs
    best = ""
    for _, piece in taps.pieces:
        best = piece if not best else ctx.binary(BIN.MAXIMUM, best, piece)
    ctx.alias(best, node.outputs[0])
    rows = np.arange(oh).reshape(-1, 1) * sh - taps.pads[0]
    cols = np.arange(ow).reshape(1, -1) * sw - taps.pads[1]
    index = ""
    for (i, j), piece in reversed(taps.pieces):  # the first tap that holds the max wins: it is selected last
        h, w = np.broadcast_arrays(rows + i * dilations[0], cols + j * dilations[1])
        inside = (h >= 0) & (h < height) & (w >= 0) & (w < width)
        if not inside.any():
            continue
        flat = (h * width + w) if storage_order == 0 else (h + w * height)
        table = ctx.const(np.where(inside, flat, 0).astype(np.int32).reshape(1, 1, oh, ow), "pool_index")
        if not index:
            index = table
            continue
        hit = ctx.binary(BIN.EQUAL, piece, best)
        if not inside.all():
            hit = ctx.binary(BIN.MUL, hit, ctx.const(inside.astype(np.int32).reshape(1, 1, oh, ow), "inside"))
        index = ctx.out(OP.Select, [hit, table, index], name="Select")
    planes = (np.arange(batch * channels, dtype=np.int32) * (height * width)).reshape(batch, channels, 1, 1)
    ctx.binary(BIN.ADD, index, ctx.const(planes, "plane_offset"), node.outputs[1])


@onnx_op("MaxUnpool", since=9)
def max_unpool(ctx: Context, node: OnnxNode, *, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
               strides: list[int] | None = None) -> None:
    """MaxUnpool -> ScatterNd of the values at their flat indices into zeros, reshaped. The output shape is the
    output_shape input (constant or at run time) or inferred from the kernel; as onnxruntime and PyTorch do, the
    indices address that shape (MaxPool's indices of an input of that shape). The ONNX reference instead places them
    in the inferred shape and pads that to output_shape; where the two shapes differ they disagree."""
    x, indices, output_shape = node.inputs[0], node.inputs[1], node.input(2)
    if not output_shape:
        shape = ctx.shape(x)
        if shape is None or None in shape or kernel_shape is None:
            raise UseFunctionBody(f"{node.label()}: without output_shape, MaxUnpool needs a static input shape")
        n = len(kernel_shape)
        strides = list(strides or [1] * n)
        pads = list(pads or [0] * (2 * n))
        dims = [int(shape[0]), int(shape[1])] + [(int(shape[i + 2]) - 1) * strides[i] - pads[i] - pads[i + n]
                                                 + kernel_shape[i] for i in range(n)]
        output_shape = ctx.const(np.asarray(dims, np.int32), "output_shape")
        total = ctx.const(np.asarray([np.prod(dims)], np.int32), "total")
    else:
        output_shape = ctx.cast(output_shape, fb.DataType.DT_INT32)
        reduce = fb.ReductionParamT()
        reduce.operation = fb.ReductionType.PROD
        reduce.dim = [0]
        reduce.keepDims = True
        total = ctx.out(OP.Reduction, [output_shape], None, PARAM.ReductionParam, reduce, name="Reduction")
    flat_index = ctx.reshape(ctx.cast(indices, fb.DataType.DT_INT32), [-1, 1])
    values = ctx.reshape(x, [-1])
    scattered = ctx.out(OP.ScatterNd, [flat_index, values, total], name="ScatterNd")
    ctx.reshape(scattered, output_shape, node.outputs[0])


@onnx_op("AveragePool")
def average_pool(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
                 count_include_pad: int = 0, dilations: list[int] | None = None,
                 kernel_shape: list[int] | None = None, pads: list[int] | None = None,
                 strides: list[int] | None = None) -> None:
    """AveragePool -> Pooling(AVEPOOL, countType by count_include_pad)."""
    if kernel_shape is None:
        raise UseFunctionBody(f"{node.label()}: kernel_shape is required")
    if dilations is not None and any(d != 1 for d in dilations):
        result = _dilated_pool(ctx, node, "avg", node.inputs[0], auto_pad, ceil_mode, kernel_shape, dilations, pads,
                               strides, count_include_pad)
        ctx.alias(result, node.outputs[0])
        return
    _pool(ctx, node, fb.PoolType.AVEPOOL, auto_pad, ceil_mode, kernel_shape, pads, strides, count_include_pad)


@onnx_op("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: Context, node: OnnxNode) -> None:
    """GlobalAveragePool / GlobalMaxPool -> Pooling3D(isGlobal) (any spatial rank)."""
    param = fb.Pool3DT()
    param.isGlobal = True
    param.type = fb.PoolType.AVEPOOL if node.op_type == "GlobalAveragePool" else fb.PoolType.MAXPOOL
    param.padType = fb.PoolPadType.CAFFE
    ctx.emit(OP.Pooling3D, [node.inputs[0]], node.outputs, PARAM.Pool3D, param, name=node.name)


@onnx_op("LpPool")
def lp_pool(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
            dilations: list[int] | None = None, kernel_shape: list[int] | None = None, p: int = 2,
            pads: list[int] | None = None, strides: list[int] | None = None) -> None:
    """LpPool -> (AveragePool(|x|^p, padding counted) * kernel area)^(1/p); dilated: the sum of strided slices."""
    if kernel_shape is None:
        raise UseFunctionBody(f"{node.label()}: needs kernel_shape")
    x = node.inputs[0]
    powered = ctx.unary(UN.SQUARE, x) if p == 2 else \
        ctx.binary(BIN.POW, ctx.unary(UN.ABS, x), ctx.const(np.float32(p)))
    if ctx.shape(powered) is None and ctx.shape(x) is not None:
        ctx.shapes[powered] = ctx.shape(x)  # elementwise: what SAME_LOWER's explicit pads and dilations need
    if dilations is not None and any(d != 1 for d in dilations):
        summed = _dilated_pool(ctx, node, "sum", powered, auto_pad, ceil_mode, list(kernel_shape), dilations, pads,
                               strides)
    else:
        pooled = ctx.graph.unique_name(f"{node.name}_avg")
        inner = OnnxNode(pooled, "AveragePool", [powered], [pooled], node.domain, node.source_name)
        _pool(ctx, inner, fb.PoolType.AVEPOOL, auto_pad, ceil_mode, list(kernel_shape), pads, strides, 1)
        summed = ctx.binary(BIN.MUL, pooled, ctx.const(np.float32(np.prod(kernel_shape))))
    if p == 2:
        ctx.unary(UN.SQRT, summed, node.outputs[0])
    else:
        ctx.binary(BIN.POW, summed, ctx.const(np.float32(1.0 / p)), node.outputs[0])
