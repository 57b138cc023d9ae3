"""Split a fused QKV projection into one projection per piece, so no data selection remains.

`Y = x @ W [+ b]` (constant 2-D W, constant bias) read only through selections of column ranges, directly or through
one Reshape whose trailing dims cover the columns (`[..., 3, heads, d]`):

- GatherV2 with a constant scalar index (torch's `qkv[0], qkv[1], qkv[2]`, and `unbind` once split-before-transpose
  has made its Split + Squeeze Gathers),
- Slice (ONNX Split, `qkv.chunk(3, -1)` / `split`),
- StridedSlice on one axis with constant bounds (`qkv[..., :C]`),

becomes, per piece, `x @ W[:, cols] [+ b[cols]]` and a Reshape to the piece's shape: the same products (no more
FLOPs), without the strided copies of the selections. Which columns a selection reads is computed, not assumed:
the selection is run by numpy on the column numbers (a tensor of shape [1, .., 1, trailing dims]) and accepted only
if it yields one contiguous column range.

Runs after split-before-transpose (its Gathers then read the Reshape directly) and before transpose-cancellation and
fuse-attention, which see `Permute(Reshape(x @ Wq + bq), 0213)` per operand.
"""

from __future__ import annotations

import copy

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .numpy_eval import evaluate

NAME = "split-qkv"

OT = fb.OpType


def _linear(graph: Graph, name: str) -> tuple[Node, Node | None, int] | None:
    """(MatMul, its bias Add or None, columns) when `name` is x @ W [+ b] with constant W (2-D) and b."""
    node = graph.producers().get(name)
    add = None
    if node is not None and node.op_type == OT.BinaryOp and node.param is not None and \
            node.param.opType == fb.BinaryOpOperation.ADD and not node.param.activationType:
        add = node
        live = [i for i in node.inputs if i not in graph.constants]
        node = graph.producers().get(live[0]) if len(live) == 1 and len(node.inputs) == 2 else None
    if node is None or node.op_type != OT.MatMul or len(node.inputs) != 2 or node.param is None or \
            node.param.transposeA or node.inputs[0] in graph.constants:
        return None
    weight = graph.constants.get(node.inputs[1])
    if weight is None or weight.ndim != 2 or weight.dtype.kind != "f":
        return None
    cols = int(weight.shape[0] if node.param.transposeB else weight.shape[1])
    if add is not None:
        bias = graph.constants[next(i for i in add.inputs if i in graph.constants)]
        if bias.size != cols or (bias.ndim and bias.shape[-1] != cols) or bias.dtype.kind != "f":
            return None
        if len(graph.consumers().get(node.outputs[0], [])) != 1 or node.outputs[0] in graph.outputs:
            return None
    return node, add, cols


def _pieces(graph: Graph, node: Node, numbers: np.ndarray, lead: int) -> list[tuple[str, int, int, list[int]]] | None:
    """(output, first column, columns, trailing dims) per output of the selection `node` of `numbers` (column
    numbers with `lead` leading axes of size 1), or None unless each output is one contiguous column range taken on
    an axis past the leading ones."""
    rank = numbers.ndim
    consts = [graph.constants.get(name) for name in node.inputs[1:]]
    if any(c is None for c in consts):
        return None
    axis = _axis(node, consts)
    if axis is None or not -rank <= axis < rank or axis % rank < lead:
        return None
    axis %= rank
    try:
        if node.op_type == OT.GatherV2:
            outs = [np.take(numbers, int(consts[0]), axis=axis)]
        elif node.op_type == OT.Slice:
            sizes = list(node.param.slicePoints) if node.param.slicePoints is not None else \
                [numbers.shape[axis] // len(node.outputs)] * len(node.outputs)
            if len(sizes) != len(node.outputs) or sum(sizes) != numbers.shape[axis] or min(sizes) <= 0:
                return None
            outs = np.split(numbers, np.cumsum(sizes)[:-1], axis=axis)
        else:
            outs = evaluate(node, [numbers, *consts])
    except (IndexError, ValueError):
        return None
    if outs is None or len(outs) != len(node.outputs):
        return None
    pieces = []
    for out, values in zip(node.outputs, outs, strict=True):
        flat = values.ravel()
        if flat.size == 0 or not np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
            return None
        pieces.append((out, int(flat[0]), int(flat.size), [int(d) for d in values.shape[lead:]]))
    return pieces


def _axis(node: Node, consts: list[np.ndarray]) -> int | None:
    """The one axis a GatherV2 (scalar index), Slice (torch sizes) or StridedSlice (ONNX Slice) selects on."""
    if node.op_type == OT.GatherV2 and len(consts) == 2 and consts[0].ndim == 0 and consts[1].size == 1:
        return int(consts[1].ravel()[0])
    if node.op_type == OT.Slice and not consts and node.param is not None and \
            node.param.sourceType == fb.NetSource.TORCH:
        return int(node.param.axis)
    if node.op_type == OT.StridedSlice and len(consts) >= 3 and consts[2].size == 1:
        return int(consts[2].ravel()[0])
    return None


def _view(graph: Graph, name: str, cols: int) -> tuple[Node | None, list[int]] | None:
    """(the Reshape of the projection's output `name`, or None when the selections read it directly; the dims of
    the tensor they read, leading unknown dims as -1)."""
    readers = graph.consumers().get(name, [])
    if len(readers) == 1 and readers[0].op_type == OT.Reshape and len(readers[0].inputs) == 2:
        shape = graph.constants.get(readers[0].inputs[1])
        if shape is None or readers[0].outputs[0] in graph.outputs:
            return None
        dims = [int(d) for d in shape.ravel()]
        return (readers[0], dims) if 0 not in dims and all(d >= -1 for d in dims) else None
    rank = graph.ranks.get(name)
    return (None, [-1] * (rank - 1) + [cols]) if rank else None


def _split(graph: Graph, y: str) -> bool:
    found = _linear(graph, y)
    view = _view(graph, y, found[2]) if found is not None and y not in graph.outputs else None
    if view is None:
        return False
    matmul, add, cols = found
    reshape, dims = view
    lead = next((i for i in range(len(dims)) if all(d > 0 for d in dims[i:]) and np.prod(dims[i:]) == cols), None)
    source = reshape.outputs[0] if reshape is not None else y
    selections = graph.consumers().get(source, [])
    if lead is None or not selections or source in graph.outputs:
        return False
    numbers = np.arange(cols).reshape([1] * lead + dims[lead:])
    pieces = [_pieces(graph, node, numbers, lead) for node in selections]
    if any(p is None for p in pieces):
        return False
    new: list[Node] = []
    for out, first, size, tail in (piece for group in pieces for piece in group):
        new.extend(_piece(graph, matmul, add, out, slice(first, first + size), dims[:lead] + tail, reshape))
    position = graph.nodes.index(matmul)  # x is written before it, the selections' readers after it
    graph.nodes[position:position] = new
    for node in [matmul, add, reshape, *selections]:
        if node is not None:
            graph.nodes.remove(node)
    return True


def _piece(graph: Graph, matmul: Node, add: Node | None, out: str, cols: slice, dims: list[int],
           reshape: Node | None) -> list[Node]:
    """x @ W[:, cols] [+ b[cols]] written to `out` (through a Reshape to `dims` when the selections read one)."""
    weight = graph.constants[matmul.inputs[1]]
    part = weight[cols] if matmul.param.transposeB else weight[:, cols]
    product = graph.unique_name(f"{out}_proj")
    nodes = [Node(product, OT.MatMul, [matmul.inputs[0], graph.add_const(np.ascontiguousarray(part), "qkv_weight")],
                  [product], matmul.param_type, copy.deepcopy(matmul.param), matmul.default_format)]
    if add is not None:
        slot = next(i for i, name in enumerate(add.inputs) if name in graph.constants)
        bias = graph.constants[add.inputs[slot]]
        inputs = [product, product]
        inputs[slot] = graph.add_const(np.ascontiguousarray(bias[..., cols]) if bias.ndim else bias, "qkv_bias")
        biased = graph.unique_name(f"{out}_biased")
        nodes.append(Node(biased, OT.BinaryOp, inputs, [biased], add.param_type, copy.deepcopy(add.param),
                          add.default_format))
        product = biased
    if matmul.inputs[0] in graph.ranks:
        graph.ranks[product] = graph.ranks[matmul.inputs[0]]
    if reshape is None:
        nodes[-1].outputs = [out]
        return nodes
    shape = graph.add_const(np.asarray(dims, np.int32), "qkv_shape")
    graph.ranks[out] = len(dims)
    return [*nodes, Node(out, OT.Reshape, [product, shape], [out], reshape.param_type,
                         copy.deepcopy(reshape.param), reshape.default_format)]


def apply(graph: Graph) -> int:
    """Returns the number of projections split."""
    count = 0
    for node in list(graph.nodes):
        if node in graph.nodes and node.op_type in (OT.MatMul, OT.BinaryOp) and _split(graph, node.outputs[0]):
            count += 1
    return count
