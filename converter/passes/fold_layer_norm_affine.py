"""LayerNorm affine folding: a LayerNorm read only by MatMuls with constant weights drops its gamma and beta.

    MatMul(LayerNorm(x) * g + b0, W) + bias  ==  MatMul(LayerNorm(x), diag(g) W) + (b0 W + bias)

so the weight rows are scaled by gamma and beta's image under W joins the MatMul's bias (the constant of the Add that
follows it, which matmul-to-conv folds into the convolution, or a new Add when there is none). Pre-norm transformers
(ViT: every LayerNorm feeds the QKV projections or the first MLP Linear) lose two passes over the activations per
LayerNorm. Left alone: a LayerNorm whose output is also read by anything else (BERT's post-norm output feeds the
residual Add), is a graph output, or normalises over more than the last axis. Official MNN runs LayerNorm without
gamma / beta (plain normalisation). Also applies to the RMSNorm form (useRMSNorm), whose gamma scales the same way.
"""

from __future__ import annotations

import copy

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "fold-layer-norm-affine"

OT = fb.OpType


def _weight(graph: Graph, node: Node, out: str, channels: int) -> np.ndarray | None:
    """The [K, N] float weight of a MatMul reading `out` as A, with a constant 2-D B of K = channels rows."""
    if node.op_type != OT.MatMul or len(node.inputs) != 2 or node.inputs[0] != out or node.inputs[1] == out or \
            node.param is None or node.param.transposeA:
        return None
    weight = graph.constants.get(node.inputs[1])
    if weight is None or weight.ndim != 2 or weight.dtype.kind != "f":
        return None
    weight = weight.T if node.param.transposeB else weight
    return weight if weight.shape[0] == channels else None


def _bias_add(graph: Graph, matmul: Node, n: int) -> tuple[Node, int] | None:
    """The Add of a constant [.., N] bias that alone reads the MatMul's output, and the bias's input slot."""
    out = matmul.outputs[0]
    readers = graph.consumers().get(out, [])
    if len(readers) != 1 or out in graph.outputs:
        return None
    add = readers[0]
    if add.op_type != OT.BinaryOp or add.param.opType != fb.BinaryOpOperation.ADD or add.param.activationType or \
            len(add.inputs) != 2:
        return None
    slot = 1 if add.inputs[0] == out else 0
    bias = graph.constants.get(add.inputs[slot])
    if bias is None or bias.dtype.kind != "f" or bias.size != n or (bias.ndim > 0 and bias.shape[-1] != n):
        return None
    return add, slot


def _fold_into(graph: Graph, matmul: Node, weight: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None) -> None:
    scaled = (weight * gamma[:, None]).astype(np.float32)
    matmul.inputs[1] = graph.add_const(scaled.T.copy() if matmul.param.transposeB else scaled, "ln_folded_weight")
    if beta is None or not np.any(beta):
        return
    shift = (beta.astype(np.float64) @ weight.astype(np.float64)).astype(np.float32)
    found = _bias_add(graph, matmul, weight.shape[1])
    if found is not None:
        add, slot = found
        bias = graph.constants[add.inputs[slot]]
        add.inputs[slot] = graph.add_const((bias + shift.reshape(bias.shape)).astype(np.float32), "ln_folded_bias")
        return
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.ADD
    product = graph.unique_name(f"{matmul.outputs[0]}_unbiased")
    out = matmul.outputs[0]
    matmul.outputs = [product]
    if out in graph.ranks:
        graph.ranks[product] = graph.ranks[out]
    graph.nodes.insert(graph.nodes.index(matmul) + 1, Node(graph.unique_name(f"{matmul.name}_ln_bias"), OT.BinaryOp,
                                                          [product, graph.add_const(shift, "ln_folded_bias")], [out],
                                                          fb.OpParameter.BinaryOp, param))


def _fold(graph: Graph, norm: Node) -> bool:
    param = norm.param
    if norm.op_type != OT.LayerNorm or param is None or param.gamma is None or not len(param.gamma) or \
            list(param.axis if param.axis is not None else []) != [-1] or (param.group or 1) > 1 or \
            len(norm.outputs) != 1 or norm.outputs[0] in graph.outputs:
        return False
    gamma = np.asarray(param.gamma, np.float32).ravel()
    beta = None if param.beta is None or not len(param.beta) else np.asarray(param.beta, np.float32).ravel()
    readers = graph.consumers().get(norm.outputs[0], [])
    weights = [_weight(graph, node, norm.outputs[0], gamma.size) for node in readers]
    if not readers or any(w is None for w in weights) or (beta is not None and beta.size != gamma.size):
        return False
    for node, weight in zip(readers, weights, strict=True):
        _fold_into(graph, node, weight, gamma, beta)
    norm.param = copy.copy(param)
    norm.param.gamma = norm.param.beta = None
    return True


def apply(graph: Graph) -> int:
    """Returns the number of LayerNorms whose gamma / beta were folded into the MatMuls reading them."""
    return sum(_fold(graph, node) for node in list(graph.nodes))
