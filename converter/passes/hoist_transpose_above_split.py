"""Hoist a common transpose above a split, the inverse of split-before-transpose: when several scalar-index Gathers
of one tensor x along one axis are each followed by a Permute, one Permute of x is made instead
(`Gather(x, i, a) -> Permute(q)` becomes `Gather(Permute(x, p), i, 0)`, p = [a] + q with q's axes shifted past a);
a Gather whose Permute differs keeps the difference as a smaller Permute (transpose-cancellation then often folds it
into a MatMul flag).

It runs after fuse-attention: the per-Gather Permutes that split-before-transpose made and the Attention op did not
absorb (for example a windowed attention left unfused in the compatible mode) are merged back, so splitting first
never costs transposes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "hoist-transpose-above-split"

OT = fb.OpType


def _split_gathers(graph: Graph, source: str, readers: list[Node]) -> list[tuple[Node, Node]] | None:
    """(Gather, its Permute) for every scalar-index Gather of `source` on one constant axis, if all have one."""
    consumers = graph.consumers()
    pairs: list[tuple[Node, Node]] = []
    axes = set()
    for node in readers:
        if node.op_type != OT.GatherV2 or len(node.inputs) != 3 or node.inputs[0] != source:
            continue
        index, axis = graph.constants.get(node.inputs[1]), graph.constants.get(node.inputs[2])
        if index is None or index.ndim != 0 or axis is None or axis.size != 1 or int(axis.ravel()[0]) < 0:
            continue
        after = consumers.get(node.outputs[0], [])
        if len(after) != 1 or node.outputs[0] in graph.outputs or after[0].op_type != OT.Permute:
            continue
        axes.add(int(axis.ravel()[0]))
        pairs.append((node, after[0]))
    return pairs if len(pairs) >= 2 and len(axes) == 1 else None


def apply(graph: Graph) -> int:
    """Returns the number of tensors whose split Permutes were merged into one."""
    count = 0
    for source, readers in list(graph.consumers().items()):
        pairs = _split_gathers(graph, source, readers)
        if pairs is None:
            continue
        perms = [[int(d) for d in permute.param.dims] for _, permute in pairs]
        common, _ = Counter(tuple(p) for p in perms).most_common(1)[0]
        mismatched = sum(tuple(p) != common for p in perms)
        if 1 + mismatched >= len(pairs):  # no fewer Permutes
            continue
        axis = int(graph.constants[pairs[0][0].inputs[2]].ravel()[0])
        param = fb.PermuteT()
        param.dims = [axis] + [d + (d >= axis) for d in common]
        hoisted = graph.unique_name(f"{source}_hoisted")
        first = min(graph.nodes.index(gather) for gather, _ in pairs)
        graph.nodes.insert(first, Node(hoisted, OT.Permute, [source], [hoisted], fb.OpParameter.Permute, param))
        zero = graph.add_const(np.int32(0), "axis")
        for (gather, permute), perm in zip(pairs, perms, strict=True):
            gather.inputs = [hoisted, gather.inputs[1], zero]
            if tuple(perm) == common:
                gather.outputs = list(permute.outputs)
                graph.nodes.remove(permute)
            else:  # Permute(Permute(g, common), rest) == Permute(g, perm)
                permute.param.dims = [common.index(v) for v in perm]
        count += 1
    return count
