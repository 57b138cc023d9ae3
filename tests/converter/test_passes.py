"""Before/after tests for each pass of converter.passes.PIPELINE, on graphs built directly in the IR."""

from __future__ import annotations

import numpy as np
from mnnpy.converter.graph import Graph, InputSpec
from mnnpy.converter.passes import (
    PIPELINE,
    dedupe,
    fold_constants,
    fuse_binary_into_conv,
    fuse_gelu,
    fuse_layer_norm,
    fuse_relu_into_binary,
    fuse_relu_into_conv,
    fuse_scale_into_conv,
    layout,
    matmul_to_conv,
    remove_dead,
    remove_identity,
    transpose,
)
from mnnpy.schema import mnn_generated as fb

OP = fb.OpType


def _conv(graph: Graph, x: str, out: str, oc: int = 4, ic: int = 3, group: int = 1) -> fb.Convolution2DT:
    param = fb.Convolution2DT()
    param.common = fb.Convolution2DCommonT()
    param.common.outputCount, param.common.inputCount, param.common.group = oc, ic, group
    param.common.kernelX = param.common.kernelY = 1
    rng = np.random.default_rng(0)
    param.weight = rng.standard_normal(oc * ic // group).astype(np.float32)
    param.bias = rng.standard_normal(oc).astype(np.float32)
    op_type = OP.ConvolutionDepthwise if group > 1 else OP.Convolution
    graph.add(op_type, [x], [out], fb.OpParameter.Convolution2D, param)
    return param


def _graph() -> Graph:
    graph = Graph()
    graph.inputs["x"] = InputSpec([1, 3, 4, 4])
    return graph


def test_pipeline_is_one_ordered_list() -> None:
    names = [name for name, _ in PIPELINE]
    assert names.index("remove-identity") < names.index("fold-constants") < names.index("add-tensor-format-converter")
    assert names[-1] == "remove-dead"


def test_remove_identity_rewires_readers_and_keeps_output_names() -> None:
    graph = _graph()
    graph.add(OP.Identity, ["x"], ["a"])
    graph.add(OP.UnaryOp, ["a"], ["b"], fb.OpParameter.UnaryOp, fb.UnaryOpT())
    graph.add(OP.Dropout, ["b"], ["y"])
    graph.outputs = ["y"]
    assert remove_identity.apply(graph) == 2
    assert [n.op_type for n in graph.nodes] == [OP.UnaryOp]
    assert graph.nodes[0].inputs == ["x"] and graph.nodes[0].outputs == ["y"]


def test_remove_identity_keeps_input_passthrough() -> None:
    graph = _graph()
    graph.add(OP.Identity, ["x"], ["y"])
    graph.outputs = ["y"]
    assert remove_identity.apply(graph) == 0
    assert len(graph.nodes) == 1


def test_fold_constants_evaluates_chains() -> None:
    graph = _graph()
    graph.constants["s"] = np.array([1, 3, 4, 4], np.int32)
    gather = graph.add(OP.GatherV2, ["s", graph.add_const(np.int32(1)), graph.add_const(np.int32(0))], ["c"])
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.MUL
    graph.add(OP.BinaryOp, ["c", graph.add_const(np.int32(2))], ["c2"], fb.OpParameter.BinaryOp, param)
    graph.add(OP.Reshape, ["x", "c2"], ["y"], fb.OpParameter.Reshape, fb.ReshapeT())
    graph.outputs = ["y"]
    assert fold_constants.apply(graph) == 2
    assert gather not in graph.nodes
    assert graph.constants["c2"].tolist() == 6 and graph.constants["c2"].dtype == np.int32
    assert [n.op_type for n in graph.nodes] == [OP.Reshape]


def test_fuse_scale_into_conv_matches_numpy() -> None:
    graph = _graph()
    param = _conv(graph, "x", "c")
    w0, b0 = param.weight.reshape(4, 3).copy(), param.bias.copy()
    scale = fb.ScaleT()
    scale.channels = 4
    scale.scaleData = np.array([1.0, 2.0, -1.0, 0.5], np.float32)
    scale.biasData = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    graph.add(OP.Scale, ["c"], ["y"], fb.OpParameter.Scale, scale)
    graph.outputs = ["y"]
    assert fuse_scale_into_conv.apply(graph) == 1
    assert len(graph.nodes) == 1 and graph.nodes[0].outputs == ["y"]
    x = np.random.default_rng(1).standard_normal(3)
    expected = (w0 @ x + b0) * scale.scaleData + scale.biasData
    got = param.weight.reshape(4, 3) @ x + param.bias
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_fuse_scale_skipped_when_conv_output_is_shared() -> None:
    graph = _graph()
    _conv(graph, "x", "c")
    scale = fb.ScaleT()
    scale.scaleData = np.ones(4, np.float32)
    scale.biasData = np.zeros(4, np.float32)
    graph.add(OP.Scale, ["c"], ["y"], fb.OpParameter.Scale, scale)
    graph.add(OP.ReLU, ["c"], ["y2"], fb.OpParameter.Relu, fb.ReluT())
    graph.outputs = ["y", "y2"]
    assert fuse_scale_into_conv.apply(graph) == 0


def test_fuse_relu_and_relu6_into_conv() -> None:
    graph = _graph()
    _conv(graph, "x", "c")
    graph.add(OP.ReLU, ["c"], ["r"], fb.OpParameter.Relu, fb.ReluT())
    _conv(graph, "r", "d", oc=4, ic=4, group=4)
    graph.add(OP.ReLU6, ["d"], ["y"], fb.OpParameter.Relu6, fb.Relu6T())
    leaky = fb.ReluT()
    leaky.slope = 0.1
    graph.outputs = ["y"]
    assert fuse_relu_into_conv.apply(graph) == 2
    assert graph.nodes[0].param.common.relu and graph.nodes[1].param.common.relu6
    assert graph.nodes[1].outputs == ["y"]


def test_leaky_relu_is_not_fused() -> None:
    graph = _graph()
    _conv(graph, "x", "c")
    leaky = fb.ReluT()
    leaky.slope = 0.1
    graph.add(OP.ReLU, ["c"], ["y"], fb.OpParameter.Relu, leaky)
    graph.outputs = ["y"]
    assert fuse_relu_into_conv.apply(graph) == 0


def test_layout_converts_around_nc4hw4_islands() -> None:
    graph = _graph()
    _conv(graph, "x", "c")
    graph.add(OP.UnaryOp, ["c"], ["u"], fb.OpParameter.UnaryOp, fb.UnaryOpT())
    graph.add(OP.Softmax, ["u"], ["s"], fb.OpParameter.Axis, fb.AxisT())
    _conv(graph, "u", "y", oc=4, ic=4)
    graph.outputs = ["s", "y"]
    assert layout.apply(graph) == 3
    kinds = [(n.op_type, n.inputs, n.outputs) for n in graph.nodes]
    assert kinds[0][0] == OP.ConvertTensor and kinds[0][1] == ["x"]
    softmax = next(n for n in graph.nodes if n.op_type == OP.Softmax)
    convert_in = next(n for n in graph.nodes if softmax.inputs[0] in n.outputs)
    assert convert_in.op_type == OP.ConvertTensor and convert_in.param.dest == fb.MNN_DATA_FORMAT.NCHW
    last = graph.nodes[-1]
    assert last.op_type == OP.ConvertTensor and last.outputs == ["y"] and last.inputs == ["y__before_tr"]


def test_remove_dead_drops_unused_ops_and_constants() -> None:
    graph = _graph()
    graph.add(OP.UnaryOp, ["x"], ["y"], fb.OpParameter.UnaryOp, fb.UnaryOpT())
    graph.add(OP.BinaryOp, ["x", graph.add_const(np.float32(1))], ["unused"], fb.OpParameter.BinaryOp,
              fb.BinaryOpT())
    graph.outputs = ["y"]
    assert remove_dead.apply(graph) == 1
    assert not graph.constants


def _binary_node(graph: Graph, op: int, a: str, b: str, out: str) -> None:
    param = fb.BinaryOpT()
    param.opType = op
    graph.add(OP.BinaryOp, [a, b], [out], fb.OpParameter.BinaryOp, param)


def _permute(graph: Graph, x: str, perm: list[int], out: str) -> None:
    param = fb.PermuteT()
    param.dims = perm
    graph.add(OP.Permute, [x], [out], fb.OpParameter.Permute, param)


def test_transpose_pairs_compose_and_cancel() -> None:
    graph = _graph()
    _permute(graph, "x", [0, 2, 3, 1], "a")
    _permute(graph, "a", [0, 3, 1, 2], "y")
    graph.outputs = ["y"]
    assert transpose.apply(graph) >= 2
    assert [n.op_type for n in graph.nodes] == [OP.Identity]  # x -> y only: kept as Identity for the output name
    graph = _graph()
    _permute(graph, "x", [0, 2, 1, 3], "a")
    _permute(graph, "a", [0, 1, 3, 2], "y")
    graph.outputs = ["y"]
    transpose.apply(graph)
    assert len(graph.nodes) == 1 and list(graph.nodes[0].param.dims) == [0, 2, 3, 1]
    x = np.arange(24).reshape(1, 2, 3, 4)
    assert np.array_equal(x.transpose(0, 2, 1, 3).transpose(0, 1, 3, 2), x.transpose(graph.nodes[0].param.dims))


def test_transpose_folds_into_matmul_flag() -> None:
    graph = _graph()
    graph.inputs["z"] = InputSpec([1, 3, 5, 4])
    _permute(graph, "z", [0, 1, 3, 2], "zt")
    graph.add(OP.MatMul, ["x", "zt"], ["y"], fb.OpParameter.MatMul, fb.MatMulT())
    graph.outputs = ["y"]
    assert transpose.apply(graph) == 1
    assert graph.nodes[0].inputs == ["x", "z"] and graph.nodes[0].param.transposeB


def test_fuse_relu_into_binary() -> None:
    graph = _graph()
    _binary_node(graph, fb.BinaryOpOperation.ADD, "x", "x", "s")
    graph.add(OP.ReLU, ["s"], ["y"], fb.OpParameter.Relu, fb.ReluT())
    graph.outputs = ["y"]
    assert fuse_relu_into_binary.apply(graph) == 1
    assert graph.nodes[0].param.activationType == 1 and graph.nodes[0].outputs == ["y"]


def test_matmul_to_conv_folds_bias() -> None:
    graph = _graph()
    graph.inputs["x"] = InputSpec([5, 6])
    graph.constants["w"] = np.ones((6, 3), np.float32)
    graph.constants["b"] = np.arange(3, dtype=np.float32)
    graph.add(OP.MatMul, ["x", "w"], ["m"], fb.OpParameter.MatMul, fb.MatMulT())
    _binary_node(graph, fb.BinaryOpOperation.ADD, "m", "b", "y")
    graph.outputs = ["y"]
    assert matmul_to_conv.apply(graph, {"x": 2}) == 1
    types = [n.op_type for n in graph.nodes]
    assert types == [OP.Reshape, OP.Convolution, OP.Reshape]
    conv = graph.nodes[1].param
    assert conv.common.outputCount == 3 and conv.common.inputCount == 6 and list(conv.bias) == [0, 1, 2]
    assert graph.nodes[-1].outputs == ["y"]


def test_fuse_gelu_erf_form() -> None:
    graph = _graph()
    graph.constants.update({"r2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)})
    _binary_node(graph, fb.BinaryOpOperation.REALDIV, "x", "r2", "d")
    erf = fb.UnaryOpT()
    erf.opType = fb.UnaryOpOperation.ERF
    graph.add(OP.UnaryOp, ["d"], ["e"], fb.OpParameter.UnaryOp, erf)
    _binary_node(graph, fb.BinaryOpOperation.ADD, "e", "one", "a")
    _binary_node(graph, fb.BinaryOpOperation.MUL, "x", "a", "m")
    _binary_node(graph, fb.BinaryOpOperation.MUL, "m", "half", "y")
    graph.outputs = ["y"]
    assert fuse_gelu.apply(graph) == 1
    remove_dead.apply(graph)
    assert len(graph.nodes) == 1 and graph.nodes[0].param.opType == fb.UnaryOpOperation.GELU_STANDARD
    assert graph.nodes[0].inputs == ["x"] and graph.nodes[0].outputs == ["y"]


def test_dedupe_merges_identical_ops_and_constants() -> None:
    graph = _graph()
    graph.constants.update({"c1": np.float32(2), "c2": np.float32(2)})
    _binary_node(graph, fb.BinaryOpOperation.MUL, "x", "c1", "a")
    _binary_node(graph, fb.BinaryOpOperation.MUL, "x", "c2", "b")
    _binary_node(graph, fb.BinaryOpOperation.ADD, "a", "b", "y")
    graph.outputs = ["y"]
    assert dedupe.apply(graph) == 2
    assert len(graph.nodes) == 2 and graph.nodes[1].inputs == ["a", "a"] and list(graph.constants) == ["c1"]


def test_fuse_layer_norm_decomposed_form() -> None:
    graph = _graph()
    graph.ranks["x"] = 4
    graph.constants.update({"two": np.float32(2), "eps": np.float32(1e-5), "g": np.full(4, 2, np.float32),
                            "b": np.ones(4, np.float32)})

    def mean(x: str, out: str) -> None:
        param = fb.ReductionParamT()
        param.operation = fb.ReductionType.MEAN
        param.dim = [3]
        param.keepDims = True
        graph.add(OP.Reduction, [x], [out], fb.OpParameter.ReductionParam, param)

    mean("x", "m")
    _binary_node(graph, fb.BinaryOpOperation.SUB, "x", "m", "d")
    _binary_node(graph, fb.BinaryOpOperation.POW, "d", "two", "sq")
    mean("sq", "v")
    _binary_node(graph, fb.BinaryOpOperation.ADD, "v", "eps", "ve")
    sqrt = fb.UnaryOpT()
    sqrt.opType = fb.UnaryOpOperation.SQRT
    graph.add(OP.UnaryOp, ["ve"], ["s"], fb.OpParameter.UnaryOp, sqrt)
    _binary_node(graph, fb.BinaryOpOperation.REALDIV, "d", "s", "n")
    _binary_node(graph, fb.BinaryOpOperation.MUL, "n", "g", "ng")
    _binary_node(graph, fb.BinaryOpOperation.ADD, "ng", "b", "y")
    graph.outputs = ["y"]
    assert fuse_layer_norm.apply(graph) == 1
    remove_dead.apply(graph)
    assert [n.op_type for n in graph.nodes] == [OP.LayerNorm]
    ln = graph.nodes[0].param
    assert list(ln.axis) == [-1] and abs(ln.epsilon - 1e-5) < 1e-9 and list(ln.gamma) == [2] * 4
    assert graph.nodes[0].inputs == ["x"] and graph.nodes[0].outputs == ["y"]


def test_fuse_binary_into_conv_but_not_after_relu() -> None:
    graph = _graph()
    param = _conv(graph, "x", "c")
    w0, b0 = param.weight.reshape(4, 3).copy(), param.bias.copy()
    graph.constants["k"] = np.arange(4, dtype=np.float32).reshape(4, 1, 1)
    graph.constants["s"] = np.float32(3)
    _binary_node(graph, fb.BinaryOpOperation.SUB, "c", "k", "d")
    _binary_node(graph, fb.BinaryOpOperation.MUL, "s", "d", "y")
    graph.outputs = ["y"]
    assert fuse_binary_into_conv.apply(graph) == 2
    assert len(graph.nodes) == 1 and graph.nodes[0].outputs == ["y"]
    x = np.random.default_rng(2).standard_normal(3)
    expected = 3 * (w0 @ x + b0 - np.arange(4))
    np.testing.assert_allclose(param.weight.reshape(4, 3) @ x + param.bias, expected, rtol=1e-5)
    graph = _graph()
    relu = _conv(graph, "x", "c")
    relu.common.relu = True  # relu(conv) + k != relu(conv + k): must stay an Add (MNNConvert 3.6.1 folds it)
    graph.constants["k"] = np.ones((4, 1, 1), np.float32)
    _binary_node(graph, fb.BinaryOpOperation.ADD, "c", "k", "y")
    graph.outputs = ["y"]
    assert fuse_binary_into_conv.apply(graph) == 0
