"""Row pruning: compute only the token rows a constant-index selection keeps (ViT's classifier reads the class token).

A GatherV2 with a constant index, or a StridedSlice with constant bounds on one axis, on a row axis (not the last,
channel, axis) of a tensor of known shape, e.g. ViT's `x[:, 0]` after the final LayerNorm, needs only some rows of its
input. Going back from it, every op whose output is read only by the selection or by ops already pruned, and that
maps each row on its own, needs only those rows of its inputs too: per-token ops (token_reorder.per_token: LayerNorm
over channels, unary ops, binary ops with per-channel constants, MatMul with constant weights), binary ops of two
activations of the output's shape (the residual Adds; both sides are selected) and Reshapes that keep the dims up to
the row axis. Those ops are re-emitted on the selected rows; the selection moves onto their inputs from outside that
region (an op that mixes tokens, such as Attention or a token Softmax, or a tensor also read elsewhere). In ViT-tiny
the last block's output projection, both residual Adds, the MLP and the LayerNorms then run on 1 row instead of 197.

The Attention itself stays whole: official MNN 3.6.1's Attention is wrong when the query length differs from the key
length (measured: q [1, 1, 3, 8] against k / v [1, 9, 3, 8], zero mask: max error 2.0 vs numpy, mnnpy 7e-8; also
fuse_attention.py), so its query rows are not pruned. Shapes come from mnnpy's own pre-inference on the graph
written as a net (`mnnpy.core.session.infer_shapes`: the runtime's shape functions and constant folding, at the
declared input shapes); with dynamic inputs, or a selection whose index is computed at run time, nothing is pruned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from . import remove_dead
from .token_reorder import per_token

NAME = "prune-rows"

OT = fb.OpType


@dataclass
class Selection:
    """`gather` keeps rows `index` (1-D, non-negative) of axis `axis` of `source` (shape `shape`)."""

    gather: Node
    source: str
    axis: int
    index: np.ndarray
    shape: list[int]
    scalar: bool


def _slice(graph: Graph, node: Node, shape: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(index, axis) of an ONNX-style StridedSlice (fromType 1: begin, end, axes[, steps]) on one axis."""
    param = node.param
    consts = [graph.constants.get(name) for name in node.inputs[1:]]
    if param is None or param.fromType != 1 or len(consts) not in (3, 4) or any(c is None for c in consts) or \
            any(c.size != 1 for c in consts) or param.beginMask or param.endMask or param.ellipsisMask or \
            param.newAxisMask or param.shrinkAxisMask:
        return None
    begin, end, axis = (int(c.ravel()[0]) for c in consts[:3])
    step = int(consts[3].ravel()[0]) if len(consts) == 4 else 1
    ax = axis + len(shape) if axis < 0 else axis
    if step == 0 or not 0 <= ax < len(shape):
        return None
    return np.arange(shape[ax])[slice(begin, end, step)], np.array(axis)


def find(graph: Graph, node: Node, shapes: dict[str, list[int]]) -> Selection | None:
    """The selection `node` makes, when it is a constant-index GatherV2 or a one-axis StridedSlice on a row axis of a
    known shape."""
    shape = shapes.get(node.inputs[0]) if node.inputs else None
    if len(node.outputs) != 1 or shape is None:
        return None
    if node.op_type == OT.StridedSlice:
        found = _slice(graph, node, shape)
        index, axis = found if found is not None else (None, None)
    elif node.op_type == OT.GatherV2 and len(node.inputs) == 3:
        index, axis = graph.constants.get(node.inputs[1]), graph.constants.get(node.inputs[2])
    else:
        return None
    if index is None or axis is None or shape is None or index.dtype.kind not in "iu" or index.ndim > 1 or \
            axis.size != 1 or len(shape) < 2:
        return None
    ax = int(axis.ravel()[0])
    ax = ax + len(shape) if ax < 0 else ax
    rows = shape[ax] if 0 <= ax < len(shape) - 1 else 0
    flat = index.astype(np.int64).ravel()
    flat = np.where(flat < 0, flat + rows, flat)
    if rows == 0 or not 0 < flat.size < rows or np.any(flat < 0) or np.any(flat >= rows):
        return None
    return Selection(node, node.inputs[0], ax, flat.astype(np.int32), shape, index.ndim == 0)


def _row_local(graph: Graph, node: Node, sel: Selection, shapes: dict[str, list[int]]) -> bool:
    """`node` maps each row (along sel.axis, with the dims before it) of its data inputs on its own."""
    out = shapes.get(node.outputs[0]) if len(node.outputs) == 1 else None
    prefix = sel.shape[:sel.axis + 1]
    if out is None or len(out) <= sel.axis + 1 or out[:sel.axis + 1] != prefix:
        return False
    data = [name for name in node.inputs if name not in graph.constants]
    ins = [shapes.get(name) for name in data]
    if any(s is None for s in ins) or not data:
        return False
    if node.op_type == OT.Reshape:
        return len(node.inputs) == 2 and len(data) == 1 and len(ins[0]) > sel.axis + 1 and \
            ins[0][:sel.axis + 1] == prefix
    if node.op_type == OT.BinaryOp and len(data) == 2:
        return ins[0] == out and ins[1] == out
    if len(data) != 1 or len(ins[0]) != len(out) or ins[0][:-1] != out[:-1]:
        return False
    return per_token(graph, node, ins[0][-1], len(out)) == out[-1]


def region(graph: Graph, sel: Selection, shapes: dict[str, list[int]]) -> list[Node]:
    """The ops (in topological order) that can run on the selected rows only (see the module doc)."""
    order = graph.topological_order()
    consumers = graph.consumers()
    inside: set[int] = set()
    for node in reversed(order[:next(i for i, n in enumerate(order) if n is sel.gather)]):
        if len(node.outputs) != 1 or node.outputs[0] in graph.outputs:
            continue
        readers = consumers.get(node.outputs[0], [])
        if readers and all(r is sel.gather or id(r) in inside for r in readers) and \
                _row_local(graph, node, sel, shapes):
            inside.add(id(node))
    return [n for n in order if id(n) in inside]


def _rewrite(graph: Graph, sel: Selection, nodes: list[Node], shapes: dict[str, list[int]]) -> None:
    index = graph.add_const(sel.index, "row_index")
    axis = graph.add_const(np.int32(sel.axis), "row_axis")
    rows = sel.index.size
    picked: dict[str, str] = {}
    new: list[Node] = []

    def selected(name: str) -> str:
        if name not in picked:
            out = graph.unique_name(f"{name}_rows")
            new.append(Node(graph.unique_name(f"{name}_select_rows"), OT.GatherV2, [name, index, axis], [out]))
            picked[name] = out
            if name in graph.ranks:
                graph.ranks[out] = graph.ranks[name]
        return picked[name]

    for node in nodes:
        inputs = [name if name in graph.constants else selected(name) for name in node.inputs]
        if node.op_type == OT.Reshape:
            dims = list(shapes[node.outputs[0]])
            dims[sel.axis] = rows
            inputs[1] = graph.add_const(np.asarray(dims, np.int32), f"{node.name}_rows_shape")
        out = sel.gather.outputs[0] if node.outputs[0] == sel.source and not sel.scalar else \
            graph.unique_name(f"{node.outputs[0]}_rows")
        new.append(Node(graph.unique_name(f"{node.name}_rows"), node.op_type, inputs, [out], node.param_type,
                        node.param, node.default_format))
        picked[node.outputs[0]] = out
        if node.outputs[0] in graph.ranks:
            graph.ranks[out] = graph.ranks[node.outputs[0]]
    if sel.scalar:  # the gather dropped the axis: a view of the selected row
        param = fb.ReshapeT()
        param.dimType = fb.MNN_DATA_FORMAT.NCHW
        dims = sel.shape[:sel.axis] + sel.shape[sel.axis + 1:]
        shape = graph.add_const(np.asarray(dims, np.int32), "row_shape")
        new.append(Node(sel.gather.name, OT.Reshape, [picked[sel.source], shape], list(sel.gather.outputs),
                        fb.OpParameter.Reshape, param))
    at = next(i for i, n in enumerate(graph.nodes) if n is sel.gather)
    graph.nodes[at:at + 1] = new


def _shapes(graph: Graph) -> dict[str, list[int]]:
    """Tensor name -> static shape from pre-inference; {} when it cannot run (dynamic input dims, say)."""
    from mnnpy.schema.errors import ModelError

    from mnnpy.core.session import infer_shapes

    from ..writer import graph_to_net

    try:
        return {name: list(shape) for name, shape in infer_shapes(graph_to_net(graph)).items()}
    except ModelError:  # ConvertError is one too
        return {}


def apply(graph: Graph) -> int:
    """Returns the number of ops moved onto selected rows."""
    count = 0
    shapes = _shapes(graph)
    alive = {id(n) for n in graph.nodes}
    for node in list(graph.nodes):
        sel = find(graph, node, shapes) if id(node) in alive else None
        nodes = region(graph, sel, shapes) if sel is not None else []
        if not any(n is graph.producers().get(sel.source) for n in nodes):
            continue
        _rewrite(graph, sel, nodes, shapes)
        count += len(nodes)
        remove_dead.apply(graph)
        graph.nodes[:] = graph.topological_order()
        shapes = _shapes(graph)
        alive = {id(n) for n in graph.nodes}
    return count
