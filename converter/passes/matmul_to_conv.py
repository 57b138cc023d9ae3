"""MatMul with a constant 2-D B -> Reshape [-1, K, 1, 1], 1x1 Convolution, Reshape back (ConvertMatMulToConv2D).

A following Add of a constant [N] bias is folded into the convolution's bias. The rank of A must be known (the
frontend records it for graph inputs and constants; other tensors are left as MatMul).
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "matmul-to-conv"


def _reshape(graph: Graph, x: str, shape: str, out: str) -> Node:
    param = fb.ReshapeT()
    param.dimType = fb.MNN_DATA_FORMAT.NCHW
    return graph.add(fb.OpType.Reshape, [x, shape], [out], fb.OpParameter.Reshape, param)


def _bias_add(graph: Graph, out: str, n: int) -> tuple[Node, np.ndarray] | None:
    readers = graph.consumers().get(out, [])
    if len(readers) != 1 or out in graph.outputs:
        return None
    add = readers[0]
    if add.op_type != fb.OpType.BinaryOp or add.param.opType != fb.BinaryOpOperation.ADD or add.param.activationType:
        return None
    other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
    bias = graph.constants.get(other)
    if bias is None or bias.dtype.kind != "f" or bias.size != n or (bias.ndim > 1 and bias.shape[-1] != n):
        return None
    return add, bias.astype(np.float32).ravel()


def _convert(graph: Graph, node: Node, rank: int) -> bool:
    weight = graph.constants[node.inputs[1]].astype(np.float32)
    if node.param.transposeA or weight.ndim != 2:
        return False
    weight = weight if node.param.transposeB else weight.T  # -> [N, K]
    n, k = weight.shape
    fused = _bias_add(graph, node.outputs[0], n)
    bias = np.zeros(n, np.float32) if fused is None else fused[1]
    final = node.outputs[0] if fused is None else fused[0].outputs[0]
    a = node.inputs[0]
    base = node.name
    flat = graph.unique_name(f"{base}__matmul_input")
    _reshape(graph, a, graph.add_const(np.asarray([-1, k, 1, 1], np.int32), f"{base}__shape"), flat)
    param = fb.Convolution2DT()
    param.common = fb.Convolution2DCommonT()
    param.common.outputCount, param.common.inputCount = n, k
    param.weight = weight.ravel()
    param.bias = bias
    conv_out = graph.unique_name(f"{base}__matmul_converted")
    graph.add(fb.OpType.Convolution, [flat], [conv_out], fb.OpParameter.Convolution2D, param, name=conv_out)
    if rank == 2:
        shape = graph.add_const(np.asarray([-1, n], np.int32), f"{base}__out_shape")
    else:
        full = graph.unique_name(f"{base}__shape_of_input")
        graph.add(fb.OpType.Shape, [a], [full], default_format=fb.MNN_DATA_FORMAT.NCHW)
        slice_param = fb.StridedSliceParamT()
        slice_param.fromType = 1
        lead = graph.unique_name(f"{base}__leading_dims")
        graph.add(fb.OpType.StridedSlice, [full, graph.add_const(np.int32([0])), graph.add_const(np.int32([rank - 1]))],
                  [lead], fb.OpParameter.StridedSliceParam, slice_param)
        concat = fb.AxisT()
        shape = graph.unique_name(f"{base}__out_shape")
        graph.add(fb.OpType.Concat, [lead, graph.add_const(np.int32([n]))], [shape], fb.OpParameter.Axis, concat)
    graph.nodes.remove(node)
    if fused is not None:
        graph.nodes.remove(fused[0])
    _reshape(graph, conv_out, shape, final).name = final
    return True


def apply(graph: Graph, ranks: dict[str, int] | None = None) -> int:
    """Rewrite every eligible MatMul; `ranks` defaults to the ranks the frontend recorded in `graph.ranks`."""
    known = ranks if ranks is not None else getattr(graph, "ranks", {})
    count = 0
    for node in list(graph.nodes):
        if node.op_type != fb.OpType.MatMul or len(node.inputs) != 2 or node.inputs[1] not in graph.constants:
            continue
        rank = known.get(node.inputs[0])
        if rank is None or rank < 2:
            continue
        if _convert(graph, node, rank):
            count += 1
    return count
