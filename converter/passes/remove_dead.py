"""Remove ops whose outputs nothing reads (and that are not graph outputs), and unused constants."""

from __future__ import annotations

from ..graph import Graph

NAME = "remove-dead"


def apply(graph: Graph) -> int:
    """Keep only what the graph outputs depend on; returns the number of ops removed."""
    producers = graph.producers()
    live: set[str] = set()
    needed_nodes: set[int] = set()
    stack = list(graph.outputs)
    while stack:
        name = stack.pop()
        if name in live:
            continue
        live.add(name)
        node = producers.get(name)
        if node is not None and id(node) not in needed_nodes:
            needed_nodes.add(id(node))
            stack.extend(n for n in node.inputs if n)
    before = len(graph.nodes)
    graph.nodes = [node for node in graph.nodes if id(node) in needed_nodes]
    for name in [n for n in graph.constants if n not in live]:
        del graph.constants[name]
    return before - len(graph.nodes)
