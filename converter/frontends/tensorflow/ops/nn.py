"""Softmax, reductions (Mean/Sum/Max/Min/Prod), MatMul/BatchMatMul, ResizeBilinear/ResizeNearestNeighbor."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, TfNode
from ..registry import tf_op
from .slicing import NHWC_TO_NCHW_AXIS

RT = fb.ReductionType
_REDUCE = {"Mean": RT.MEAN, "Sum": RT.SUM, "Max": RT.MAXIMUM, "Min": RT.MINIMUM, "Prod": RT.PROD}
_NUMPY_REDUCE = {"Mean": np.mean, "Sum": np.sum, "Max": np.max, "Min": np.min, "Prod": np.prod}


@tf_op("Softmax")
def softmax(ctx: Context, node: TfNode) -> None:
    """Softmax over the last axis (the channel axis 1 of an NCHW feature map)."""
    x = node.inputs[0]
    nchw = ctx.is_nchw(x)
    out = ctx.out_name(node.name, nchw)
    ctx.axis_op(OP.Softmax, [ctx.x_nchw(x) if nchw else ctx.x(x)], 1 if nchw else -1, out)
    ctx.set_out(node.name, out, nchw, ctx.shape(x))


@tf_op(*_REDUCE)
def reduce(ctx: Context, node: TfNode) -> None:
    """Mean/Sum/Max/Min/Prod(x, axes, keep_dims) -> Reduction; an NCHW map reduces in NCHW when the order allows."""
    x = node.inputs[0]
    axes_value = ctx.need_value(node, 1, "the reduction axes")
    keep = bool(node.attr("keep_dims", False))
    value = ctx.value(x)
    shape = ctx.shape(x)
    rank = None if shape is None else len(shape)
    axes = [int(a) for a in np.asarray(axes_value).ravel()]
    if value is not None:
        result = _NUMPY_REDUCE[node.op](value, axis=tuple(axes), keepdims=keep)
        ctx.set_out(node.name, ctx.const(np.asarray(result, value.dtype), node.name))
        return
    out_shape = None
    if rank is not None and shape is not None:
        norm = {a % rank for a in axes}
        out_shape = [1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm]
    nchw = ctx.is_nchw(x)
    if nchw:
        norm = {a % 4 for a in axes}
        spatial_kept = bool({1, 2} - norm)
        nchw = keep or 3 in norm or not spatial_kept  # dropping axes must leave the same order in both layouts
        axes = sorted(NHWC_TO_NCHW_AXIS[a] for a in norm) if nchw else axes
    param = fb.ReductionParamT()
    param.operation = _REDUCE[node.op]
    param.dim = axes
    param.keepDims = keep
    param.dType = fb.DataType.DT_FLOAT
    out_nchw = nchw and keep
    out = ctx.out_name(node.name, out_nchw)
    ctx.emit(OP.Reduction, [ctx.x_nchw(x) if nchw else ctx.x(x)], [out], PARAM.ReductionParam, param,
             name=node.name)
    ctx.set_out(node.name, out, out_nchw, out_shape)


@tf_op("MatMul")
def matmul(ctx: Context, node: TfNode) -> None:
    """MatMul(a, b, transpose_a, transpose_b) -> MatMul."""
    a, b = node.inputs[0], node.inputs[1]
    param = fb.MatMulT()
    param.transposeA = bool(node.attr("transpose_a", False))
    param.transposeB = bool(node.attr("transpose_b", False))
    param.T = fb.DataType.DT_FLOAT
    sa, sb = ctx.shape(a), ctx.shape(b)
    out_shape = None
    if sa is not None and sb is not None and len(sa) == 2 and len(sb) == 2:
        out_shape = [sa[1] if param.transposeA else sa[0], sb[0] if param.transposeB else sb[1]]
    ctx.emit(OP.MatMul, [ctx.x(a), ctx.x(b)], [node.name], PARAM.MatMul, param, name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def batch_matmul(ctx: Context, node: TfNode) -> None:
    """BatchMatMul*(x, y, adj_x, adj_y) -> BatchMatMul (broadcasting batch dims)."""
    a, b = node.inputs[0], node.inputs[1]
    param = fb.BatchMatMulParamT()
    param.adjX = bool(node.attr("adj_x", False))
    param.adjY = bool(node.attr("adj_y", False))
    sa, sb = ctx.shape(a), ctx.shape(b)
    out_shape = None
    if sa is not None and sb is not None and len(sa) >= 2 and len(sb) >= 2:
        from .arith import broadcast_shape

        batch = broadcast_shape(sa[:-2], sb[:-2]) or []
        out_shape = [*batch, sa[-1] if param.adjX else sa[-2], sb[-2] if param.adjY else sb[-1]]
    ctx.emit(OP.BatchMatMul, [ctx.x(a), ctx.x(b)], [node.name], PARAM.BatchMatMulParam, param, name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("ResizeBilinear", "ResizeNearestNeighbor")
def resize(ctx: Context, node: TfNode) -> None:
    """ResizeBilinear / ResizeNearestNeighbor(images, size) -> Interp with the int32 size as input 1 (NCHW)."""
    x = node.inputs[0]
    size = ctx.value(node.inputs[1])
    align = bool(node.attr("align_corners", False))
    half = bool(node.attr("half_pixel_centers", False))
    ctm = fb.CoordinateTransformationMode
    param = fb.InterpT()
    param.alignCorners = align
    param.halfPixelCenters = half
    if node.op == "ResizeBilinear":
        param.resizeType = 2
        param.ctm = ctm.AlignCorners if align else ctm.HalfPixels if half else ctm.Asymmetric
    else:
        param.resizeType = 4 if align else 1
        param.ctm = ctm.AlignCorners if align else ctm.TensorflowHalfPixels if half else ctm.Asymmetric
    if align and half:
        raise ConvertError(f"{node.label()}: align_corners together with half_pixel_centers is invalid")
    shape = ctx.shape(x)
    out_shape = None
    if size is not None:
        param.outputHeight, param.outputWidth = (int(v) for v in size.ravel())
        if shape is not None:
            out_shape = [shape[0], param.outputHeight, param.outputWidth, shape[3]]
    out = ctx.out_name(node.name, nchw=True)
    ctx.emit(OP.Interp, [ctx.x_nchw(x), ctx.x(node.inputs[1])], [out], PARAM.Interp, param, name=node.name,
             default_format=fb.MNN_DATA_FORMAT.NCHW)
    ctx.set_out(node.name, out, nchw=True, shape=out_shape)
