"""Recognise GELU written with Erf, x * 0.5 * (1 + erf(x / sqrt(2))), and replace it by UnaryOp GELU_STANDARD."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .rewrite import rewrite_each, unary_fuser

NAME = "fuse-gelu"

BIN = fb.BinaryOpOperation


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.constants.get(name)
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.ravel()[0])


def _binary(node: Node | None, *ops: int) -> bool:
    return node is not None and node.op_type == fb.OpType.BinaryOp and node.param.opType in ops and \
        not node.param.activationType


def _other(node: Node, name: str) -> str:
    return node.inputs[1] if node.inputs[0] == name else node.inputs[0]


def _only_reader(graph: Graph, name: str) -> Node | None:
    readers = graph.consumers().get(name, [])
    return readers[0] if len(readers) == 1 and name not in graph.outputs else None


def _match(graph: Graph, erf: Node) -> tuple[str, Node] | None:
    """Returns (x, final node) for one GELU pattern rooted at `erf`."""
    producers = graph.producers()
    scaled = producers.get(erf.inputs[0])
    if _binary(scaled, BIN.REALDIV):
        factor = _scalar(graph, scaled.inputs[1])
        ok = factor is not None and abs(factor - np.sqrt(2.0)) < 1e-4
    elif _binary(scaled, BIN.MUL):
        factor = _scalar(graph, scaled.inputs[1]) or _scalar(graph, scaled.inputs[0])
        ok = factor is not None and abs(factor - 1 / np.sqrt(2.0)) < 1e-4
    else:
        return None
    if not ok:
        return None
    x = scaled.inputs[0] if scaled.inputs[0] not in graph.constants else scaled.inputs[1]
    add = _only_reader(graph, erf.outputs[0])
    if not _binary(add, BIN.ADD) or _scalar(graph, _other(add, erf.outputs[0])) != 1.0:
        return None
    first = _only_reader(graph, add.outputs[0])
    if not _binary(first, BIN.MUL):
        return None
    other = _other(first, add.outputs[0])
    if other == x or _scalar(graph, other) == 0.5:  # (x * (1 + erf)) * 0.5, or (0.5 * (1 + erf)) * x
        second = _only_reader(graph, first.outputs[0])
        want = 0.5 if other == x else None
        if not _binary(second, BIN.MUL):
            return None
        rest = _other(second, first.outputs[0])
        if (want == 0.5 and _scalar(graph, rest) == 0.5) or (want is None and rest == x):
            return x, second
        return None
    half = producers.get(other)  # (x * 0.5) * (1 + erf)
    if _binary(half, BIN.MUL) and x in half.inputs and _scalar(graph, _other(half, x)) == 0.5:
        return x, first
    return None


def _is_erf(node: Node) -> bool:
    return node.op_type == fb.OpType.UnaryOp and node.param.opType == fb.UnaryOpOperation.ERF


def apply(graph: Graph) -> int:
    """Returns the number of GELU subgraphs replaced (the old ops become dead and are removed later); the GELU op
    is appended to the node list."""
    return rewrite_each(graph, _is_erf, unary_fuser(_match, fb.UnaryOpOperation.GELU_STANDARD, in_place=False))
