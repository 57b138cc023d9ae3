"""Conv2D, DepthwiseConv2dNative, Conv2DBackpropInput, BiasAdd, FusedBatchNorm*, MaxPool, AvgPool.

The NHWC input is read as NCHW (`ctx.x_nchw`), weights are stored in MNN's [oc, ic, kh, kw] order, and results are
NCHW copies; a BiasAdd or FusedBatchNorm right after a convolution is folded into its bias / weights here.
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError, Node
from ..context import OP, PARAM, Context, Shape, TfNode
from ..registry import tf_op

_PAD = {"SAME": fb.PadMode.SAME, "VALID": fb.PadMode.VALID, "EXPLICIT": fb.PadMode.CAFFE}


def _hw(node: TfNode, key: str, default: int = 1) -> tuple[int, int]:
    values = node.attr(key) or [default] * 4
    if node.attr("data_format", "NHWC") != "NHWC":
        raise ConvertError(f"{node.label()}: data_format {node.attr('data_format')} is not supported (use NHWC)")
    return int(values[1]), int(values[2])


def _out_hw(size: int | None, k: int, s: int, d: int, padding: str, pads: tuple[int, int]) -> int | None:
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // s)
    span = (k - 1) * d + 1
    return (size + pads[0] + pads[1] - span) // s + 1


def _common(node: TfNode, kh: int, kw: int, ic: int, oc: int, group: int, shape: Shape | None,
            ) -> tuple[fb.Convolution2DCommonT, Shape | None]:
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = kh, kw
    common.strideY, common.strideX = _hw(node, "strides")
    common.dilateY, common.dilateX = _hw(node, "dilations")
    padding = node.attr("padding", "VALID")
    if padding not in _PAD:
        raise ConvertError(f"{node.label()}: padding {padding} is not supported")
    common.padMode = _PAD[padding]
    pad_h = pad_w = (0, 0)
    if padding == "EXPLICIT":
        explicit = [int(v) for v in node.attr("explicit_paddings", [])]
        pad_h, pad_w = (explicit[2], explicit[3]), (explicit[4], explicit[5])
        common.padY, common.padX = pad_h[0], pad_w[0]
        common.pads = [pad_h[0], pad_w[0], pad_h[1], pad_w[1]]
    common.group = group
    common.inputCount = ic
    common.outputCount = oc
    out_shape = None
    if shape is not None and len(shape) == 4:
        oh = _out_hw(shape[1], kh, common.strideY, common.dilateY, padding, pad_h)
        ow = _out_hw(shape[2], kw, common.strideX, common.dilateX, padding, pad_w)
        out_shape = [shape[0], oh, ow, oc]
    return common, out_shape


def _emit_conv(ctx: Context, node: TfNode, op_type: int, weight: np.ndarray, common: fb.Convolution2DCommonT,
               out_shape: Shape | None) -> None:
    param = fb.Convolution2DT()
    param.common = common
    param.weight = weight.astype(np.float32).ravel()
    param.bias = np.zeros(common.outputCount, np.float32)
    out = ctx.out_name(node.name, nchw=True)
    ctx.emit(op_type, [ctx.x_nchw(node.inputs[0])], [out], PARAM.Convolution2D, param, name=node.name)
    ctx.set_out(node.name, out, nchw=True, shape=out_shape)


@tf_op("Conv2D")
def conv2d(ctx: Context, node: TfNode) -> None:
    """Conv2D (filter [kh, kw, ic/group, oc]) -> Convolution."""
    kernel = ctx.need_value(node, 1, "the filter")
    kh, kw, icg, oc = kernel.shape
    shape = ctx.shape(node.inputs[0])
    ic = shape[3] if shape is not None and len(shape) == 4 and shape[3] else icg
    group = max(1, int(ic) // icg)
    common, out_shape = _common(node, kh, kw, int(ic), oc, group, shape)
    _emit_conv(ctx, node, OP.Convolution, np.transpose(kernel, (3, 2, 0, 1)), common, out_shape)


@tf_op("DepthwiseConv2dNative")
def depthwise_conv2d(ctx: Context, node: TfNode) -> None:
    """DepthwiseConv2dNative (filter [kh, kw, ic, multiplier]) -> ConvolutionDepthwise (or grouped Convolution)."""
    kernel = ctx.need_value(node, 1, "the filter")
    kh, kw, ic, mult = kernel.shape
    oc = ic * mult
    common, out_shape = _common(node, kh, kw, ic, oc, ic, ctx.shape(node.inputs[0]))
    weight = np.transpose(kernel.reshape(kh, kw, oc), (2, 0, 1))[:, None]  # output channel c*mult+m
    _emit_conv(ctx, node, OP.ConvolutionDepthwise if mult == 1 else OP.Convolution, weight, common, out_shape)


def foldable_conv(ctx: Context, key: str) -> Node | None:
    """The convolution producing NCHW tensor `key`, if nothing else has read it yet."""
    if not ctx.is_nchw(key) or ctx.readers.get(key, 0) != 1:
        return None
    name = ctx.x_nchw(key)
    for node in reversed(ctx.graph.nodes):
        if name in node.outputs:
            conv_ops = (OP.Convolution, OP.ConvolutionDepthwise, OP.Deconvolution)
            if node.op_type not in conv_ops or len(node.inputs) != 1:
                return None
            return node
        if name in node.inputs:
            return None
    return None


def channel_affine(ctx: Context, node: TfNode, x: str, scale: np.ndarray | None, bias: np.ndarray) -> None:
    """y = x * scale + bias per channel: folded into a producing conv, else a Scale op (NCHW) or BinaryOps."""
    conv = foldable_conv(ctx, x)
    out = ctx.out_name(node.name, nchw=ctx.is_nchw(x))
    if conv is not None and bias.size == conv.param.common.outputCount:
        param = conv.param
        if scale is not None:
            oc = param.common.outputCount
            param.weight = (np.asarray(param.weight).reshape(oc, -1) * scale[:, None]).astype(np.float32).ravel()
            param.bias = np.asarray(param.bias) * scale
        param.bias = (np.asarray(param.bias) + bias).astype(np.float32)
        conv.outputs = [out]
        conv.name = node.name
        ctx.set_out(node.name, out, nchw=True, shape=ctx.shape(x))
        return
    if ctx.is_nchw(x):
        param = fb.ScaleT()
        param.channels = int(bias.size)
        param.scaleData = (np.ones(bias.size) if scale is None else scale).astype(np.float32)
        param.biasData = bias.astype(np.float32)
        ctx.emit(OP.Scale, [ctx.x_nchw(x)], [out], PARAM.Scale, param, name=node.name)
        ctx.set_out(node.name, out, nchw=True, shape=ctx.shape(x))
        return
    y = ctx.x(x)
    if scale is not None:
        y = ctx.binary(fb.BinaryOpOperation.MUL, y, ctx.const(scale.astype(np.float32), node.name + "/scale"))
    ctx.binary(fb.BinaryOpOperation.ADD, y, ctx.const(bias.astype(np.float32), node.name + "/bias"), out)
    ctx.set_out(node.name, out, shape=ctx.shape(x))


@tf_op("BiasAdd", "BiasAddV1")
def bias_add(ctx: Context, node: TfNode) -> None:
    """BiasAdd: a constant bias is folded into the convolution before it (MNNConvert's ConvBiasAdd)."""
    bias = ctx.value(node.inputs[1])
    if bias is None or node.attr("data_format", "NHWC") != "NHWC":
        from .arith import binary

        binary(ctx, node, fb.BinaryOpOperation.ADD)
        return
    channel_affine(ctx, node, node.inputs[0], None, np.asarray(bias, np.float64).ravel())


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(ctx: Context, node: TfNode) -> None:
    """FusedBatchNorm (inference): folded into scale/bias per channel (MNNConvert folds it into the conv)."""
    if node.attr("is_training", False) and ctx.value(node.inputs[3]) is None:
        raise ConvertError(f"{node.label()}: training-mode batch norm is not supported (freeze in inference mode)")
    if node.attr("data_format", "NHWC") != "NHWC":
        raise ConvertError(f"{node.label()}: data_format {node.attr('data_format')} is not supported")
    gamma, beta, mean, var = (np.asarray(ctx.need_value(node, i, what), np.float64).ravel()
                              for i, what in ((1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")))
    scale = gamma / np.sqrt(var + float(node.attr("epsilon", 1e-3)))
    channel_affine(ctx, node, node.inputs[0], scale, beta - mean * scale)


def _pool(ctx: Context, node: TfNode, pool_type: int) -> None:
    kh, kw = _hw(node, "ksize")
    param = fb.PoolT()
    param.type = pool_type
    param.kernelY, param.kernelX = kh, kw
    param.strideY, param.strideX = _hw(node, "strides")
    padding = node.attr("padding", "VALID")
    param.padType = fb.PoolPadType.SAME if padding == "SAME" else fb.PoolPadType.VALID
    param.ceilModel = False
    if pool_type == fb.PoolType.AVEPOOL:
        param.countType = fb.AvgPoolCountType.EXCLUDE_PADDING
    shape = ctx.shape(node.inputs[0])
    out_shape = None
    if shape is not None and len(shape) == 4:
        out_shape = [shape[0], _out_hw(shape[1], kh, param.strideY, 1, padding, (0, 0)),
                     _out_hw(shape[2], kw, param.strideX, 1, padding, (0, 0)), shape[3]]
    out = ctx.out_name(node.name, nchw=True)
    ctx.emit(OP.Pooling, [ctx.x_nchw(node.inputs[0])], [out], PARAM.Pool, param, name=node.name)
    ctx.set_out(node.name, out, nchw=True, shape=out_shape)


@tf_op("MaxPool")
def max_pool(ctx: Context, node: TfNode) -> None:
    """MaxPool -> Pooling(MAXPOOL, SAME/VALID)."""
    _pool(ctx, node, fb.PoolType.MAXPOOL)


@tf_op("AvgPool")
def avg_pool(ctx: Context, node: TfNode) -> None:
    """AvgPool -> Pooling(AVEPOOL); TF's SAME padding does not count the padded cells."""
    _pool(ctx, node, fb.PoolType.AVEPOOL)


@tf_op("Conv2DBackpropInput")
def conv2d_transpose(ctx: Context, node: TfNode) -> None:
    """Conv2DBackpropInput(input_sizes, filter [kh, kw, oc, ic], x) -> Deconvolution with explicit pads."""
    sizes = [int(v) for v in ctx.need_value(node, 0, "input_sizes").ravel()]
    kernel = ctx.need_value(node, 1, "the filter")
    kh, kw, oc, ic = kernel.shape
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = kh, kw
    common.strideY, common.strideX = _hw(node, "strides")
    common.dilateY, common.dilateX = _hw(node, "dilations")
    common.padMode = fb.PadMode.CAFFE
    common.inputCount, common.outputCount = ic, oc
    shape = ctx.shape(node.inputs[2])
    if shape is None or len(shape) != 4 or shape[1] is None or shape[2] is None:
        raise ConvertError(f"{node.label()}: the input needs a static spatial shape")
    pads, extra = [], []
    for size, out, k, s, d in ((shape[1], sizes[1], kh, common.strideY, common.dilateY),
                               (shape[2], sizes[2], kw, common.strideX, common.dilateX)):
        total = (size - 1) * s + (k - 1) * d + 1 - out
        begin = total // 2 if node.attr("padding", "VALID") == "SAME" and total > 0 else 0
        pads.append((begin, max(total, 0) - begin))
        extra.append(max(-total, 0))
    common.padY, common.padX = pads[0][0], pads[1][0]
    common.pads = [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]
    common.outPads = extra
    param = fb.Convolution2DT()
    param.common = common
    param.weight = np.transpose(kernel, (3, 2, 0, 1)).astype(np.float32).ravel()
    param.bias = np.zeros(oc, np.float32)
    out = ctx.out_name(node.name, nchw=True)
    ctx.emit(OP.Deconvolution, [ctx.x_nchw(node.inputs[2])], [out], PARAM.Convolution2D, param, name=node.name)
    ctx.set_out(node.name, out, nchw=True, shape=[shape[0], sizes[1], sizes[2], oc])
