"""Recognise GroupNorm as the ONNX frontend (and torch's export) writes it and replace it by one MNN GroupNorm op:

    Reshape(x, [0, G, -1]) -> LayerNorm(axis [-1], no gamma) -> Reshape(., Shape(x) | const)
        -> Scale(gamma, beta) | Mul(gamma) [-> Add(beta)]  [-> y * Sigmoid(y): bSwish]

Official MNN 3.6.1's CPU has no GroupNorm kernel ("Don't support type [GroupNorm]", measured), so this pass is not
in the default PIPELINE: files it writes run in mnnpy (and in MNN builds with the GPU / transformer kernels).
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .rewrite import replace_in_place, rewrite_each

NAME = "fuse-group-norm"

OT = fb.OpType
BIN = fb.BinaryOpOperation


def _reader(graph: Graph, name: str) -> Node | None:
    readers = graph.consumers().get(name, [])
    return readers[0] if len(readers) == 1 and name not in graph.outputs else None


def _binary_const(graph: Graph, node: Node | None, op: int, known: str) -> np.ndarray | None:
    if node is None or node.op_type != OT.BinaryOp or node.param.opType != op or node.param.activationType:
        return None
    other = node.inputs[1] if node.inputs[0] == known else node.inputs[0]
    value = graph.constants.get(other)
    return value if value is not None and value.dtype.kind == "f" else None


def _channel_vector(value: np.ndarray | None, channels: int | None) -> np.ndarray | None:
    """A [C, 1, ..] or [1, C, 1, ..] constant (it broadcasts along dim 1) as a [C] vector, else None."""
    if value is None:
        return None
    dims = list(value.shape)
    while len(dims) > 2 and dims[0] == 1:
        dims.pop(0)
    if len(dims) < 2 or any(d != 1 for d in dims[1:]) or (channels is not None and dims[0] != channels):
        return None
    return value.reshape(-1).astype(np.float32)


def _groups(graph: Graph, node: Node) -> int | None:
    shape = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if shape is None or shape.size != 3 or int(shape[0]) != 0 or int(shape[2]) != -1 or int(shape[1]) < 1:
        return None
    return int(shape[1])


def _match(graph: Graph, first: Node) -> tuple[fb.GroupNormT, Node] | None:
    groups = _groups(graph, first)
    norm = _reader(graph, first.outputs[0])
    if groups is None or norm is None or norm.op_type != OT.LayerNorm:
        return None
    p = norm.param
    if len(p.axis) != 1 or int(p.axis[0]) != -1 or (p.gamma is not None and len(p.gamma)) or p.useRmsnorm or \
            (p.group or 1) > 1:
        return None
    back = _reader(graph, norm.outputs[0])
    if back is None or back.op_type != OT.Reshape or len(back.inputs) < 2:
        return None
    shape_src = graph.producers().get(back.inputs[1])
    if not (shape_src is not None and shape_src.op_type == OT.Shape and shape_src.inputs[0] == first.inputs[0]):
        return None
    param = fb.GroupNormT()
    param.axis, param.epsilon, param.group = 1, float(p.epsilon), groups
    last = back
    reader = _reader(graph, last.outputs[0])
    gamma = beta = None
    if reader is not None and reader.op_type == OT.Scale:
        gamma = np.asarray(reader.param.scaleData, np.float32)
        beta = np.asarray(reader.param.biasData, np.float32) if reader.param.biasData is not None else None
        last = reader
    else:
        gamma = _channel_vector(_binary_const(graph, reader, BIN.MUL, last.outputs[0]), None)
        if gamma is not None and reader is not None:
            last = reader
            add = _reader(graph, last.outputs[0])
            beta = _channel_vector(_binary_const(graph, add, BIN.ADD, last.outputs[0]), gamma.size)
            if beta is not None and add is not None:
                last = add
    if gamma is not None:
        param.gamma = gamma
        param.beta = beta if beta is not None and beta.size == gamma.size else np.zeros_like(gamma)
    last = _swish(graph, last, param)
    return param, last


def _swish(graph: Graph, last: Node, param: fb.GroupNormT) -> Node:
    """Absorb y * Sigmoid(y) after the norm (MNN's bSwish)."""
    readers = graph.consumers().get(last.outputs[0], [])
    if len(readers) != 2 or last.outputs[0] in graph.outputs:
        return last
    sig = next((n for n in readers if n.op_type == OT.UnaryOp and n.param.opType == fb.UnaryOpOperation.SIGMOID), None)
    mul = next((n for n in readers if n.op_type == OT.BinaryOp and n.param.opType == BIN.MUL), None)
    if sig is None or mul is None or sorted(mul.inputs) != sorted([last.outputs[0], sig.outputs[0]]) or \
            mul.param.activationType or len(graph.consumers().get(sig.outputs[0], [])) != 1:
        return last
    param.bSwish = 1
    return mul


def _fuse(graph: Graph, node: Node) -> bool:
    found = _match(graph, node)
    if found is None:
        return False
    param, last = found
    replace_in_place(graph, last, OT.GroupNorm, [node.inputs[0]], fb.OpParameter.GroupNorm, param)
    return True


def apply(graph: Graph) -> int:
    """Returns the number of GroupNorm subgraphs replaced (leftovers are removed by remove-dead)."""
    return rewrite_each(graph, lambda node: node.op_type == OT.Reshape, _fuse)
