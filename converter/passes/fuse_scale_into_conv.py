"""Fold a per-channel Scale (BatchNorm) that directly follows a convolution into its weights and bias."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "merge-bn-to-convolution"

_CONV = {fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise}
_DECONV = {fb.OpType.Deconvolution, fb.OpType.DeconvolutionDepthwise}


def _fold(conv: Node, scale: np.ndarray, bias: np.ndarray) -> bool:
    param = conv.param
    common = param.common
    if param.weight is None or common.relu or common.relu6:
        return False
    oc = common.outputCount
    if scale.size != oc:
        return False
    weight = np.asarray(param.weight, np.float64)
    if conv.op_type in _CONV:
        weight = weight.reshape(oc, -1) * scale[:, None]
    else:
        group = max(common.group, 1)
        ic = common.inputCount
        w = weight.reshape(group, ic // group, oc // group, -1) * scale.reshape(group, 1, oc // group, 1)
        weight = w
    param.weight = weight.astype(np.float32).ravel()
    old_bias = np.asarray(param.bias if param.bias is not None else np.zeros(oc), np.float64)
    param.bias = (old_bias * scale + bias).astype(np.float32)
    return True


def apply(graph: Graph) -> int:
    """Returns the number of Scale ops folded away."""
    folded = 0
    for node in list(graph.nodes):
        if node.op_type != fb.OpType.Scale:
            continue
        src = node.inputs[0]
        conv = graph.producers().get(src)
        if conv is None or conv.op_type not in _CONV | _DECONV or len(conv.inputs) != 1 or src in graph.outputs:
            continue
        if len(graph.consumers().get(src, [])) != 1:
            continue
        scale = np.asarray(node.param.scaleData, np.float64)
        bias = np.asarray(node.param.biasData if node.param.biasData is not None else np.zeros(scale.size),
                          np.float64)
        if not _fold(conv, scale, bias):
            continue
        conv.outputs = list(node.outputs)
        graph.nodes.remove(node)
        folded += 1
    return folded
