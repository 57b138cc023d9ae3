"""Merge duplicate ops and constants (MNNConvert's FuseDupOp): same type, same inputs, same parameters."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..graph import Graph

NAME = "fuse-duplicate-ops"


def _key(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest())
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return (type(value).__name__, tuple(sorted((k, _key(v)) for k, v in vars(value).items())))


def apply(graph: Graph) -> int:
    """Returns the number of ops and constants merged away."""
    merged = 0
    seen_consts: dict[Any, str] = {}
    for name in list(graph.constants):
        if name in graph.outputs:
            continue
        key = _key(graph.constants[name])
        if key in seen_consts:
            graph.rename_input(name, seen_consts[key])
            del graph.constants[name]
            merged += 1
        else:
            seen_consts[key] = name
    seen: dict[Any, list[str]] = {}
    for node in graph.topological_order():
        if any(out in graph.outputs for out in node.outputs):
            continue
        key = (node.op_type, tuple(node.inputs), len(node.outputs), node.param_type, node.default_format,
               _key(node.param))
        if key in seen:
            for old, new in zip(node.outputs, seen[key], strict=True):
                graph.rename_input(old, new)
            graph.nodes.remove(node)
            merged += 1
        else:
            seen[key] = list(node.outputs)
    return merged
