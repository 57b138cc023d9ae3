"""Convolution, Deconvolution, InnerProduct (weights go into the op, as MNNConvert writes them)."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, Layer
from ..registry import caffe_layer


def _pair(values: list[int], h: int, w: int, default: int) -> tuple[int, int]:
    """Caffe's kernel/stride/pad: explicit _h/_w, else one repeated value (or one per dim), else the default."""
    if h or w:
        return int(h), int(w)
    if not values:
        return default, default
    return (int(values[0]), int(values[-1])) if len(values) <= 2 else (int(values[0]), int(values[1]))


def _common(layer: Layer, oc: int, ic: int) -> fb.Convolution2DCommonT:
    p = layer.proto.convolution_param
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = _pair(list(p.kernel_size), p.kernel_h, p.kernel_w, 1)
    common.strideY, common.strideX = _pair(list(p.stride), p.stride_h, p.stride_w, 1)
    common.padY, common.padX = _pair(list(p.pad), p.pad_h, p.pad_w, 0)
    common.dilateY, common.dilateX = _pair(list(p.dilation), 0, 0, 1)
    common.pads = [common.padY, common.padX, common.padY, common.padX]
    common.padMode = fb.PadMode.CAFFE
    common.group = int(p.group)
    common.outputCount = oc
    common.inputCount = ic
    return common


def _emit(ctx: Context, layer: Layer, op_type: int, common: fb.Convolution2DCommonT, weight: np.ndarray) -> None:
    p = layer.proto.convolution_param
    param = fb.Convolution2DT()
    param.common = common
    param.weight = weight.astype(np.float32).ravel()
    bias = layer.blob(1, "bias") if p.bias_term else np.zeros(common.outputCount, np.float32)
    param.bias = np.asarray(bias, np.float32).ravel()
    ctx.emit(op_type, [ctx.x(layer)], [ctx.top(layer)], PARAM.Convolution2D, param, name=layer.name)


@caffe_layer("Convolution", "DepthwiseConvolution", "ConvolutionDepthwise")
def convolution(ctx: Context, layer: Layer) -> None:
    """Convolution (weights [oc, ic/group, kh, kw]) -> Convolution, or ConvolutionDepthwise when group == ic == oc."""
    weight = layer.blob(0, "weight")
    p = layer.proto.convolution_param
    oc = int(p.num_output) or weight.shape[0]
    group = int(p.group)
    kh, kw = _pair(list(p.kernel_size), p.kernel_h, p.kernel_w, 1)
    weight = weight.reshape(oc, -1, kh, kw)
    ic = weight.shape[1] * group
    common = _common(layer, oc, ic)
    depthwise = group > 1 and group == ic == oc
    _emit(ctx, layer, OP.ConvolutionDepthwise if depthwise else OP.Convolution, common, weight)


@caffe_layer("Deconvolution")
def deconvolution(ctx: Context, layer: Layer) -> None:
    """Deconvolution (weights [ic, oc/group, kh, kw]) -> Deconvolution (DeconvolutionDepthwise when depthwise, one
    per group when grouped otherwise: ``EmitContext.deconvolution``)."""
    weight = layer.blob(0, "weight")
    p = layer.proto.convolution_param
    group = int(p.group)
    if weight.ndim != 4:
        raise ConvertError(f"{layer.label()}: expected a 4-D weight blob, got {weight.shape}")
    ic, oc = weight.shape[0], int(p.num_output) or weight.shape[1] * group
    common = _common(layer, oc, ic)
    bias = layer.blob(1, "bias") if p.bias_term else np.zeros(oc, np.float32)
    ctx.deconvolution(ctx.x(layer), ctx.top(layer), weight, bias, common, layer.name)


@caffe_layer("InnerProduct")
def inner_product(ctx: Context, layer: Layer) -> None:
    """InnerProduct -> Reshape [N, K, 1, 1] + 1x1 Convolution + Reshape [N, out] (MNN's TransformInnerProduct)."""
    p = layer.proto.inner_product_param
    if p.axis != 1:
        raise ConvertError(f"{layer.label()}: axis {p.axis} is not supported (only 1)")
    weight = layer.blob(0, "weight").reshape(-1)
    oc = int(p.num_output)
    weight = weight.reshape(-1, oc).T if p.transpose else weight.reshape(oc, -1)
    common = fb.Convolution2DCommonT()
    common.outputCount = oc
    common.inputCount = weight.shape[1]
    param = fb.Convolution2DT()
    param.common = common
    param.weight = np.ascontiguousarray(weight, np.float32).ravel()
    bias = layer.blob(1, "bias") if p.bias_term else np.zeros(oc, np.float32)
    param.bias = np.asarray(bias, np.float32).ravel()
    flat = ctx.reshape(ctx.x(layer), [0, -1, 1, 1])
    conv = ctx.graph.unique_name(layer.name + "__conv")
    ctx.emit(OP.Convolution, [flat], [conv], PARAM.Convolution2D, param, name=layer.name)
    ctx.reshape(conv, [0, -1], ctx.top(layer))
