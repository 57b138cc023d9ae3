"""Fuse a ReLU (slope 0) that directly follows a float BinaryOp into its activationType (MergeReluToBinaryOp)."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph

NAME = "fuse-relu-into-binary"

_FUSABLE = {fb.BinaryOpOperation.ADD, fb.BinaryOpOperation.SUB, fb.BinaryOpOperation.MUL,
            fb.BinaryOpOperation.REALDIV, fb.BinaryOpOperation.MAXIMUM, fb.BinaryOpOperation.MINIMUM}


def apply(graph: Graph) -> int:
    """Returns the number of ReLUs fused."""
    fused = 0
    for act in list(graph.nodes):
        if act.op_type != fb.OpType.ReLU or (act.param is not None and act.param.slope != 0.0):
            continue
        src = act.inputs[0]
        binary = graph.producers().get(src)
        if binary is None or binary.op_type != fb.OpType.BinaryOp or src in graph.outputs:
            continue
        if binary.param.opType not in _FUSABLE or binary.param.activationType != 0:
            continue
        if len(graph.consumers().get(src, [])) != 1:
            continue
        binary.param.activationType = 1
        binary.outputs = list(act.outputs)
        graph.nodes.remove(act)
        fused += 1
    return fused
