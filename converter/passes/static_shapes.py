"""Static shapes of a converter graph's tensors, as far as they follow from the inputs, constants and a few op kinds.

Forward over the ops in topological order: graph inputs with fully known dims, constants, Reshape to a constant
or computed shape (0 copies the input's dim, one -1 takes the rest), Permute / Transpose, Concat, GatherV2 with
constant index, BinaryOp (broadcast), BroadcastTo, MatMul, 2-D Convolution (mnnpy.core.shape.conv's output size),
MNN's Attention ([B, Sq, H, D] query -> [B, Sq, H*Dv]) and the ops that keep their input's shape (unary ops,
Softmax, LayerNorm, Cast). Small integer values are carried too: the Shape of a tensor of known shape, and ops on
known values evaluated by numpy_eval (torch's `flatten(2)` is Shape -> Slice -> Concat -> Reshape; its `expand` a
Select of constants). Every other op's outputs are unknown (absent from the result).
Used by passes that must prove two tensors have the same rows (prune_rows.py).
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.shape.conv import conv_out_size

from ..graph import Graph, Node
from .numpy_eval import evaluate

OT = fb.OpType
SAME_SHAPE = frozenset({OT.UnaryOp, OT.ReLU, OT.ReLU6, OT.Sigmoid, OT.TanH, OT.ELU, OT.Selu, OT.Softmax,
                        OT.LayerNorm, OT.Cast})

Shape = list[int]
SMALL = 1024  # values carried for shape arithmetic only (elements per input)


def _reshape(node: Node, values: dict[str, np.ndarray], known: dict[str, Shape]) -> Shape | None:
    const = values.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if const is None and node.param is not None and getattr(node.param, "dims", None) is not None:
        const = np.asarray(node.param.dims)
    if const is None:
        return None
    dims = [int(d) for d in np.asarray(const).ravel()]
    source = known.get(node.inputs[0])
    if 0 in dims:
        if source is None:
            return None
        dims = [source[i] if d == 0 and i < len(source) else d for i, d in enumerate(dims)]
    if dims.count(-1) == 1 and source is not None:
        rest = int(np.prod([d for d in dims if d != -1]))
        total = int(np.prod(source))
        if rest <= 0 or total % rest:
            return None
        dims[dims.index(-1)] = total // rest
    return dims if all(d > 0 for d in dims) else None


def _matmul(node: Node, a: Shape, b: Shape) -> Shape | None:
    if len(a) < 2 or len(b) < 2:
        return None
    ta = node.param is not None and node.param.transposeA
    tb = node.param is not None and node.param.transposeB
    m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k != kb:
        return None
    try:
        lead = list(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
    except ValueError:
        return None
    return [*lead, m, n]


def _conv(node: Node, x: Shape) -> Shape | None:
    common = getattr(node.param, "common", None)
    if common is None or len(x) != 4 or common.outputCount <= 0:
        return None
    pads = [int(p) for p in common.pads] if common.pads is not None and len(common.pads) == 4 else \
        [common.padY, common.padX, common.padY, common.padX]
    oh = conv_out_size(x[2], common.kernelY, common.strideY, common.dilateY, pads[0], pads[2], common.padMode)
    ow = conv_out_size(x[3], common.kernelX, common.strideX, common.dilateX, pads[1], pads[3], common.padMode)
    return [x[0], common.outputCount, oh, ow] if oh > 0 and ow > 0 else None


def _value(node: Node, values: dict[str, np.ndarray], known: dict[str, Shape]) -> np.ndarray | None:
    """The value of a small integer output: Shape of a known shape, or numpy_eval on known inputs."""
    if node.op_type == OT.Shape and node.inputs and node.inputs[0] in known:
        return np.asarray(known[node.inputs[0]], np.int32)
    inputs = [values.get(name) for name in node.inputs]
    if not inputs or any(v is None or v.size > SMALL for v in inputs):
        return None
    if node.op_type == OT.Select and len(inputs) == 3:
        out = np.where(inputs[0].astype(bool), inputs[1], inputs[2])
    else:
        try:
            result = evaluate(node, inputs)
        except (ValueError, IndexError, TypeError, AttributeError):
            return None
        out = result[0] if result else None
    return out if out is not None and out.dtype.kind in "iub" and out.size <= SMALL else None


def _infer(node: Node, graph: Graph, values: dict[str, np.ndarray], known: dict[str, Shape]) -> Shape | None:
    shapes = [known.get(name) for name in node.inputs]
    first = shapes[0] if shapes else None
    op = node.op_type
    if op == OT.Reshape:
        return _reshape(node, values, known)
    if first is None:
        return None
    if op in SAME_SHAPE:
        return list(first)
    if op in (OT.Permute, OT.Transpose):
        perm = node.param.dims if op == OT.Permute and node.param is not None else \
            graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
        perm = None if perm is None else [int(p) for p in np.asarray(perm).ravel()]
        return [first[p] for p in perm] if perm is not None and sorted(perm) == list(range(len(first))) else None
    if op == OT.GatherV2 and len(node.inputs) == 3 and node.inputs[2] in graph.constants and shapes[1] is not None:
        axis = int(np.asarray(graph.constants[node.inputs[2]]).ravel()[0]) % len(first)
        return [*first[:axis], *shapes[1], *first[axis + 1:]]
    if any(s is None for s in shapes):
        return None
    if op == OT.BinaryOp and len(shapes) == 2:
        try:
            return list(np.broadcast_shapes(tuple(shapes[0]), tuple(shapes[1])))
        except ValueError:
            return None
    if op == OT.Concat and node.param is not None and all(len(s) == len(first) for s in shapes):
        axis = node.param.axis % len(first)
        out = list(first)
        out[axis] = sum(s[axis] for s in shapes)
        return out
    if op in (OT.Convolution, OT.ConvolutionDepthwise) and len(shapes) == 1:
        return _conv(node, first)
    if op == OT.BroadcastTo and len(node.inputs) == 2 and node.inputs[1] in values:
        target = tuple(int(d) for d in values[node.inputs[1]].ravel())
        try:
            out = list(np.broadcast_shapes(tuple(first), target))
        except ValueError:
            return None
        return out if all(d > 0 for d in out) else None
    if op == OT.MatMul and len(shapes) == 2:
        return _matmul(node, shapes[0], shapes[1])
    if op == OT.Attention and len(shapes) >= 3 and all(len(s) == 4 for s in shapes[:3]):
        return [first[0], first[1], first[2] * shapes[2][3]]
    return None


def infer(graph: Graph) -> dict[str, Shape]:
    """Tensor name -> static shape, for every tensor whose shape is known here (see the module doc)."""
    known: dict[str, Shape] = {name: list(spec.shape) for name, spec in graph.inputs.items()
                               if spec.shape is not None and all(d > 0 for d in spec.shape)}
    known.update({name: list(value.shape) for name, value in graph.constants.items()})
    values: dict[str, np.ndarray] = dict(graph.constants)
    for node in graph.topological_order():
        if len(node.outputs) != 1:
            continue
        value = _value(node, values, known)
        if value is not None:
            values[node.outputs[0]] = value
            known[node.outputs[0]] = list(value.shape)
            continue
        shape = _infer(node, graph, values, known)
        if shape is not None:
            known[node.outputs[0]] = shape
    return known
