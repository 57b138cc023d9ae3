"""Recognise scaled dot-product attention and replace it by one MNN Attention op (MNNConvert's FuseAttention).

Matched (B batch, H heads, S tokens, D head size; q4/k4/v4 are [B, S, H, D]):

    Permute(q4, 0213) [* s] -> MatMul(., Permute(k4, 0231)) [* s | / s] [+ mask] -> Softmax(-1)
        -> MatMul(., Permute(v4, 0213)) -> Permute(0213) -> Reshape(shape)

The K operand may also be Permute(k4, 0213) with MatMul.transposeB. The result is
`Reshape(Attention(q4, k4, v4, mask), shape)`, where Attention writes [B, S, H*D] (MNN's layout).

Official MNN (3.6.1) semantics, measured: the default scale is 1/sqrt(D) (`attnScale` is ignored, so another scale
is folded into q); with no mask input the op is *causal*; a float mask must have exactly [1, 1, Sq, Skv] elements;
batch > 1, per-head masks and Sq != Skv give wrong results there. So `apply` (the PIPELINE pass) only fuses what
official MNN runs correctly: batch 1 and Sq == Skv known statically, the mask a constant shared by all heads (a zero
mask is written when the source has none). `apply_extended` fuses every match (any batch, broadcastable masks such
as Swin's per-head relative position bias, non-constant masks); its files run in mnnpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node
from .rewrite import rewrite_each

NAME = "fuse-attention"
EXTENDED_NAME = "fuse-attention-extended"  # the opt-in form (PIPELINE entry of apply_extended)

OT = fb.OpType
BIN = fb.BinaryOpOperation
HEADS_FIRST = [0, 2, 1, 3]  # [B, S, H, D] <-> [B, H, S, D]
KEY_T = [0, 2, 3, 1]  # [B, S, H, D] -> [B, H, D, S]


@dataclass
class Match:
    """One attention subgraph: its inputs, scale, mask, the nodes it replaces and the final Reshape."""

    q4: str
    k4: str
    v4: str
    scale: float
    mask: str | None
    reshape: Node
    nodes: list[Node]
    chain: list[tuple[str, np.ndarray]]


def _reader(graph: Graph, name: str) -> Node | None:
    readers = graph.consumers().get(name, [])
    return readers[0] if len(readers) == 1 and name not in graph.outputs else None


def _binary(node: Node | None, *ops: int) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.BinaryOp and node.param is not None and \
        node.param.opType in ops and not node.param.activationType


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.constants.get(name)
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.ravel()[0])


def _permute(node: Node | None, perm: list[int]) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.Permute and len(node.inputs) == 1 and \
        [int(p) for p in node.param.dims] == perm


def _matmul(node: Node | None) -> TypeGuard[Node]:
    return node is not None and node.op_type == OT.MatMul and len(node.inputs) == 2 and \
        not node.param.transposeA


def _single(graph: Graph, node: Node) -> bool:
    """The node's only output has exactly one reader (it is an inner node of the pattern)."""
    return _reader(graph, node.outputs[0]) is not None


def _scaled(graph: Graph, producers: dict[str, Node], name: str) -> tuple[str, float, Node | None]:
    """`name` = x * s or x / s with a scalar constant s: returns (x, factor, node); else (name, 1, None)."""
    node = producers.get(name)
    if _binary(node, BIN.MUL):
        for i in (0, 1):
            s = _scalar(graph, node.inputs[i])
            if s is not None and s != 0.0:
                return node.inputs[1 - i], s, node
    if _binary(node, BIN.REALDIV, BIN.DIV):
        s = _scalar(graph, node.inputs[1])
        if s is not None and s != 0.0:
            return node.inputs[0], 1.0 / s, node
    return name, 1.0, None


def match(graph: Graph, softmax: Node) -> Match | None:
    """The attention subgraph around `softmax`, or None."""
    producers = graph.producers()
    axis = softmax.param.axis if softmax.param is not None else -1
    if axis not in (-1, 3) or not _single(graph, softmax):
        return None
    pv = _reader(graph, softmax.outputs[0])
    if not _matmul(pv) or pv.inputs[0] != softmax.outputs[0] or not _single(graph, pv):
        return None
    vh = producers.get(pv.inputs[1])
    if not _permute(vh, KEY_T if pv.param.transposeB else HEADS_FIRST) or not _single(graph, vh):
        return None
    back = _reader(graph, pv.outputs[0])
    if not _permute(back, HEADS_FIRST) or not _single(graph, back):
        return None
    reshape = _reader(graph, back.outputs[0])
    if reshape is None or reshape.op_type != OT.Reshape:
        return None
    nodes = [softmax, pv, vh, back]
    scores, mask, chain = _mask_chain(graph, producers, softmax.inputs[0], nodes)
    scores, scale, node = _scaled(graph, producers, scores)
    if node is not None:
        if not _single(graph, node):
            return None
        nodes.append(node)
    qk = producers.get(scores)
    if not _matmul(qk) or not _single(graph, qk):
        return None
    nodes.append(qk)
    q_name, q_scale, q_node = _scaled(graph, producers, qk.inputs[0])
    if q_node is not None:
        if not _single(graph, q_node):
            return None
        nodes.append(q_node)
    qh, kh = producers.get(q_name), producers.get(qk.inputs[1])
    if not _permute(qh, HEADS_FIRST) or not _permute(kh, HEADS_FIRST if qk.param.transposeB else KEY_T):
        return None
    if not _single(graph, qh) or not _single(graph, kh):
        return None
    nodes += [qh, kh]
    return Match(qh.inputs[0], kh.inputs[0], vh.inputs[0], scale * q_scale, mask, reshape, nodes, chain)


def _mask_chain(graph: Graph, producers: dict[str, Node], name: str,
                nodes: list[Node]) -> tuple[str, str | None, list[tuple[str, np.ndarray]]]:
    """Walk up from the Softmax input through `+ mask` and constant Reshapes (Swin's per-window mask is added in a
    [B, nW, H, N, N] view). Returns (scores, a non-constant mask or None, the constant steps in execution order)."""
    steps: list[tuple[str, np.ndarray]] = []
    while True:
        node = producers.get(name)
        if node is None or not _single(graph, node):
            break
        if node.op_type == OT.Reshape and len(node.inputs) == 2 and node.inputs[1] in graph.constants:
            steps.append(("reshape", graph.constants[node.inputs[1]]))
        elif _binary(node, BIN.ADD):
            const = [i for i in (0, 1) if node.inputs[i] in graph.constants]
            if const:
                steps.append(("add", graph.constants[node.inputs[const[0]]].astype(np.float32)))
                name = node.inputs[1 - const[0]]
                nodes.append(node)
                continue
            if steps:
                break
            for i in (0, 1):
                inner = producers.get(node.inputs[i])
                if _binary(inner, BIN.MUL, BIN.REALDIV, BIN.DIV) or _matmul(inner):
                    nodes.append(node)
                    return node.inputs[i], node.inputs[1 - i], []
            break
        else:
            break
        nodes.append(node)
        name = node.inputs[0]
    return name, None, steps[::-1]


def fold_mask(chain: list[tuple[str, np.ndarray]], shape: list[int] | None) -> np.ndarray | None:
    """The constant additive mask the chain applies to scores of `shape` ([B, H, Sq, Skv]), or None if unknown.

    Without Reshapes the constants are summed (broadcast); with them the chain is evaluated on zeros of `shape` and
    must come back to that shape. Batch or head axes along which the mask does not vary are reduced to 1."""
    if not chain:
        return None
    if all(kind == "add" for kind, _ in chain):
        mask = np.zeros((), np.float32)
        for _, value in chain:
            mask = mask + value
        return mask if mask.ndim <= 4 else None
    if shape is None:
        return None
    mask = np.zeros(shape, np.float32)
    for kind, value in chain:
        if kind == "add":
            total = mask + value
            if total.shape != mask.shape:
                return None
            mask = total
        else:
            dims = [mask.shape[i] if int(d) == 0 else int(d) for i, d in enumerate(value.ravel())]
            try:
                mask = mask.reshape(dims)
            except ValueError:
                return None
    if list(mask.shape) != list(shape):
        return None
    for axis in (0, 1):
        if mask.shape[axis] > 1 and np.all(mask == mask.take([0], axis=axis)):
            mask = mask.take([0], axis=axis)
    return mask


def static_shape(graph: Graph, name: str) -> list[int] | None:
    """The [B, S, H, D] shape of `name` when it is written by a Reshape with a constant, fully known shape."""
    node = graph.producers().get(name)
    if node is not None and node.op_type == OT.GatherV2 and len(node.inputs) == 3:  # q/k/v split from fused QKV
        index, axis = graph.constants.get(node.inputs[1]), graph.constants.get(node.inputs[2])
        full = _reshape_dims(graph, graph.producers().get(node.inputs[0]))
        if index is None or index.ndim != 0 or axis is None or axis.size != 1 or full is None:
            return None
        dims: np.ndarray | None = np.delete(full, int(axis.ravel()[0]))
    else:
        dims = _reshape_dims(graph, node)
    if dims is None or dims.size != 4 or np.any(dims <= 0):
        return None
    return [int(d) for d in dims]


def _reshape_dims(graph: Graph, node: Node | None) -> np.ndarray | None:
    if node is None or node.op_type != OT.Reshape:
        return None
    dims = graph.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
    if dims is None and node.param is not None and node.param.dims is not None:
        dims = np.asarray(node.param.dims)
    return None if dims is None else np.asarray(dims).ravel()


def _scores_shape(q_shape: list[int] | None, k_shape: list[int] | None) -> list[int] | None:
    if q_shape is None or k_shape is None:
        return None
    return [q_shape[0], q_shape[2], q_shape[1], k_shape[1]]


def _compat_mask(graph: Graph, m: Match, q_shape: list[int] | None, k_shape: list[int] | None) -> str | None:
    """The [1, 1, Sq, Skv] float mask official MNN needs, or None when this match is not runnable there."""
    if q_shape is None or k_shape is None or q_shape[0] != 1 or k_shape[0] != 1 or q_shape[1] != k_shape[1]:
        return None
    if m.mask is not None:
        return None  # a mask computed at run time: its shape is not known to be [1, 1, Sq, Skv]
    full = (1, 1, q_shape[1], k_shape[1])
    value = fold_mask(m.chain, _scores_shape(q_shape, k_shape))
    if value is None and m.chain:
        return None
    value = np.zeros((), np.float32) if value is None else value
    value = value.reshape((1,) * (4 - value.ndim) + value.shape)
    if value.shape[0] != 1 or value.shape[1] != 1:
        return None  # per batch or per head: official MNN shares one mask
    try:
        return graph.add_const(np.ascontiguousarray(np.broadcast_to(value, full), np.float32), "attention_mask")
    except ValueError:
        return None


def _extended_mask(graph: Graph, m: Match, q_shape: list[int] | None, k_shape: list[int] | None) -> str | None:
    if m.mask is not None:
        return m.mask
    value = fold_mask(m.chain, _scores_shape(q_shape, k_shape))
    if value is None and m.chain:
        return None
    value = np.zeros((1, 1, 1, 1), np.float32) if value is None else value
    return graph.add_const(value.reshape((1,) * (4 - value.ndim) + value.shape), "attention_mask")


def _rewrite(graph: Graph, m: Match, mask: str, head_dim: int) -> None:
    q4 = m.q4
    factor = m.scale * float(np.sqrt(head_dim))
    if abs(factor - 1.0) > 1e-6:  # MNN always scales by 1/sqrt(D): fold any other scale into q
        param = fb.BinaryOpT()
        param.opType = BIN.MUL
        q4 = graph.add(OT.BinaryOp, [m.q4, graph.add_const(np.float32(factor), "attention_scale")], None,
                       fb.OpParameter.BinaryOp, param, name=graph.unique_name("attention_q_scaled")).outputs[0]
    param = fb.AttentionParamT()
    param.kv_cache = False
    out = graph.unique_name("attention")
    for node in m.nodes:
        graph.nodes.remove(node)
    index = graph.nodes.index(m.reshape)
    graph.nodes.insert(index, Node(out, OT.Attention, [q4, m.k4, m.v4, mask], [out], fb.OpParameter.AttentionParam,
                                   param))
    m.reshape.inputs[0] = out
    graph.ranks[out] = 3


def _head_dim(graph: Graph, m: Match) -> int | None:
    shape = static_shape(graph, m.q4) or static_shape(graph, m.k4)
    return None if shape is None else shape[3]


def _fuse(graph: Graph, node: Node, extended: bool) -> bool:
    m = match(graph, node)
    if m is None:
        return False
    head_dim = _head_dim(graph, m)
    if head_dim is None:
        return False
    shapes = static_shape(graph, m.q4), static_shape(graph, m.k4)
    mask = (_extended_mask if extended else _compat_mask)(graph, m, *shapes)
    if mask is None:
        return False
    _rewrite(graph, m, mask, head_dim)
    return True


def _run(graph: Graph, extended: bool) -> int:
    count = rewrite_each(graph, lambda node: node.op_type == OT.Softmax,
                         lambda graph, node: _fuse(graph, node, extended))
    if count:
        order = graph.topological_order()  # the scale Mul is appended at the end; keep the node list sorted
        graph.nodes[:] = order
    return count


def apply(graph: Graph) -> int:
    """Fuse the attention subgraphs official MNN runs correctly; returns the number fused."""
    return _run(graph, extended=False)


def apply_extended(graph: Graph) -> int:
    """Fuse every attention subgraph (mnnpy-only files when batch > 1 or masks are per head); returns the count."""
    return _run(graph, extended=True)
