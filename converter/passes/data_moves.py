"""Count the ops of a graph that move tensor data: the figure the transformer passes are judged by (issue #12).

An op is a data move when it copies or reorders elements of a data tensor without computing new values, which
MNN's geometry turns into Raster regions:

- Permute, Transpose, Raster;
- Slice / SliceTf / StridedSlice (torch.roll's halves, Split pieces), Concat and Pack (roll's join, a class token),
  Unpack, and Gather / GatherV2 / GatherND / GatherElements with constant indices (a token reorder, q/k/v taken
  from a fused QKV projection, a class-token selection).

An op counts once per output it writes: a Split (MNN Slice) into q, k and v copies three tensors, as three Gathers
do, and is counted 3.

Not counted:

- shape arithmetic: ops whose inputs are all shape data (constants, Shape / Rank / Size results and ops computed
  only from those), such as the Shape -> StridedSlice -> Concat that matmul-to-conv writes for its output shape;
- metadata-only ops (Reshape, Squeeze, Unsqueeze, Flatten, ExpandDims): a new view of the same buffer;
- ConvertTensor: the layout conversions around convolutions (one pair per 1x1 Convolution, the same number before
  and after the transformer passes);
- a Gather with computed indices (an embedding lookup): a data-dependent read, not a fixed move.
"""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

OT = fb.OpType

ALWAYS = frozenset({OT.Permute, OT.Transpose, OT.Raster, OT.Slice, OT.SliceTf, OT.StridedSlice, OT.Unpack})
JOINS = frozenset({OT.Concat, OT.Pack})
GATHERS = frozenset({OT.Gather, OT.GatherV2, OT.GatherND, OT.GatherElements})
SHAPE_SOURCES = frozenset({OT.Shape, OT.Rank, OT.Size})


def shape_tensors(graph: Graph) -> set[str]:
    """Names of the tensors holding shape data: constants, Shape / Rank / Size results and what is computed only
    from those."""
    shapes = set(graph.constants)
    for node in graph.topological_order():
        if node.op_type in SHAPE_SOURCES or all(name in shapes for name in node.inputs):
            shapes.update(node.outputs)
    return shapes


def is_move(graph: Graph, node: Node, shapes: set[str]) -> bool:
    """Whether `node` moves tensor data (see the module doc); `shapes` from `shape_tensors(graph)`."""
    if not node.inputs or all(name in shapes for name in node.inputs):
        return False
    if node.op_type in ALWAYS:
        return node.inputs[0] not in shapes
    if node.op_type in JOINS:
        return True
    if node.op_type in GATHERS:
        return node.inputs[0] not in shapes and len(node.inputs) > 1 and node.inputs[1] in graph.constants
    return False


def moves(graph: Graph) -> list[Node]:
    """The data-moving ops of `graph`, in its node order."""
    shapes = shape_tensors(graph)
    return [node for node in graph.nodes if is_move(graph, node, shapes)]


def count(graph: Graph) -> int:
    """The number of tensors written by data-moving ops of `graph` (one per op but for multi-output ones)."""
    return sum(len(node.outputs) for node in moves(graph))
