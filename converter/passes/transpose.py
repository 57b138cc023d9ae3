"""Transpose cancellation: consecutive Permutes are composed, identity Permutes removed, and a Permute that only swaps
the last two axes of a MatMul operand becomes the MatMul's transposeA/transposeB flag."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "transpose-cancellation"


def _single_reader(graph: Graph, tensor: str) -> Node | None:
    readers = graph.consumers().get(tensor, [])
    if len(readers) != 1 or tensor in graph.outputs:
        return None
    return readers[0]


def _bypass(graph: Graph, node: Node) -> None:
    """Remove a no-op single-input node, keeping its output name when it is a graph output."""
    src, dst = node.inputs[0], node.outputs[0]
    graph.nodes.remove(node)
    producer = graph.producers().get(src)
    if dst in graph.outputs and producer is not None and src not in graph.outputs:
        producer.outputs = [dst if name == src else name for name in producer.outputs]
        graph.rename_input(src, dst)
    elif dst in graph.outputs:
        graph.nodes.append(Node(dst, fb.OpType.Identity, [src], [dst]))
    else:
        graph.rename_input(dst, src)


def _swaps_last_two(perm: list[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]


def apply(graph: Graph) -> int:
    """Returns the number of rewrites."""
    changes = 0
    changed = True
    while changed:
        changed = False
        for node in list(graph.nodes):
            if node not in graph.nodes or node.op_type != fb.OpType.Permute or len(node.inputs) != 1:
                continue
            perm = [int(p) for p in node.param.dims]
            if perm == list(range(len(perm))):
                _bypass(graph, node)
                changes += 1
                changed = True
                continue
            reader = _single_reader(graph, node.outputs[0])
            if reader is not None and reader.op_type == fb.OpType.Permute and len(reader.inputs) == 1:
                second = [int(p) for p in reader.param.dims]
                if len(second) == len(perm):
                    reader.param.dims = [perm[i] for i in second]
                    reader.inputs = list(node.inputs)
                    graph.nodes.remove(node)
                    changes += 1
                    changed = True
                    continue
            if reader is not None and reader.op_type == fb.OpType.MatMul and _swaps_last_two(perm) and \
                    len(reader.inputs) == 2 and reader.inputs[0] != reader.inputs[1]:
                slot = reader.inputs.index(node.outputs[0])
                if slot == 0:
                    reader.param.transposeA = not reader.param.transposeA
                else:
                    reader.param.transposeB = not reader.param.transposeB
                reader.inputs[slot] = node.inputs[0]
                graph.nodes.remove(node)
                changes += 1
                changed = True
    return changes
