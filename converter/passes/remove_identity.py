"""Remove Identity and Dropout ops (inference no-ops), rewiring readers to the op's input."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph

NAME = "remove-identity"

_NOOPS = (fb.OpType.Identity, fb.OpType.Dropout)


def apply(graph: Graph) -> int:
    """Drop Identity/Dropout nodes. A graph output produced by one renames its source tensor instead."""
    removed = 0
    for node in list(graph.nodes):
        if node.op_type not in _NOOPS or len(node.inputs) != 1:
            continue
        src, dst = node.inputs[0], node.outputs[0]
        if dst not in graph.outputs:
            graph.nodes.remove(node)
            graph.rename_input(dst, src)
            removed += 1
            continue
        producer = graph.producers().get(src)
        if producer is None or src in graph.outputs or producer is node:
            node.op_type = fb.OpType.Identity  # input passed straight to an output: MNN runs Identity, not Dropout
            continue
        graph.nodes.remove(node)
        producer.outputs = [dst if name == src else name for name in producer.outputs]
        if producer.name == src:
            producer.name = dst
        graph.rename_input(src, dst)
        removed += 1
    return removed
