"""Recognise a decomposed LayerNorm, (x - mean) / sqrt(mean((x - mean)^2) + eps) [* gamma] [+ beta], over trailing
axes, and replace it by one MNN LayerNorm op (MNNConvert's FuseLayerNorm)."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "fuse-layer-norm"

BIN = fb.BinaryOpOperation


def _binary(node: Node | None, op: int) -> bool:
    return node is not None and node.op_type == fb.OpType.BinaryOp and node.param.opType == op and \
        not node.param.activationType


def _mean(node: Node | None) -> bool:
    return node is not None and node.op_type == fb.OpType.Reduction and len(node.inputs) == 1 and \
        node.param.operation == fb.ReductionType.MEAN and node.param.keepDims and node.param.dim is not None


def _const(graph: Graph, node: Node, known: str) -> np.ndarray | None:
    other = node.inputs[1] if node.inputs[0] == known else node.inputs[0]
    return graph.constants.get(other)


def _reader(graph: Graph, name: str) -> Node | None:
    readers = graph.consumers().get(name, [])
    return readers[0] if len(readers) == 1 and name not in graph.outputs else None


def _trailing(dims: list[int], rank: int | None) -> list[int] | None:
    neg = sorted(d if d < 0 else (d - rank if rank is not None else d) for d in dims)
    if any(d >= 0 for d in neg) or neg != list(range(-len(neg), 0)):
        return None
    return neg


def _match(graph: Graph, var: Node) -> tuple[Node, str, list[int], float, Node] | None:
    producers = graph.producers()
    square = producers.get(var.inputs[0])
    if _binary(square, BIN.POW):
        exponent = graph.constants.get(square.inputs[1])
        if exponent is None or exponent.size != 1 or float(exponent.ravel()[0]) != 2.0:
            return None
        centered = square.inputs[0]
    elif _binary(square, BIN.MUL) and square.inputs[0] == square.inputs[1]:
        centered = square.inputs[0]
    else:
        return None
    sub = producers.get(centered)
    if not _binary(sub, BIN.SUB):
        return None
    x, mean = sub.inputs
    mean_node = producers.get(mean)
    if not _mean(mean_node) or mean_node.inputs[0] != x or sorted(mean_node.param.dim) != sorted(var.param.dim):
        return None
    dims = _trailing(list(var.param.dim), graph.ranks.get(x))
    add = _reader(graph, var.outputs[0])
    if dims is None or not _binary(add, BIN.ADD):
        return None
    eps = _const(graph, add, var.outputs[0])
    sqrt = _reader(graph, add.outputs[0])
    if eps is None or eps.size != 1 or sqrt is None or sqrt.op_type != fb.OpType.UnaryOp or \
            sqrt.param.opType != fb.UnaryOpOperation.SQRT:
        return None
    div = _reader(graph, sqrt.outputs[0])
    if not _binary(div, BIN.REALDIV) or div.inputs != [centered, sqrt.outputs[0]]:
        return None
    return div, x, dims, float(eps.ravel()[0]), sub


def apply(graph: Graph) -> int:
    """Returns the number of LayerNorm subgraphs replaced (leftovers are removed by remove-dead)."""
    count = 0
    for var in list(graph.nodes):
        if var not in graph.nodes or not _mean(var):
            continue
        found = _match(graph, var)
        if found is None:
            continue
        last, x, dims, eps, _ = found
        gamma = beta = None
        mul = _reader(graph, last.outputs[0])
        value = _const(graph, mul, last.outputs[0]) if _binary(mul, BIN.MUL) else None
        if value is not None and value.dtype.kind == "f" and value.ndim == len(dims):  # per-element gamma
            gamma, last = value, mul
            add = _reader(graph, last.outputs[0])
            value = _const(graph, add, last.outputs[0]) if _binary(add, BIN.ADD) else None
            if value is not None and value.dtype.kind == "f" and value.shape == gamma.shape:
                beta, last = value, add
        param = fb.LayerNormT()
        param.axis = dims
        param.epsilon = eps
        if gamma is not None:
            param.gamma = gamma.astype(np.float32).ravel()
            param.beta = (np.zeros_like(gamma) if beta is None else beta).astype(np.float32).ravel()
        graph.nodes.remove(last)
        graph.add(fb.OpType.LayerNorm, [x], list(last.outputs), fb.OpParameter.LayerNorm, param, name=last.name)
        count += 1
    return count
