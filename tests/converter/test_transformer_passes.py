"""Before/after graph tests for the transformer passes: attention, tanh GELU, GroupNorm, split-before-transpose."""

from __future__ import annotations

import numpy as np
from mnnpy.converter.graph import Graph, InputSpec, Node
from mnnpy.converter.passes import (
    OPT_IN,
    PIPELINE,
    fuse_attention,
    fuse_gelu_tanh,
    fuse_group_norm,
    fuse_rms_norm,
    hoist_transpose_above_split,
    remove_dead,
    run_pipeline,
    split_before_transpose,
    transpose,
)
from mnnpy.schema import mnn_generated as fb

OP = fb.OpType
BIN = fb.BinaryOpOperation


def _binary(graph: Graph, op: int, a: str, b: str, out: str | None = None) -> str:
    param = fb.BinaryOpT()
    param.opType = op
    return graph.add(OP.BinaryOp, [a, b], None if out is None else [out], fb.OpParameter.BinaryOp, param).outputs[0]


def _unary(graph: Graph, op: int, x: str, out: str | None = None) -> str:
    param = fb.UnaryOpT()
    param.opType = op
    return graph.add(OP.UnaryOp, [x], None if out is None else [out], fb.OpParameter.UnaryOp, param).outputs[0]


def _permute(graph: Graph, x: str, dims: list[int]) -> str:
    param = fb.PermuteT()
    param.dims = dims
    return graph.add(OP.Permute, [x], None, fb.OpParameter.Permute, param).outputs[0]


def _reshape(graph: Graph, x: str, dims: list[int]) -> str:
    return graph.add(OP.Reshape, [x, graph.add_const(np.array(dims, np.int32), "shape")], None,
                     fb.OpParameter.Reshape, fb.ReshapeT()).outputs[0]


def _matmul(graph: Graph, a: str, b: str, transpose_b: bool = False) -> str:
    param = fb.MatMulT()
    param.transposeB = transpose_b
    return graph.add(OP.MatMul, [a, b], None, fb.OpParameter.MatMul, param).outputs[0]


def _attention_graph(batch: int = 1, seq: int = 6, heads: int = 2, hd: int = 4, scale: float | None = None,
                     mask: np.ndarray | None = None) -> Graph:
    """BERT's form: x -> Reshape [B, S, H, D] -> Permutes -> MatMul * scale [+ mask] -> Softmax -> MatMul -> back."""
    graph = Graph()
    for name in "qkv":
        graph.inputs[name] = InputSpec([batch, seq, heads * hd])
    q, k, v = (_reshape(graph, name, [batch, seq, heads, hd]) for name in "qkv")
    scores = _matmul(graph, _permute(graph, q, [0, 2, 1, 3]), _permute(graph, k, [0, 2, 3, 1]))
    factor = hd ** -0.5 if scale is None else scale
    scores = _binary(graph, BIN.MUL, scores, graph.add_const(np.float32(factor), "scale"))
    if mask is not None:
        scores = _binary(graph, BIN.ADD, scores, graph.add_const(mask, "mask"))
    axis = fb.AxisT()
    axis.axis = -1
    probs = graph.add(OP.Softmax, [scores], None, fb.OpParameter.Axis, axis).outputs[0]
    ctx = _permute(graph, _matmul(graph, probs, _permute(graph, v, [0, 2, 1, 3])), [0, 2, 1, 3])
    graph.add(OP.Reshape, [ctx, graph.add_const(np.array([batch, seq, heads * hd], np.int32))], ["y"],
              fb.OpParameter.Reshape, fb.ReshapeT())
    graph.outputs = ["y"]
    return graph


def _ops(graph: Graph) -> list[int]:
    return [n.op_type for n in graph.nodes]


def test_fuse_attention_replaces_the_subgraph_with_mnn_attention() -> None:
    graph = _attention_graph()
    assert _ops(graph).count(OP.Permute) == 4
    assert fuse_attention.apply(graph) == 1
    remove_dead.apply(graph)
    att = next(n for n in graph.nodes if n.op_type == OP.Attention)
    assert OP.Permute not in _ops(graph) and OP.Softmax not in _ops(graph)
    assert att.param_type == fb.OpParameter.AttentionParam and att.param.kv_cache is False
    q4, k4, v4, mask = att.inputs
    assert all(graph.producers()[name].op_type == OP.Reshape for name in (q4, k4, v4))
    assert graph.constants[mask].shape == (1, 1, 6, 6) and not graph.constants[mask].any()  # non-causal for MNN
    assert graph.nodes[-1].op_type == OP.Reshape and graph.nodes[-1].inputs[0] == att.outputs[0]


def test_fuse_attention_folds_another_scale_into_the_query() -> None:
    graph = _attention_graph(scale=0.125)
    assert fuse_attention.apply(graph) == 1
    att = next(n for n in graph.nodes if n.op_type == OP.Attention)
    mul = graph.producers()[att.inputs[0]]
    assert mul.op_type == OP.BinaryOp and mul.param.opType == BIN.MUL
    factor = float(graph.constants[mul.inputs[1]])
    assert abs(factor - 0.125 * 2.0) < 1e-6  # 0.125 = factor / sqrt(4)
    assert graph.nodes.index(mul) < graph.nodes.index(att)


def test_fuse_attention_keeps_a_shared_constant_mask() -> None:
    mask = np.triu(np.full((6, 6), -1e4, np.float32), 1)[None, None]
    graph = _attention_graph(mask=mask)
    assert fuse_attention.apply(graph) == 1
    att = next(n for n in graph.nodes if n.op_type == OP.Attention)
    np.testing.assert_array_equal(graph.constants[att.inputs[3]], mask)


def test_fuse_attention_compatible_mode_leaves_what_official_mnn_cannot_run() -> None:
    per_head = np.zeros((1, 2, 6, 6), np.float32)
    for graph in (_attention_graph(batch=2), _attention_graph(mask=per_head)):
        assert fuse_attention.apply(graph) == 0
        assert fuse_attention.apply_extended(graph) == 1
        assert OP.Attention in _ops(graph)


def test_fold_mask_evaluates_swin_window_chain() -> None:
    bias = np.arange(2 * 3 * 3, dtype=np.float32).reshape(1, 2, 3, 3)
    window = np.stack([np.zeros((3, 3)), np.eye(3)]).astype(np.float32)[None, :, None]  # [1, nW=2, 1, N, N]
    chain = [("add", bias), ("reshape", np.array([1, 2, 2, 3, 3])), ("add", window),
             ("reshape", np.array([-1, 2, 3, 3]))]
    mask = fuse_attention.fold_mask(chain, [2, 2, 3, 3])
    expected = np.broadcast_to(bias, (2, 2, 3, 3)) + window[0]
    np.testing.assert_array_equal(mask, expected)
    assert fuse_attention.fold_mask([("add", np.zeros((1, 1, 3, 3), np.float32))], None).shape == (1, 1, 3, 3)


def test_split_before_transpose_then_attention_absorbs_every_permute() -> None:
    """Swin's qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4); q, k, v = qkv[0], qkv[1], qkv[2]."""
    graph = Graph()
    graph.inputs["x"] = InputSpec([2, 5, 3 * 8])
    qkv = _permute(graph, _reshape(graph, "x", [2, 5, 3, 2, 4]), [2, 0, 3, 1, 4])
    q, k, v = (graph.add(OP.GatherV2, [qkv, graph.add_const(np.int32(i)), graph.add_const(np.int32(0))]).outputs[0]
               for i in range(3))
    q = _binary(graph, BIN.MUL, q, graph.add_const(np.float32(0.5)))
    scores = _matmul(graph, q, _permute(graph, k, [0, 1, 3, 2]))
    scores = _binary(graph, BIN.ADD, scores, graph.add_const(np.ones((1, 2, 5, 5), np.float32)))
    axis = fb.AxisT()
    axis.axis = -1
    probs = graph.add(OP.Softmax, [scores], None, fb.OpParameter.Axis, axis).outputs[0]
    ctx = _permute(graph, _matmul(graph, probs, v), [0, 2, 1, 3])
    graph.add(OP.Reshape, [ctx, graph.add_const(np.array([2, 5, 8], np.int32))], ["y"], fb.OpParameter.Reshape,
              fb.ReshapeT())
    graph.outputs = ["y"]
    assert split_before_transpose.apply(graph) == 3
    gathers = [n for n in graph.nodes if n.op_type == OP.GatherV2]
    assert all(graph.producers()[n.inputs[0]].op_type == OP.Reshape and int(graph.constants[n.inputs[2]]) == 2
               for n in gathers)
    assert transpose.apply(graph) >= 1
    assert fuse_attention.apply_extended(graph) == 1
    remove_dead.apply(graph)
    assert OP.Permute not in _ops(graph)
    att = next(n for n in graph.nodes if n.op_type == OP.Attention)
    assert graph.constants[att.inputs[3]].shape == (1, 2, 5, 5)  # the per-head bias, kept as a mask
    assert fuse_attention.static_shape(graph, att.inputs[1]) == [2, 5, 2, 4]


def test_fuse_gelu_tanh_torch_order() -> None:
    graph = Graph()
    graph.inputs["x"] = InputSpec([2, 8])
    cube = _binary(graph, BIN.POW, "x", graph.add_const(np.float32(3.0)))
    inner = _binary(graph, BIN.ADD, "x", _binary(graph, BIN.MUL, cube, graph.add_const(np.float32(0.044715))))
    t = _unary(graph, fb.UnaryOpOperation.TANH, _binary(graph, BIN.MUL, inner,
                                                        graph.add_const(np.float32(np.sqrt(2 / np.pi)))))
    half = _binary(graph, BIN.MUL, "x", graph.add_const(np.float32(0.5)))
    _binary(graph, BIN.MUL, half, _binary(graph, BIN.ADD, t, graph.add_const(np.float32(1.0))), "y")
    graph.outputs = ["y"]
    assert fuse_gelu_tanh.apply(graph) == 1
    remove_dead.apply(graph)
    assert len(graph.nodes) == 1
    node = graph.nodes[0]
    assert node.param.opType == fb.UnaryOpOperation.GELU and node.inputs == ["x"] and node.outputs == ["y"]


def test_fuse_gelu_tanh_other_order_and_a_near_miss() -> None:
    graph = Graph()
    graph.inputs["x"] = InputSpec([4])
    x3 = _binary(graph, BIN.MUL, _binary(graph, BIN.MUL, "x", "x"), "x")
    inner = _binary(graph, BIN.MUL, _binary(graph, BIN.ADD, _binary(graph, BIN.MUL, x3, graph.add_const(
        np.float32(0.044715))), "x"), graph.add_const(np.float32(0.7978845608)))
    one_plus = _binary(graph, BIN.ADD, graph.add_const(np.float32(1.0)), _unary(graph, fb.UnaryOpOperation.TANH, inner))
    _binary(graph, BIN.MUL, _binary(graph, BIN.MUL, one_plus, "x"), graph.add_const(np.float32(0.5)), "y")
    graph.outputs = ["y"]
    assert fuse_gelu_tanh.apply(graph) == 1
    near = Graph()
    near.inputs["x"] = InputSpec([4])
    t = _unary(near, fb.UnaryOpOperation.TANH, _binary(near, BIN.MUL, "x", near.add_const(np.float32(0.79788456))))
    _binary(near, BIN.MUL, _binary(near, BIN.ADD, t, near.add_const(np.float32(1.0))), "x", "y")  # no cube, no 0.5
    near.outputs = ["y"]
    assert fuse_gelu_tanh.apply(near) == 0


def _group_norm_graph(swish: bool) -> Graph:
    """What the ONNX frontend writes for GroupNormalization (and torch's decomposed export)."""
    graph = Graph()
    graph.inputs["x"] = InputSpec([1, 6, 4, 4])
    grouped = _reshape(graph, "x", [0, 3, -1])
    ln = fb.LayerNormT()
    ln.axis, ln.epsilon = [-1], 1e-5
    normed = graph.add(OP.LayerNorm, [grouped], None, fb.OpParameter.LayerNorm, ln).outputs[0]
    shape = graph.add(OP.Shape, ["x"]).outputs[0]
    restored = graph.add(OP.Reshape, [normed, shape], None, fb.OpParameter.Reshape, fb.ReshapeT()).outputs[0]
    gamma = graph.add_const(np.arange(1, 7, dtype=np.float32).reshape(6, 1, 1), "gamma")
    scaled = _binary(graph, BIN.MUL, restored, gamma)
    y = _binary(graph, BIN.ADD, scaled, graph.add_const(np.full((6, 1, 1), 0.5, np.float32), "beta"),
                None if swish else "y")
    if swish:
        _binary(graph, BIN.MUL, y, _unary(graph, fb.UnaryOpOperation.SIGMOID, y), "y")
    graph.outputs = ["y"]
    return graph


def test_fuse_group_norm_with_affine_and_swish() -> None:
    for swish in (False, True):
        graph = _group_norm_graph(swish)
        assert fuse_group_norm.apply(graph) == 1
        remove_dead.apply(graph)
        assert len(graph.nodes) == 1
        node: Node = graph.nodes[0]
        assert node.op_type == OP.GroupNorm and node.inputs == ["x"] and node.outputs == ["y"]
        p = node.param
        assert p.group == 3 and p.axis == 1 and abs(p.epsilon - 1e-5) < 1e-12 and p.bSwish == int(swish)
        np.testing.assert_array_equal(p.gamma, np.arange(1, 7))
        np.testing.assert_array_equal(p.beta, np.full(6, 0.5))


def _rms_graph(form: str) -> Graph:
    graph = Graph()
    graph.inputs["x"] = InputSpec([2, 3, 8])
    graph.ranks["x"] = 3
    sq = _binary(graph, BIN.POW, "x", graph.add_const(np.float32(2.0))) if form != "mul" else \
        _binary(graph, BIN.MUL, "x", "x")
    red = fb.ReductionParamT()
    red.operation, red.dim, red.keepDims = fb.ReductionType.MEAN, [2], True
    mean = graph.add(OP.Reduction, [sq], None, fb.OpParameter.ReductionParam, red).outputs[0]
    var = _binary(graph, BIN.ADD, mean, graph.add_const(np.float32(1e-6)))
    if form == "rsqrt":
        normed = _binary(graph, BIN.MUL, "x", _unary(graph, fb.UnaryOpOperation.RSQRT, var))
    elif form == "div":
        normed = _binary(graph, BIN.REALDIV, "x", _unary(graph, fb.UnaryOpOperation.SQRT, var))
    else:
        root = _unary(graph, fb.UnaryOpOperation.SQRT, var)
        normed = _binary(graph, BIN.MUL, "x", _unary(graph, fb.UnaryOpOperation.RECIPROCAL, root))
    _binary(graph, BIN.MUL, graph.add_const(np.arange(8, dtype=np.float32), "gamma"), normed, "y")
    graph.outputs = ["y"]
    return graph


def test_fuse_rms_norm_forms() -> None:
    for form in ("pow", "mul", "rsqrt", "div"):
        graph = _rms_graph(form)
        assert fuse_rms_norm.apply(graph) == 1, form
        remove_dead.apply(graph)
        assert len(graph.nodes) == 1
        node = graph.nodes[0]
        assert node.op_type == OP.LayerNorm and node.inputs == ["x"] and node.outputs == ["y"]
        p = node.param
        assert p.useRmsnorm and list(p.axis) == [-1] and abs(p.epsilon - 1e-6) < 1e-12
        np.testing.assert_array_equal(p.gamma, np.arange(8))


def test_fuse_rms_norm_leaves_a_mean_over_other_axes() -> None:
    graph = _rms_graph("pow")
    next(n for n in graph.nodes if n.op_type == OP.Reduction).param.dim = [1]
    assert fuse_rms_norm.apply(graph) == 0


def test_split_into_ones_then_squeeze_becomes_gathers_before_the_transpose() -> None:
    """qkv.unbind(0) exported as Split([1, 1, 1], axis 0) + Squeeze(0) on a transposed [3, B, H, N, D]."""
    graph = Graph()
    graph.inputs["x"] = InputSpec([2, 5, 24])
    qkv = _permute(graph, _reshape(graph, "x", [2, 5, 3, 2, 4]), [2, 0, 3, 1, 4])
    param = fb.SliceT()
    param.axis, param.slicePoints, param.sourceType = 0, [1, 1, 1], 4
    parts = graph.add(OP.Slice, [qkv], ["a", "b", "c"], fb.OpParameter.Slice, param).outputs
    for part, out in zip(parts, "qkv", strict=True):
        squeeze = fb.SqueezeParamT()
        squeeze.squeezeDims = [0]
        graph.add(OP.Squeeze, [part], [out], fb.OpParameter.SqueezeParam, squeeze)
    graph.outputs = ["q", "k", "v"]
    assert split_before_transpose.apply(graph) == 4  # one Split rewritten, three Gathers moved
    remove_dead.apply(graph)
    ops = _ops(graph)
    assert OP.Slice not in ops and OP.Squeeze not in ops and ops.count(OP.GatherV2) == 3
    for out in "qkv":
        permute = graph.producers()[out]
        assert permute.op_type == OP.Permute and list(permute.param.dims) == [0, 2, 1, 3]
        assert graph.producers()[permute.inputs[0]].op_type == OP.GatherV2


def _split_qkv_attention() -> tuple[Graph, str]:
    """x [2, 5, 24] -> one packed QKV permute, split by Gathers, softmax-free attention y = (Q K^T) V; returns the
    graph and the name of Q K^T."""
    graph = Graph()
    graph.inputs["x"] = InputSpec([2, 5, 24])
    qkv = _permute(graph, _reshape(graph, "x", [2, 5, 3, 2, 4]), [2, 0, 3, 1, 4])
    q, k, v = (graph.add(OP.GatherV2, [qkv, graph.add_const(np.int32(i)), graph.add_const(np.int32(0))]).outputs[0]
               for i in range(3))
    scores = _matmul(graph, q, _permute(graph, k, [0, 1, 3, 2]))
    graph.add(OP.MatMul, [scores, v], ["y"], fb.OpParameter.MatMul, fb.MatMulT())
    graph.outputs = ["y"]
    return graph, scores


def test_hoist_merges_split_transposes_that_attention_did_not_absorb() -> None:
    """split-before-transpose, then no Attention (compatible mode, batch 2): the Permutes are merged back."""
    graph, _ = _split_qkv_attention()
    assert transpose.apply(graph) == 1  # without the transformer passes: one Permute, K's folded into the MatMul
    baseline = _ops(graph).count(OP.Permute)
    graph, scores = _split_qkv_attention()
    assert split_before_transpose.apply(graph) == 3
    transpose.apply(graph)
    assert fuse_attention.apply(graph) == 0
    assert _ops(graph).count(OP.Permute) == 3
    assert hoist_transpose_above_split.apply(graph) == 1
    transpose.apply(graph)
    remove_dead.apply(graph)
    assert _ops(graph).count(OP.Permute) == baseline == 1
    hoisted = next(n for n in graph.nodes if n.op_type == OP.Permute)
    assert list(hoisted.param.dims) == [2, 0, 3, 1, 4]
    matmul = graph.producers()[scores]
    assert matmul.param.transposeB  # K's remaining swap became the MatMul flag again


def test_pipeline_order_and_opt_in_passes() -> None:
    names = [name for name, _ in PIPELINE]
    order = ["fuse-gelu", "fuse-gelu-tanh", "fuse-layer-norm", "fuse-rms-norm", "fuse-group-norm", "remove-dead",
             "split-before-transpose", "split-qkv", "transpose-cancellation", "fuse-attention",
             "fuse-attention-extended", "hoist-transpose-above-split", "token-reorder", "matmul-to-conv"]
    assert [names.index(n) for n in order] == sorted(names.index(n) for n in order)
    assert {"fuse-group-norm", "fuse-attention-extended", "token-reorder"} == OPT_IN
    graph = _attention_graph(batch=2)
    counts = run_pipeline(graph)
    assert "fuse-attention-extended" not in counts and counts["fuse-attention"] == 0
    graph = _attention_graph(batch=2)
    counts = run_pipeline(graph, enable=OPT_IN)
    assert counts["fuse-attention-extended"] == 1 and OP.Attention in _ops(graph)
