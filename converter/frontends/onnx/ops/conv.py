"""Conv and ConvTranspose -> Convolution / ConvolutionDepthwise / Deconvolution (weights in the op, as MNNConvert)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op


def _pad_mode(node: OnnxNode, auto_pad: str) -> int:
    if auto_pad in ("NOTSET", ""):
        return fb.PadMode.CAFFE
    if auto_pad == "VALID":
        return fb.PadMode.VALID
    if auto_pad == "SAME_UPPER":
        return fb.PadMode.SAME
    raise UseFunctionBody(f"{node.label()}: auto_pad={auto_pad} is not supported by MNN")


def same_lower_pads(ctx: Context, x: str, kernel: list[int], strides: list[int] | None,
                    dilations: list[int] | None) -> list[int] | None:
    """Explicit [top, left, bottom, right] pads for auto_pad=SAME_LOWER (extra padding at the start), when the
    input's spatial size is known; MNN's SAME mode pads like SAME_UPPER."""
    shape = ctx.shape(x)
    if shape is None or len(shape) != 4 or None in shape[2:]:
        return None
    begins, ends = [], []
    for size, k, s, d in zip(shape[2:], kernel, strides or [1, 1], dilations or [1, 1], strict=True):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        begins.append(total - total // 2)
        ends.append(total // 2)
    return begins + ends


def _common(node: OnnxNode, kernel: list[int], strides: list[int] | None, dilations: list[int] | None,
            pads: list[int] | None, auto_pad: str, group: int, out_count: int,
            in_count: int) -> fb.Convolution2DCommonT:
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = kernel
    common.strideY, common.strideX = strides or [1, 1]
    common.dilateY, common.dilateX = dilations or [1, 1]
    common.padMode = _pad_mode(node, auto_pad)
    if pads is not None and common.padMode == fb.PadMode.CAFFE:
        top, left, bottom, right = pads
        common.padY, common.padX = top, left
        common.pads = [top, left, bottom, right]
    common.group = group
    common.outputCount = out_count
    common.inputCount = in_count
    return common


def _to_2d(values: list[int] | None, fill: int, rank1d: bool) -> list[int] | None:
    if values is None or not rank1d:
        return values
    if len(values) == 2:  # 1-D pads [begin, end] -> [top, left, bottom, right] with width padding 0
        return [values[0], fill, values[1], fill]
    return [values[0], fill]


def _wrap_1d(ctx: Context, node: OnnxNode, x: str) -> tuple[str, str]:
    """For 1-D convs: returns (input expanded to NCH1, name the 2-D result should get)."""
    expanded = ctx.squeeze(x, [3], unsqueeze=True)
    return expanded, ctx.graph.unique_name(node.outputs[0] + "_2d")


def _dynamic_conv(ctx: Context, node: OnnxNode, op_type: int, auto_pad: str, dilations: list[int] | None,
                  group: int, kernel_shape: list[int] | None, pads: list[int] | None, strides: list[int] | None,
                  output_padding: list[int] | None = None) -> None:
    """Run-time weights: MNN's multi-input convolution (inputs x, weight[, bias]); 1-D via an extra unit axis."""
    w_shape = ctx.shape(node.inputs[1])
    if w_shape is None or len(w_shape) not in (3, 4) or any(d is None for d in w_shape):
        raise UseFunctionBody(f"{node.label()}: run-time weights need a known 3-D or 4-D weight shape")
    if len(w_shape) == 3:
        x, out = _wrap_1d(ctx, node, node.inputs[0])
        weight = ctx.squeeze(node.inputs[1], [3], unsqueeze=True)
        ctx.shapes[weight] = [*w_shape, 1]
        inner = OnnxNode(out, node.op_type, [x, weight, *node.inputs[2:]], [out], node.domain, node.source_name)
        _dynamic_conv(ctx, inner, op_type, auto_pad, _to_2d(dilations, 1, True), group,
                      None if kernel_shape is None else [kernel_shape[0], 1], _to_2d(pads, 0, True),
                      _to_2d(strides, 1, True), _to_2d(output_padding, 0, True))
        ctx.squeeze(out, [3], output=node.outputs[0])
        return
    if op_type == OP.Convolution:
        oc, ic = int(w_shape[0]), int(w_shape[1]) * group
    else:
        ic, oc = int(w_shape[0]), int(w_shape[1]) * group
    if group > 1 and not (op_type == OP.Deconvolution and group == ic == oc):
        _grouped_dynamic_conv(ctx, node, op_type, auto_pad, dilations, group, kernel_shape, pads, strides,
                              output_padding)
        return
    kernel = [int(k) for k in (kernel_shape or w_shape[2:])]
    if auto_pad == "SAME_LOWER":
        explicit = same_lower_pads(ctx, node.inputs[0], kernel, strides, dilations)
        if explicit is not None:
            auto_pad, pads = "NOTSET", explicit
    common = _common(node, kernel, strides, dilations, pads, auto_pad, group, oc, ic)
    if op_type == OP.Deconvolution:
        if common.pads is None and common.padMode == fb.PadMode.CAFFE:
            common.pads = [0, 0, 0, 0]
        if output_padding is not None:
            common.outPads = list(output_padding)
    if op_type == OP.Deconvolution and group > 1:
        op_type = OP.DeconvolutionDepthwise  # group == ic == oc here (others split above), as MNNConvert
    param = fb.Convolution2DT()
    param.common = common
    inputs = [node.inputs[0], node.inputs[1]]
    if node.input(2):
        inputs.append(node.inputs[2])
    ctx.emit(op_type, inputs, node.outputs, PARAM.Convolution2D, param, name=node.name)


def _grouped_dynamic_conv(ctx: Context, node: OnnxNode, op_type: int, auto_pad: str, dilations: list[int] | None,
                          group: int, kernel_shape: list[int] | None, pads: list[int] | None,
                          strides: list[int] | None, output_padding: list[int] | None) -> None:
    """MNN 3.6.1 computes grouped multi-input (de)convolutions wrongly (not depthwise ones): split into `group`
    of them + Concat. The weight splits on axis 0 for both (Conv [oc, ic/g, ..], ConvTranspose [ic, oc/g, ..])."""
    param = fb.SliceT()
    param.axis = 1
    param.sourceType = fb.NetSource.TORCH
    xs = [ctx.graph.unique_name(f"{node.name}_x{g}") for g in range(group)]
    ctx.emit(OP.Slice, [node.inputs[0]], xs, PARAM.Slice, param)
    w_param = fb.SliceT()
    w_param.sourceType = fb.NetSource.TORCH
    ws = [ctx.graph.unique_name(f"{node.name}_w{g}") for g in range(group)]
    ctx.emit(OP.Slice, [node.inputs[1]], ws, PARAM.Slice, w_param)
    bs: list[str] = []
    if node.input(2):
        bs = [ctx.graph.unique_name(f"{node.name}_b{g}") for g in range(group)]
        ctx.emit(OP.Slice, [node.inputs[2]], bs, PARAM.Slice, w_param)
    w_shape = list(ctx.shape(node.inputs[1]) or [])
    outs = []
    for g in range(group):
        out = ctx.graph.unique_name(f"{node.name}_g{g}")
        ctx.shapes[ws[g]] = [w_shape[0] // group, *w_shape[1:]]
        inputs = [xs[g], ws[g]] + ([bs[g]] if bs else [])
        inner = OnnxNode(out, node.op_type, inputs, [out], node.domain, node.source_name)
        _dynamic_conv(ctx, inner, op_type, auto_pad, dilations, 1, kernel_shape, pads, strides, output_padding)
        outs.append(out)
    axis = fb.AxisT()
    axis.axis = 1
    ctx.emit(OP.Concat, outs, [node.outputs[0]], PARAM.Axis, axis)


class _ConvAttrs(NamedTuple):
    """The (Conv / ConvTranspose) attributes that become Convolution2DCommon."""

    auto_pad: str
    dilations: list[int] | None
    group: int
    pads: list[int] | None
    strides: list[int] | None
    output_padding: list[int] | None = None


def _constant_weights(ctx: Context, node: OnnxNode) -> tuple[np.ndarray, np.ndarray | None]:
    """The constant weight and (optional) bias of a Conv / ConvTranspose node."""
    weight = ctx.need_value(node, 1, "the weight")
    bias_value = ctx.value(node.input(2))
    if node.input(2) and bias_value is None:
        raise UseFunctionBody(f"{node.label()}: the bias must be a constant for MNN")
    return weight, bias_value


def _emit_conv(ctx: Context, node: OnnxNode, weight: np.ndarray, bias_value: np.ndarray | None,
               op_types: tuple[int, int], oc: int, ic: int, attrs: _ConvAttrs, rank1d: bool) -> None:
    """Emit a 2-D (de)convolution with constant 4-D `weight` (a 1-D one runs on [n, c, w, 1], wrapped and squeezed
    back): `op_types` = (plain, depthwise), depthwise when group == ic == oc > 1. Transposed convolutions
    (`attrs.output_padding` known or not) get explicit zero pads under CAFFE pad mode, as MNNConvert writes them."""
    transposed = op_types[0] == OP.Deconvolution
    x, out = node.inputs[0], node.outputs[0]
    if rank1d:
        x, out = _wrap_1d(ctx, node, x)
    common = _common(node, list(weight.shape[2:]), _to_2d(attrs.strides, 1, rank1d),
                     _to_2d(attrs.dilations, 1, rank1d), _to_2d(attrs.pads, 0, rank1d), attrs.auto_pad, attrs.group,
                     oc, ic)
    if transposed and common.pads is None and common.padMode == fb.PadMode.CAFFE:
        common.pads = [0, 0, 0, 0]
    if transposed and attrs.output_padding is not None:
        common.outPads = list(_to_2d(attrs.output_padding, 0, rank1d) or [])
    bias = (np.zeros(oc, np.float32) if bias_value is None else bias_value.astype(np.float32)).ravel()
    if transposed:
        ctx.deconvolution(x, out, weight, bias, common, node.name)
    else:
        param = fb.Convolution2DT()
        param.common = common
        param.weight = weight.astype(np.float32).ravel()
        param.bias = bias
        depthwise = attrs.group > 1 and attrs.group == ic == oc
        ctx.emit(op_types[depthwise], [x], [out], PARAM.Convolution2D, param, name=node.name)
    if rank1d:
        ctx.squeeze(out, [3], output=node.outputs[0])


@onnx_op("Conv")
def conv(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", dilations: list[int] | None = None,
         group: int = 1, kernel_shape: list[int] | None = None, pads: list[int] | None = None,
         strides: list[int] | None = None) -> None:
    """Conv: weights and bias go into the op; group == ic == oc becomes ConvolutionDepthwise."""
    if ctx.value(node.inputs[1]) is None:
        _dynamic_conv(ctx, node, OP.Convolution, auto_pad, dilations, group, kernel_shape, pads, strides)
        return
    weight, bias_value = _constant_weights(ctx, node)
    rank1d = weight.ndim == 3
    if weight.ndim == 5:
        from .conv3d import conv3d

        conv3d(ctx, node, weight, bias_value, auto_pad, dilations, group, pads, strides)
        return
    if weight.ndim not in (3, 4):
        raise UseFunctionBody(f"{node.label()}: {weight.ndim - 2}-D convolution is not supported yet")
    if auto_pad == "SAME_LOWER" and not rank1d:
        explicit = same_lower_pads(ctx, node.inputs[0], list(weight.shape[2:]), strides, dilations)
        if explicit is not None:
            auto_pad, pads = "NOTSET", explicit
    if rank1d:
        weight = weight[..., None]
    oc, icg = weight.shape[:2]
    _emit_conv(ctx, node, weight, bias_value, (OP.Convolution, OP.ConvolutionDepthwise), oc, icg * group,
               _ConvAttrs(auto_pad, dilations, group, pads, strides), rank1d)


def _output_shape_pads(ctx: Context, node: OnnxNode, kernel: list[int | None] | None, strides: list[int] | None,
                       dilations: list[int] | None, output_padding: list[int] | None, output_shape: list[int],
                       auto_pad: str) -> tuple[list[int], list[int]]:
    shape = ctx.shape(node.inputs[0])
    if shape is None or len(shape) != 4 or None in shape[2:] or kernel is None or None in kernel:
        raise UseFunctionBody(f"{node.label()}: output_shape needs known input and kernel sizes")
    out_hw = list(output_shape[-2:])
    begins, ends, extra = [], [], []
    for i in range(2):
        s, d = (strides or [1, 1])[i], (dilations or [1, 1])[i]
        op = (output_padding or [0, 0])[i]
        total = s * (int(shape[2 + i]) - 1) + op + (int(kernel[i]) - 1) * d + 1 - int(out_hw[i])
        extra.append(op + max(-total, 0))
        total = max(total, 0)
        if auto_pad == "SAME_UPPER":
            begins.append(total // 2)
            ends.append(total - total // 2)
        else:
            begins.append(total - total // 2)
            ends.append(total // 2)
    return begins + ends, extra


@onnx_op("ConvTranspose")
def conv_transpose(ctx: Context, node: OnnxNode, *, auto_pad: str = "NOTSET", dilations: list[int] | None = None,
                   group: int = 1, kernel_shape: list[int] | None = None, output_padding: list[int] | None = None,
                   output_shape: list[int] | None = None, pads: list[int] | None = None,
                   strides: list[int] | None = None) -> None:
    """ConvTranspose -> Deconvolution (weight kept as ONNX's [ic, oc/group, kh, kw]).

    An output_shape attribute is turned into explicit pads (ONNX's formula) when the input size is known.
    """
    if output_shape is not None:
        w_shape = ctx.shape(node.inputs[1])
        kernel = kernel_shape or (None if w_shape is None else w_shape[2:])
        pads, output_padding = _output_shape_pads(ctx, node, kernel, strides, dilations, output_padding,
                                                  output_shape, auto_pad)
        output_shape, auto_pad = None, "NOTSET"
    if ctx.value(node.inputs[1]) is None and output_shape is None:
        _dynamic_conv(ctx, node, OP.Deconvolution, auto_pad, dilations, group, kernel_shape, pads, strides,
                      output_padding)
        return
    weight, bias_value = _constant_weights(ctx, node)
    if output_shape is not None:
        raise UseFunctionBody(f"{node.label()}: the output_shape attribute is not supported yet; use pads")
    rank1d = weight.ndim == 3
    if weight.ndim not in (3, 4):
        raise UseFunctionBody(f"{node.label()}: {weight.ndim - 2}-D transposed convolution is not supported yet")
    if rank1d:
        weight = weight[..., None]
    ic, ocg = weight.shape[:2]
    _emit_conv(ctx, node, weight, bias_value, (OP.Deconvolution, OP.DeconvolutionDepthwise), ocg * group, ic,
               _ConvAttrs(auto_pad, dilations, group, pads, strides, output_padding), rank1d)
