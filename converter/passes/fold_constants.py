"""Constant folding: ops whose inputs are all constants are evaluated with numpy and become constants."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, normalize_const
from .numpy_eval import evaluate

NAME = "fold-constants"


def apply(graph: Graph) -> int:
    """Fold in topological order (so chains fold in one run); returns the number of ops folded."""
    folded = 0
    for node in graph.topological_order():
        if not node.inputs or any(not name or name not in graph.constants for name in node.inputs):
            continue
        if any(name in graph.outputs for name in node.outputs):
            continue
        try:
            with np.errstate(all="ignore"):
                values = evaluate(node, [graph.constants[name] for name in node.inputs])
        except (ValueError, IndexError, TypeError, ZeroDivisionError):
            values = None
        if values is None or len(values) != len(node.outputs):
            continue
        for name, value in zip(node.outputs, values, strict=True):
            graph.constants[name] = normalize_const(np.asarray(value))
        graph.nodes.remove(node)
        folded += 1
    return folded
