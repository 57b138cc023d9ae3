"""Recognise the tanh approximation of GELU, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), written in
any order of Mul/Add/Pow/Div with scalar constants, and replace it by one UnaryOp GELU (MNN's tanh-form GELU).

The subgraph is found by structure (elementwise ops between one tensor x and a Tanh, and up to three elementwise
ops after it) and then verified numerically: it is evaluated on sample values and must equal the formula.
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .rewrite import rewrite_each, unary_fuser

NAME = "fuse-gelu-tanh"

OT = fb.OpType
BIN = fb.BinaryOpOperation
_OPS = {
    BIN.ADD: np.add, BIN.SUB: np.subtract, BIN.MUL: np.multiply, BIN.REALDIV: np.divide, BIN.DIV: np.divide,
    BIN.POW: np.power,
}
_SAMPLES = np.linspace(-4.0, 4.0, 33)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """The reference formula (float64)."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _elementwise(node: Node | None) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.BinaryOp and node.param is not None and \
        node.param.opType in _OPS and not node.param.activationType and len(node.inputs) == 2


def _is_tanh(node: Node | None) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.UnaryOp and node.param is not None and \
        node.param.opType == fb.UnaryOpOperation.TANH


class _Expr:
    """Evaluates a tensor of the candidate subgraph as a function of its single free input."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producers = graph.producers()
        self.consumers = graph.consumers()

    def scalar(self, name: str) -> bool:
        value = self.graph.constants.get(name)
        return value is not None and value.size == 1 and value.dtype.kind == "f"

    def leaves(self, name: str, inner: list[Node]) -> set[str] | None:
        """Free inputs of `name`, walking up through single-reader elementwise ops (collected into `inner`)."""
        if self.scalar(name):
            return set()
        node = self.producers.get(name)
        shared = len(self.consumers.get(name, [])) > 1 or name in self.graph.outputs
        if shared or not (_elementwise(node) or _is_tanh(node)):
            return {name}
        found: set[str] = set()
        for src in node.inputs:
            sub = self.leaves(src, inner)
            if sub is None:
                return None
            found |= sub
        inner.append(node)
        return found

    def value(self, name: str, x: str, sample: np.ndarray) -> np.ndarray:
        if name == x:
            return sample
        if self.scalar(name):
            return np.asarray(self.graph.constants[name].ravel()[0], np.float64)
        node = self.producers[name]
        if _is_tanh(node):
            return np.tanh(self.value(node.inputs[0], x, sample))
        a, b = (self.value(src, x, sample) for src in node.inputs)
        with np.errstate(all="ignore"):
            return _OPS[node.param.opType](a, b)


def _match(graph: Graph, tanh: Node) -> tuple[str, Node] | None:
    expr = _Expr(graph)
    inner: list[Node] = []
    leaves = expr.leaves(tanh.inputs[0], inner)
    if leaves is None or len(leaves) != 1:
        return None
    x = next(iter(leaves))
    current = tanh
    for _ in range(3):
        readers = expr.consumers.get(current.outputs[0], [])
        if len(readers) != 1 or current.outputs[0] in graph.outputs or not _elementwise(readers[0]):
            return None
        previous, current = current.outputs[0], readers[0]
        for name in current.inputs:
            if name in (x, previous):
                continue
            sub = expr.leaves(name, [])
            if sub is None or not sub <= {x}:
                return None
        try:
            got = expr.value(current.outputs[0], x, _SAMPLES)
        except KeyError:
            return None
        if np.allclose(got, gelu_tanh(_SAMPLES), rtol=1e-4, atol=1e-5):
            return x, current
    return None


def apply(graph: Graph) -> int:
    """Returns the number of tanh-GELU subgraphs replaced (the old ops become dead; remove-dead drops them)."""
    return rewrite_each(graph, _is_tanh, unary_fuser(_match, fb.UnaryOpOperation.GELU))
