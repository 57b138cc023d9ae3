"""Recognise RMSNorm, x / sqrt(mean(x^2) + eps) [* gamma] over trailing axes (LLaMA/T5 style, any of the usual ways
of writing the division: Div by Sqrt, Mul by Reciprocal(Sqrt) or 1/Sqrt, Mul by Rsqrt), and replace it by one MNN
LayerNorm with useRMSNorm (official MNN 3.6.1 runs it; measured)."""

from __future__ import annotations

from typing import TypeGuard

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "fuse-rms-norm"

OT = fb.OpType
BIN = fb.BinaryOpOperation
UN = fb.UnaryOpOperation


def _reader(graph: Graph, name: str) -> Node | None:
    readers = graph.consumers().get(name, [])
    return readers[0] if len(readers) == 1 and name not in graph.outputs else None


def _binary(node: Node | None, op: int) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.BinaryOp and node.param.opType == op and \
        not node.param.activationType


def _unary(node: Node | None, op: int) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.UnaryOp and node.param.opType == op


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.constants.get(name)
    return None if value is None or value.size != 1 or value.dtype.kind != "f" else float(value.ravel()[0])


def _squared(graph: Graph, node: Node | None) -> str | None:
    """x for Pow(x, 2) or Mul(x, x)."""
    if _binary(node, BIN.POW) and _scalar(graph, node.inputs[1]) == 2.0:
        return node.inputs[0]
    if _binary(node, BIN.MUL) and node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _trailing(dims: list[int], rank: int | None) -> list[int] | None:
    neg = sorted(d if d < 0 else (d - rank if rank is not None else d) for d in dims)
    return neg if neg and neg == list(range(-len(neg), 0)) else None


def _normalised(graph: Graph, x: str, denom: Node) -> Node | None:
    """The node computing x / sqrt(...) from the node after `+ eps`, or None."""
    step = _reader(graph, denom.outputs[0])
    if _unary(step, UN.RSQRT):
        final = _reader(graph, step.outputs[0])
        return final if _binary(final, BIN.MUL) and x in final.inputs else None
    if not _unary(step, UN.SQRT):
        return None
    final = _reader(graph, step.outputs[0])
    if _binary(final, BIN.REALDIV) or _binary(final, BIN.DIV):
        if final.inputs == [x, step.outputs[0]]:
            return final
        if _scalar(graph, final.inputs[0]) == 1.0:  # 1 / sqrt(...), then x * that
            inverse = final
        else:
            return None
    elif _unary(final, UN.RECIPROCAL):
        inverse = final
    else:
        return None
    final = _reader(graph, inverse.outputs[0])
    return final if _binary(final, BIN.MUL) and x in final.inputs else None


def apply(graph: Graph) -> int:
    """Returns the number of RMSNorm subgraphs replaced (the old ops become dead; remove-dead drops them)."""
    count = 0
    producers = graph.producers()
    for mean in list(graph.nodes):
        if mean not in graph.nodes or mean.op_type != OT.Reduction or mean.param.operation != fb.ReductionType.MEAN or \
                not mean.param.keepDims or mean.param.dim is None or len(mean.inputs) != 1:
            continue
        x = _squared(graph, producers.get(mean.inputs[0]))
        dims = None if x is None else _trailing([int(d) for d in mean.param.dim], graph.ranks.get(x))
        add = _reader(graph, mean.outputs[0])
        if x is None or dims is None or not _binary(add, BIN.ADD):
            continue
        eps = _scalar(graph, add.inputs[1] if add.inputs[0] == mean.outputs[0] else add.inputs[0])
        last = _normalised(graph, x, add) if eps is not None else None
        if last is None:
            continue
        param = fb.LayerNormT()
        param.axis, param.epsilon, param.useRmsnorm = dims, eps, True
        mul = _reader(graph, last.outputs[0])
        if _binary(mul, BIN.MUL):
            other = mul.inputs[1] if mul.inputs[0] == last.outputs[0] else mul.inputs[0]
            gamma = graph.constants.get(other)
            if gamma is not None and gamma.dtype.kind == "f" and 1 <= gamma.ndim <= len(dims) and gamma.size > 1:
                param.gamma = gamma.astype(np.float32).ravel()
                param.beta = np.zeros_like(param.gamma)
                last = mul
        index = graph.nodes.index(last)
        graph.nodes[index] = Node(last.name, OT.LayerNorm, [x], list(last.outputs), fb.OpParameter.LayerNorm, param)
        producers = graph.producers()
        count += 1
    return count
