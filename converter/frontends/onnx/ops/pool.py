"""Pooling: MaxPool, AveragePool -> Pooling; GlobalAveragePool, GlobalMaxPool -> Pooling3D(isGlobal), as MNNConvert."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .conv import same_lower_pads


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


@onnx_op("MaxPool")
def max_pool(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: list[int] | None = None, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
             storage_order: int = 0, strides: list[int] | None = None) -> None:
    """MaxPool -> Pooling(MAXPOOL)."""
    if dilations is not None and any(d != 1 for d in dilations):
        raise UseFunctionBody(f"{node.label()}: dilated max pooling is not supported")
    if len(node.outputs) > 1 and node.outputs[1]:
        raise UseFunctionBody(f"{node.label()}: the Indices output of MaxPool is not supported")
    if kernel_shape is None:
        raise UseFunctionBody(f"{node.label()}: kernel_shape is required")
    _pool(ctx, node, fb.PoolType.MAXPOOL, auto_pad, ceil_mode, kernel_shape, pads, strides, 0)


@onnx_op("AveragePool")
def average_pool(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
                 count_include_pad: int = 0, dilations: list[int] | None = None,
                 kernel_shape: list[int] | None = None, pads: list[int] | None = None,
                 strides: list[int] | None = None) -> None:
    """AveragePool -> Pooling(AVEPOOL, countType by count_include_pad)."""
    if dilations is not None and any(d != 1 for d in dilations):
        raise UseFunctionBody(f"{node.label()}: dilated average pooling is not supported")
    if kernel_shape is None:
        raise UseFunctionBody(f"{node.label()}: kernel_shape is required")
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
    """LpPool -> (AveragePool(|x|^p, padding counted) * kernel area)^(1/p)."""
    if kernel_shape is None or (dilations is not None and any(d != 1 for d in dilations)):
        raise UseFunctionBody(f"{node.label()}: needs kernel_shape and no dilation")
    x = node.inputs[0]
    powered = ctx.unary(UN.SQUARE, x) if p == 2 else \
        ctx.binary(BIN.POW, ctx.unary(UN.ABS, x), ctx.const(np.float32(p)))
    pooled = ctx.graph.unique_name(f"{node.name}_avg")
    inner = OnnxNode(pooled, "AveragePool", [powered], [pooled], node.domain, node.source_name)
    _pool(ctx, inner, fb.PoolType.AVEPOOL, auto_pad, ceil_mode, list(kernel_shape), pads, strides, 1)
    summed = ctx.binary(BIN.MUL, pooled, ctx.const(np.float32(np.prod(kernel_shape))))
    if p == 2:
        ctx.unary(UN.SQRT, summed, node.outputs[0])
    else:
        ctx.binary(BIN.POW, summed, ctx.const(np.float32(1.0 / p)), node.outputs[0])
