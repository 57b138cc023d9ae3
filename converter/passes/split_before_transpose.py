"""Split fused QKV before transposing: `Gather(Permute(x, p), i, axis a)` with a scalar index i becomes
`Permute(Gather(x, i, axis p[a]), p')`, p' being p without position a, renumbered.

Swin/ViT exports write `qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)` and then take q, k, v = qkv[0..2]; after
this pass each of q, k, v is `Permute([B, N, H, D], 0213)`, the form fuse-attention folds into the Attention op
(and transpose-cancellation composes with the following K transpose), so the 5-D transpose disappears. The other
export of `unbind`, a Split into pieces of 1 each followed by a Squeeze of that axis, is first rewritten to the same
Gathers.
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "split-before-transpose"

OT = fb.OpType


def _scalar_gather(graph: Graph, node: Node) -> tuple[int, int] | None:
    """(index, axis) of a GatherV2 with a constant scalar index and constant axis, else None."""
    if node.op_type != OT.GatherV2 or len(node.inputs) < 2:
        return None
    index = graph.constants.get(node.inputs[1])
    axis = graph.constants.get(node.inputs[2]) if len(node.inputs) > 2 else np.int32(0)
    if index is None or index.ndim != 0 or index.dtype.kind not in "iu" or axis is None or axis.size != 1:
        return None
    return int(index), int(np.asarray(axis).ravel()[0])


def _unit_split_to_gathers(graph: Graph) -> int:
    """Slice into pieces of size 1 (ONNX Split [1, 1, ...]) whose every piece is squeezed on the split axis ->
    one GatherV2 with a scalar index per piece."""
    count = 0
    consumers = graph.consumers()
    for node in list(graph.nodes):
        if node.op_type != OT.Slice or len(node.inputs) != 1 or node.param is None:
            continue
        points = [int(p) for p in (node.param.slicePoints if node.param.slicePoints is not None else [])]
        axis = int(node.param.axis)
        if points != [1] * len(node.outputs) or len(points) < 2:
            continue
        squeezes = []
        for out in node.outputs:
            readers = consumers.get(out, [])
            if len(readers) != 1 or out in graph.outputs or readers[0].op_type != OT.Squeeze:
                break
            dims = readers[0].param.squeezeDims if readers[0].param is not None else None
            if dims is None or [int(d) for d in dims] != [axis]:
                break
            squeezes.append(readers[0])
        if len(squeezes) != len(node.outputs):
            continue
        axis_name = graph.add_const(np.int32(axis), "axis")
        gathers = [Node(sq.name, OT.GatherV2, [node.inputs[0], graph.add_const(np.int32(i), "index"), axis_name],
                        list(sq.outputs)) for i, sq in enumerate(squeezes)]
        position = graph.nodes.index(node)
        for sq in squeezes:
            graph.nodes.remove(sq)
        graph.nodes[position: position + 1] = gathers
        count += 1
    return count


def apply(graph: Graph) -> int:
    """Returns the number of rewrites: unit Splits made Gathers, and Gathers moved before their Permute (the Permute
    is removed once it has no readers)."""
    count = _unit_split_to_gathers(graph)
    for node in list(graph.nodes):
        found = _scalar_gather(graph, node)
        if found is None:
            continue
        _, axis = found
        permute = graph.producers().get(node.inputs[0])
        if permute is None or permute.op_type != OT.Permute or len(permute.inputs) != 1:
            continue
        perm = [int(p) for p in permute.param.dims]
        rank = len(perm)
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            continue
        source = perm[axis]
        rest = [p - (p > source) for j, p in enumerate(perm) if j != axis]
        gathered = graph.unique_name(f"{node.outputs[0]}_split")
        new_gather = Node(gathered, OT.GatherV2, [permute.inputs[0], node.inputs[1],
                                                  graph.add_const(np.int32(source), "axis")], [gathered],
                          node.param_type, node.param)
        param = fb.PermuteT()
        param.dims = rest
        position = graph.nodes.index(node)
        graph.nodes[position: position + 1] = [
            new_gather, Node(node.name, OT.Permute, [gathered], list(node.outputs), fb.OpParameter.Permute, param)]
        if permute.inputs[0] in graph.ranks:
            graph.ranks[gathered] = graph.ranks[permute.inputs[0]] - 1
        if not graph.consumers().get(permute.outputs[0]) and permute.outputs[0] not in graph.outputs:
            graph.nodes.remove(permute)
        count += 1
    return count
