"""Fold Add/Sub/Mul by a per-channel (or scalar) constant that directly follows a convolution into its bias/weights.

The correct form of MNNConvert's ConvBiasAdd: it only applies while the convolution has no fused activation (3.6.1
also folds an Add that comes after a fused ReLU, which changes the result).
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .fuse_scale_into_conv import _fold

NAME = "fuse-binary-into-conv"

BIN = fb.BinaryOpOperation
_CONVS = {fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise, fb.OpType.Deconvolution,
          fb.OpType.DeconvolutionDepthwise}


def _per_channel(value: np.ndarray, channels: int) -> np.ndarray | None:
    """The constant as a [channels] vector if it broadcasts along dim 1 of an NCHW tensor (rank <= 4)."""
    if value.dtype.kind != "f":
        return None
    if value.size == 1:
        return np.full(channels, float(value.ravel()[0]))
    shape = list(value.shape)
    while shape and shape[0] == 1 and len(shape) > 3:
        shape.pop(0)
    if value.size == channels and len(shape) == 3 and shape[1:] == [1, 1]:
        return value.astype(np.float64).ravel()
    return None


def _candidate(graph: Graph, node: Node) -> tuple[Node, np.ndarray, int] | None:
    if node.op_type != fb.OpType.BinaryOp or node.param.activationType or \
            node.param.opType not in (BIN.ADD, BIN.SUB, BIN.MUL):
        return None
    producers = graph.producers()
    for slot in (0, 1):
        conv = producers.get(node.inputs[slot])
        const = graph.constants.get(node.inputs[1 - slot])
        if conv is None or const is None or conv.op_type not in _CONVS or len(conv.inputs) != 1:
            continue
        if node.param.opType == BIN.SUB and slot == 1:
            continue
        out = conv.outputs[0]
        if out in graph.outputs or len(graph.consumers().get(out, [])) != 1:
            continue
        common = conv.param.common
        if common.relu or common.relu6 or conv.param.weight is None:
            continue
        values = _per_channel(const, common.outputCount)
        if values is not None:
            return conv, values, node.param.opType
    return None


def apply(graph: Graph) -> int:
    """Returns the number of BinaryOps folded away."""
    folded = 0
    for node in list(graph.nodes):
        found = _candidate(graph, node)
        if found is None:
            continue
        conv, values, operation = found
        ones = np.ones_like(values)
        if operation == BIN.MUL:
            ok = _fold(conv, values, np.zeros_like(values))
        else:
            ok = _fold(conv, ones, values if operation == BIN.ADD else -values)
        if not ok:
            continue
        conv.outputs = list(node.outputs)
        graph.nodes.remove(node)
        folded += 1
    return folded
