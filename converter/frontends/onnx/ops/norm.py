"""Normalisation: BatchNormalization -> Scale, Instance/Group/LayerNormalization -> LayerNorm, Softmax, LogSoftmax."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op


def scale_op(ctx: Context, x: str, scale: np.ndarray, bias: np.ndarray, output: str, name: str | None = None) -> str:
    """Per-channel y = x * scale + bias on dim 1 (MNN Scale, an NC4HW4 op)."""
    param = fb.ScaleT()
    param.channels = int(scale.size)
    param.scaleData = scale.astype(np.float32).ravel()
    param.biasData = bias.astype(np.float32).ravel()
    return ctx.out(OP.Scale, [x], [output], PARAM.Scale, param, name=name)


def per_channel(ctx: Context, node: OnnxNode, param: str) -> str:
    """A [C] tensor reshaped to [C, 1, ..] so it broadcasts along dim 1 of the node's input."""
    rank = ctx.need_rank(node, node.inputs[0])
    return ctx.reshape(param, [-1] + [1] * (rank - 2))


def _runtime_batch_norm(ctx: Context, node: OnnxNode, epsilon: float) -> None:
    x = node.inputs[0]
    gamma, beta, mean, var = (per_channel(ctx, node, node.inputs[i]) for i in range(1, 5))
    std = ctx.unary(UN.SQRT, ctx.binary(BIN.ADD, var, ctx.const(np.float32(epsilon))))
    factor = ctx.binary(BIN.REALDIV, gamma, std)
    centered = ctx.binary(BIN.SUB, x, mean)
    ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, centered, factor), beta, node.outputs[0])


def _training_batch_norm(ctx: Context, node: OnnxNode, epsilon: float, momentum: float) -> None:
    """Training-mode BatchNormalization (opset 14+): normalised by the batch's own statistics (mean and population
    variance over every axis but 1); running_mean / running_var = input * momentum + batch's * (1 - momentum)."""
    from .reduce import reduction

    x = node.inputs[0]
    rank = ctx.need_rank(node, x)
    axes = [0, *range(2, rank)]
    mean = reduction(ctx, x, fb.ReductionType.MEAN, axes, True)
    centred = ctx.binary(BIN.SUB, x, mean)
    var = reduction(ctx, ctx.binary(BIN.MUL, centred, centred), fb.ReductionType.MEAN, axes, True)
    std = ctx.unary(UN.SQRT, ctx.binary(BIN.ADD, var, ctx.const(np.float32(epsilon))))
    gamma, beta = (per_channel(ctx, node, node.inputs[i]) for i in (1, 2))
    ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, ctx.binary(BIN.REALDIV, centred, std), gamma), beta, node.outputs[0])
    for k, batch in ((1, mean), (2, var)):
        if len(node.outputs) > k and node.outputs[k]:
            kept = ctx.binary(BIN.MUL, node.inputs[2 + k], ctx.const(np.float32(momentum)))
            new = ctx.binary(BIN.MUL, ctx.reshape(batch, [-1]), ctx.const(np.float32(1 - momentum)))
            ctx.binary(BIN.ADD, kept, new, node.outputs[k])


@onnx_op("BatchNormalization")
def batch_norm(ctx: Context, node: OnnxNode, *, epsilon: float = 1e-5, momentum: float = 0.9,
               spatial: int = 1, training_mode: int = 0, is_test: int = 0, consumed_inputs: list[int] | None = None
               ) -> None:
    """BatchNormalization (inference) -> Scale(s / sqrt(var + eps), b - mean * that); folded into convs later.

    Run-time statistics become per-channel BinaryOps instead.
    """
    if training_mode and ctx.opset >= 14:
        _training_batch_norm(ctx, node, epsilon, momentum)
        return
    if training_mode or any(name for name in node.outputs[1:]):
        raise UseFunctionBody(f"{node.label()}: training-mode BatchNormalization before opset 14 is not supported")
    if any(ctx.value(node.inputs[i]) is None for i in range(1, 5)):
        _runtime_batch_norm(ctx, node, epsilon)
        return
    gamma, beta, mean, var = (ctx.need_value(node, i, what).astype(np.float64)
                              for i, what in enumerate(("scale", "B", "mean", "var"), start=1))
    scale = gamma / np.sqrt(var + epsilon)
    bias = beta - mean * scale
    scale_op(ctx, node.inputs[0], scale, bias, node.outputs[0], node.name)


def _layer_norm(ctx: Context, x: str, axes: list[int], epsilon: float, output: str | None = None,
                gamma: np.ndarray | None = None, beta: np.ndarray | None = None, group: int = 1) -> str:
    param = fb.LayerNormT()
    param.axis = axes
    param.epsilon = float(epsilon)
    param.group = group
    if gamma is not None:
        param.gamma = gamma.astype(np.float32).ravel()
        param.beta = (np.zeros_like(gamma) if beta is None else beta).astype(np.float32).ravel()
    return ctx.out(OP.LayerNorm, [x], None if output is None else [output], PARAM.LayerNorm, param,
                   name=None if output is not None else "LayerNorm")


def _grouped_norm(ctx: Context, node: OnnxNode, groups: int, epsilon: float, scale: np.ndarray | None,
                  bias: np.ndarray | None) -> None:
    """Reshape to [N, groups, -1], LayerNorm over the last axis, reshape back, then a per-channel Scale."""
    x = node.inputs[0]
    grouped = ctx.reshape(x, [0, groups, -1])
    normed = _layer_norm(ctx, grouped, [-1], epsilon)
    if scale is None:
        ctx.reshape(normed, ctx.shape_of(x), node.outputs[0])
        return
    restored = ctx.reshape(normed, ctx.shape_of(x))
    bias = np.zeros_like(scale) if bias is None else bias
    scale_op(ctx, restored, scale, bias, node.outputs[0])


@onnx_op("InstanceNormalization")
def instance_norm(ctx: Context, node: OnnxNode, *, epsilon: float = 1e-5) -> None:
    """InstanceNormalization -> Reshape [N, C, -1], LayerNorm(axis -1), Reshape back, Scale(gamma, beta)."""
    gamma, beta = ctx.value(node.inputs[1]), ctx.value(node.inputs[2])
    if gamma is not None and beta is not None:
        _grouped_norm(ctx, node, 0, epsilon, gamma, beta)
        return
    x = node.inputs[0]
    normed = _layer_norm(ctx, ctx.reshape(x, [0, 0, -1]), [-1], epsilon)
    restored = ctx.reshape(normed, ctx.shape_of(x))
    scaled = ctx.binary(BIN.MUL, restored, per_channel(ctx, node, node.inputs[1]))
    ctx.binary(BIN.ADD, scaled, per_channel(ctx, node, node.inputs[2]), node.outputs[0])


@onnx_op("GroupNormalization", since=18)
def group_norm(ctx: Context, node: OnnxNode, *, epsilon: float = 1e-5, num_groups: int = 1,
               stash_type: int = 1) -> None:
    """GroupNormalization -> Reshape [N, G, -1], LayerNorm, Reshape back, Scale (per-group params expanded); a
    run-time per-channel scale / bias (opset 21) -> Mul and Add broadcast along the channels."""
    if ctx.value(node.input(1)) is None or ctx.value(node.input(2)) is None:
        if ctx.opset < 21:
            raise UseFunctionBody(f"{node.label()}: a run-time per-group scale / bias is not supported")
        x = node.inputs[0]
        normed = _layer_norm(ctx, ctx.reshape(x, [0, num_groups, -1]), [-1], epsilon)
        scaled = ctx.binary(BIN.MUL, ctx.reshape(normed, ctx.shape_of(x)), per_channel(ctx, node, node.inputs[1]))
        ctx.binary(BIN.ADD, scaled, per_channel(ctx, node, node.inputs[2]), node.outputs[0])
        return
    scale = ctx.need_value(node, 1, "scale")
    bias = ctx.need_value(node, 2, "bias")
    if ctx.opset < 21 and scale.size == num_groups:
        shape = ctx.shape(node.inputs[0])
        channels = None if shape is None else shape[1]
        if channels is None:
            raise UseFunctionBody(f"{node.label()}: per-group scale needs a known channel count")
        scale = np.repeat(scale, channels // num_groups)
        bias = np.repeat(bias, channels // num_groups)
    _grouped_norm(ctx, node, num_groups, epsilon, scale, bias)


@onnx_op("LayerNormalization", since=17)
def layer_norm(ctx: Context, node: OnnxNode, *, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1) -> None:
    """LayerNormalization -> LayerNorm(axis = [axis..-1] as negative indices, gamma, beta)."""
    if any(name for name in node.outputs[1:]):
        raise UseFunctionBody(f"{node.label()}: the Mean/InvStdDev outputs are not supported")
    x = node.inputs[0]
    if axis >= 0:
        axis -= ctx.need_rank(node, x)
    axes = list(range(axis, 0))
    gamma, beta = ctx.value(node.input(1)), ctx.value(node.input(2))
    if gamma is not None and (not node.input(2) or beta is not None):
        _layer_norm(ctx, x, axes, epsilon, node.outputs[0], gamma, beta)
        return
    y = _layer_norm(ctx, x, axes, epsilon)
    y = ctx.binary(BIN.MUL, y, node.inputs[1], None if node.input(2) else node.outputs[0])
    if node.input(2):
        ctx.binary(BIN.ADD, y, node.inputs[2], node.outputs[0])


def _softmax(ctx: Context, x: str, axis: int, output: str | None = None, name: str | None = None) -> str:
    param = fb.AxisT()
    param.axis = axis
    return ctx.out(OP.Softmax, [x], None if output is None else [output], PARAM.Axis, param, name=name or "Softmax")


@onnx_op("Softmax")
def softmax_v1(ctx: Context, node: OnnxNode, *, axis: int = 1) -> None:
    """Softmax (opset < 13: over the flattened trailing dims from `axis`)."""
    x = node.inputs[0]
    rank = ctx.rank(x)
    if rank is not None and axis < 0:
        axis += rank
    if rank is not None and axis == rank - 1:
        _softmax(ctx, x, -1, node.outputs[0], node.name)
        return
    flat = ctx.reshape(x, [0] * axis + [-1]) if axis > 0 else ctx.reshape(x, [1, -1])
    y = _softmax(ctx, flat, -1)
    ctx.reshape(y, ctx.shape_of(x), node.outputs[0])


@onnx_op("Softmax", since=13)
def softmax(ctx: Context, node: OnnxNode, *, axis: int = -1) -> None:
    """Softmax -> Softmax(axis)."""
    _softmax(ctx, node.inputs[0], axis, node.outputs[0], node.name)


def _log_softmax(ctx: Context, x: str, axis: int, output: str) -> None:
    reduce = fb.ReductionParamT()
    reduce.operation = fb.ReductionType.MAXIMUM
    reduce.dim = [axis]
    reduce.keepDims = True
    peak = ctx.out(OP.Reduction, [x], None, PARAM.ReductionParam, reduce, name="Reduction")
    shifted = ctx.binary(BIN.SUB, x, peak)
    total = fb.ReductionParamT()
    total.operation = fb.ReductionType.SUM
    total.dim = [axis]
    total.keepDims = True
    summed = ctx.out(OP.Reduction, [ctx.unary(UN.EXP, shifted)], None, PARAM.ReductionParam, total, name="Reduction")
    ctx.binary(BIN.SUB, shifted, ctx.unary(UN.LOG, summed), output)


@onnx_op("LogSoftmax")
def log_softmax_v1(ctx: Context, node: OnnxNode, *, axis: int = 1) -> None:
    """LogSoftmax (opset < 13): only the last-axis form (x - max - log(sum(exp)))."""
    rank = ctx.need_rank(node, node.inputs[0])
    if axis % rank != rank - 1:
        raise UseFunctionBody(f"{node.label()}: opset<13 LogSoftmax over several axes is not supported")
    _log_softmax(ctx, node.inputs[0], -1, node.outputs[0])


@onnx_op("LogSoftmax", since=13)
def log_softmax(ctx: Context, node: OnnxNode, *, axis: int = -1) -> None:
    """LogSoftmax -> x - max, minus log(sum(exp(x - max))) (as MNNConvert)."""
    _log_softmax(ctx, node.inputs[0], axis, node.outputs[0])
