"""Helpers shared by the fusion passes: offer each node of one kind to a rewrite, and put a fused node in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node


def rewrite_each(graph: Graph, candidate: Callable[[Node], bool], rewrite: Callable[[Graph, Node], bool]) -> int:
    """Call `rewrite(graph, node)` for every node of the graph as it is now that is still in the graph when its turn
    comes and that `candidate` accepts; returns how many calls reported a rewrite (True)."""
    count = 0
    for node in list(graph.nodes):
        if node in graph.nodes and candidate(node) and rewrite(graph, node):
            count += 1
    return count


def unary_fuser(match: Callable[[Graph, Node], tuple[str, Node] | None], operation: int,
                in_place: bool = True) -> Callable[[Graph, Node], bool]:
    """A rewrite for `rewrite_each`: where `match(graph, node)` finds (x, final), `final`'s outputs become UnaryOp
    `operation` of x, put at `final`'s place (`in_place`) or appended to the node list."""

    def fuse(graph: Graph, node: Node) -> bool:
        found = match(graph, node)
        if found is None:
            return False
        x, final = found
        param = fb.UnaryOpT()
        param.opType = operation
        if in_place:
            replace_in_place(graph, final, fb.OpType.UnaryOp, [x], fb.OpParameter.UnaryOp, param)
        else:
            graph.nodes.remove(final)
            graph.add(fb.OpType.UnaryOp, [x], list(final.outputs), fb.OpParameter.UnaryOp, param, name=final.name)
        return True

    return fuse


def replace_in_place(graph: Graph, old: Node, op_type: int, inputs: list[str], param_type: int, param: Any) -> Node:
    """A node with `old`'s name and outputs, computing them as `op_type` of `inputs`, at `old`'s place in the list."""
    node = Node(old.name, op_type, inputs, list(old.outputs), param_type, param)
    graph.nodes[graph.nodes.index(old)] = node
    return node
