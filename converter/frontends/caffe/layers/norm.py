"""BatchNorm, Scale, Bias (per-channel Scale ops the passes fold into convolutions), LRN, Normalize."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import BIN, OP, PARAM, Context, Layer
from ..registry import caffe_layer


def _scale_op(ctx: Context, layer: Layer, scale: np.ndarray, bias: np.ndarray) -> None:
    ctx.layer_op(layer, OP.Scale, PARAM.Scale, fb.ScaleT, channels=int(scale.size), scaleData=scale.astype(np.float32),
                 biasData=bias.astype(np.float32))


@caffe_layer("BatchNorm")
def batch_norm(ctx: Context, layer: Layer) -> None:
    """BatchNorm (blobs mean, variance, moving-average factor) -> Scale(1/sqrt(var+eps), -mean/sqrt(var+eps))."""
    mean = np.asarray(layer.blob(0, "mean"), np.float64).ravel()
    var = np.asarray(layer.blob(1, "variance"), np.float64).ravel()
    factor = float(np.asarray(layer.blob(2, "moving average factor")).ravel()[0]) if len(layer.blobs) > 2 else 1.0
    factor = 0.0 if factor == 0 else 1.0 / factor
    eps = float(layer.proto.batch_norm_param.eps)
    scale = 1.0 / np.sqrt(var * factor + eps)
    _scale_op(ctx, layer, scale, -mean * factor * scale)


def _affine_blobs(layer: Layer, has_scale: bool, bias_term: bool) -> tuple[np.ndarray, np.ndarray]:
    first = np.asarray(layer.blob(0, "scale" if has_scale else "bias"), np.float64).ravel()
    if not has_scale:
        return np.ones_like(first), first
    bias = np.asarray(layer.blob(1, "bias"), np.float64).ravel() if bias_term else np.zeros_like(first)
    return first, bias


@caffe_layer("Scale")
def scale(ctx: Context, layer: Layer) -> None:
    """Scale with learned per-channel factors (axis 1) -> Scale; with a second bottom -> BinaryOp MUL."""
    p = layer.proto.scale_param
    if len(layer.bottoms) > 1:
        factor = ctx.reshape(ctx.x(layer, 1), [0, -1, 1, 1])
        y = ctx.binary(BIN.MUL, ctx.x(layer), factor, None if p.bias_term else ctx.top(layer))
        if p.bias_term:
            bias = np.asarray(layer.blob(0, "bias"), np.float32).reshape(1, -1, 1, 1)
            ctx.binary(BIN.ADD, y, ctx.const(bias, layer.name + "/bias"), ctx.top(layer))
        return
    if p.axis != 1 or p.num_axes != 1:
        raise ConvertError(f"{layer.label()}: only per-channel scale (axis 1, num_axes 1) is supported")
    weights, bias = _affine_blobs(layer, True, bool(p.bias_term))
    _scale_op(ctx, layer, weights, bias)


@caffe_layer("Bias")
def bias(ctx: Context, layer: Layer) -> None:
    """Bias with a learned per-channel blob -> Scale(1, bias); with a second bottom -> BinaryOp ADD."""
    if len(layer.bottoms) > 1:
        ctx.binary(BIN.ADD, ctx.x(layer), ctx.reshape(ctx.x(layer, 1), [0, -1, 1, 1]), ctx.top(layer))
        return
    weights, shift = _affine_blobs(layer, False, True)
    _scale_op(ctx, layer, weights, shift)


@caffe_layer("LRN")
def lrn(ctx: Context, layer: Layer) -> None:
    """LRN (across or within channels) -> LRN."""
    p = layer.proto.lrn_param
    ctx.layer_op(layer, OP.LRN, PARAM.LRN, fb.LRNT, regionType=int(p.norm_region), localSize=int(p.local_size),
                 alpha=float(p.alpha), beta=float(p.beta), bias=float(p.k))


@caffe_layer("Normalize")
def normalize(ctx: Context, layer: Layer) -> None:
    """SSD's Normalize (L2 over channels or the whole map, times a learned scale) -> Normalize."""
    p = layer.proto.norm_param
    ctx.layer_op(layer, OP.Normalize, PARAM.Normalize, fb.NormalizeT, acrossSpatial=int(p.across_spatial),
                 channelShared=int(p.channel_shared), eps=float(p.eps),
                 scale=np.asarray(layer.blob(0, "scale"), np.float32).ravel())
