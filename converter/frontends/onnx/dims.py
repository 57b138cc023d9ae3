"""Static sizes of single dims, read from ONNX shape inference or, when that lost the shape (values out of an If
whose branches differ in rank, inputs declared without a shape), derived from the ops that made the tensor."""

from __future__ import annotations

from typing import Any

from .context import OP, Context


def _producer(ctx: Context | None, name: str) -> Any:
    while ctx is not None:  # a control-flow body reads the tensors of its enclosing graphs under their own names
        node = next((n for n in reversed(ctx.graph.nodes) if name in n.outputs), None)
        if node is not None:
            return node
        ctx = ctx.outer
    return None


def static_dim(ctx: Context, name: str, axis: int, rank: int, depth: int = 0) -> int | None:
    """Size of dim `axis` of tensor `name` (known to have `rank` dims), or None when it is not static.

    Beyond shape inference this follows the converted ops back: an Unsqueeze that inserts `axis` gives 1 whatever its
    input's shape (how torch feeds one step to an LSTM); Identity passes the question on; a Select (an inlined If)
    answers when both branches agree.
    """
    shape = ctx.shape(name)
    if shape is not None and len(shape) == rank and shape[axis] is not None and shape[axis] >= 0:
        return int(shape[axis])
    node = _producer(ctx, name) if depth < 16 else None
    if node is None:
        return None
    if node.op_type == OP.Unsqueeze and node.param is not None and node.param.squeezeDims and len(node.inputs) == 1:
        dims = [d + rank if d < 0 else d for d in node.param.squeezeDims]
        if axis in dims:
            return 1
        inner_axis = axis - sum(1 for d in dims if d < axis)
        return static_dim(ctx, node.inputs[0], inner_axis, rank - len(dims), depth + 1)
    if node.op_type == OP.Identity:
        return static_dim(ctx, node.inputs[0], axis, rank, depth + 1)
    if node.op_type == OP.Select:
        a = static_dim(ctx, node.inputs[1], axis, rank, depth + 1)
        return a if a is not None and a == static_dim(ctx, node.inputs[2], axis, rank, depth + 1) else None
    return None
