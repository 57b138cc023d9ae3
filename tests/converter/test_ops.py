"""Per-op conversion tests: one small ONNX model per case, converted by us, run in official MNN vs onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .helpers import F, TensorProto, check_model, make_model, oh

I64 = TensorProto.INT64
RNG = np.random.default_rng(1234)


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def node(op: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> Any:
    return oh.make_node(op, inputs, outputs or ["y"], **attrs)


X13 = [1, 13, 5, 7]
X3 = [2, 3, 6, 5]


def case(name: str, nodes: list[Any], shapes: dict[str, list[int]], inits: dict[str, np.ndarray] | None = None,
         opset: int = 17, outputs: list[Any] | None = None, positive: bool = False) -> Any:
    return pytest.param(nodes, shapes, inits or {}, opset, outputs or ["y"], positive, id=name)


CASES = [
    case("conv3x3", [node("Conv", ["x", "w", "b"], pads=[1, 1, 1, 1])], {"x": X3},
         {"w": rand(13, 3, 3, 3), "b": rand(13)}),
    case("conv_stride_dil_nobias", [node("Conv", ["x", "w"], strides=[2, 1], dilations=[1, 2], pads=[0, 2, 1, 0])],
         {"x": X13}, {"w": rand(4, 13, 3, 3)}),
    case("conv_depthwise", [node("Conv", ["x", "w", "b"], group=13, pads=[1, 1, 1, 1])], {"x": X13},
         {"w": rand(13, 1, 3, 3), "b": rand(13)}),
    case("conv_group", [node("Conv", ["x", "w"], group=3)], {"x": [1, 6, 5, 5]}, {"w": rand(9, 2, 1, 1)}),
    case("conv_same_upper", [node("Conv", ["x", "w"], auto_pad="SAME_UPPER", strides=[2, 2])], {"x": X3},
         {"w": rand(5, 3, 3, 3)}),
    case("conv_same_lower", [node("Conv", ["x", "w"], auto_pad="SAME_LOWER", strides=[2, 2])], {"x": X3},
         {"w": rand(5, 3, 4, 4)}),
    case("maxpool_same_lower", [node("MaxPool", ["x"], kernel_shape=[2, 3], auto_pad="SAME_LOWER")], {"x": X13}),
    case("conv1d", [node("Conv", ["x", "w", "b"], pads=[1, 1])], {"x": [1, 3, 11]}, {"w": rand(4, 3, 3), "b": rand(4)}),
    case("conv_runtime_weights_grouped", [node("Conv", ["x", "w", "b"], group=2, pads=[1, 1, 1, 1])],
         {"x": [2, 4, 8, 7], "w": [6, 2, 3, 3], "b": [6]}),
    case("conv1d_runtime_weights_depthwise", [node("Conv", ["x", "w"], group=4)], {"x": [2, 4, 9], "w": [4, 1, 3]}),
    case("conv_transpose", [node("ConvTranspose", ["x", "w", "b"], strides=[2, 2], pads=[1, 1, 1, 1],
                                 output_padding=[1, 1])], {"x": X3}, {"w": rand(3, 4, 3, 3), "b": rand(4)}),
    case("conv_transpose_depthwise_runtime", [node("ConvTranspose", ["x", "w"], group=3, strides=[2, 2])],
         {"x": X3, "w": [3, 1, 3, 3]}),
    case("conv_transpose_output_shape", [node("ConvTranspose", ["x", "w"], strides=[3, 2], output_shape=[19, 12])],
         {"x": X3}, {"w": rand(3, 2, 3, 3)}),
    case("batchnorm", [node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": X13},
         {"s": rand(13), "b": rand(13), "m": rand(13), "v": rand(13, low=0.5, high=1.5)}),
    case("batchnorm_runtime_stats", [node("BatchNormalization", ["x", "s", "b", "m", "v"])],
         {"x": X13, "s": [13], "b": [13], "m": [13]}, {"v": rand(13, low=0.5, high=1.5)}),
    case("lp_pool", [node("LpPool", ["x"], kernel_shape=[2, 3], pads=[1, 0, 1, 1], p=3)], {"x": X13}, opset=18),
    case("unsqueeze_negative", [node("Unsqueeze", ["x", "a"])], {"x": X3}, {"a": np.array([-1, 0], np.int64)}),
    case("constant_output", [node("Constant", [], ["c"], value=oh.make_tensor("v", F, [2], [1.0, 2.0])),
                             node("Relu", ["x"])], {"x": X13}, outputs=["y", "c"]),
    case("relu", [node("Relu", ["x"])], {"x": X13}),
    case("leaky_relu", [node("LeakyRelu", ["x"], alpha=0.2)], {"x": X13}),
    case("clip11", [node("Clip", ["x", "lo", "hi"])], {"x": X13},
         {"lo": np.float32(-0.3), "hi": np.float32(0.4)}, opset=11),
    case("clip6", [node("Clip", ["x"], min=-0.2, max=0.5)], {"x": X13}, opset=6),
    case("prelu_channel", [node("PRelu", ["x", "s"])], {"x": X13}, {"s": rand(13, 1, 1)}),
    case("prelu_last", [node("PRelu", ["x", "s"])], {"x": X13}, {"s": rand(7)}),
    case("sigmoid", [node("Sigmoid", ["x"])], {"x": X3}),
    case("tanh", [node("Tanh", ["x"])], {"x": X3}),
    case("hard_sigmoid", [node("HardSigmoid", ["x"], alpha=0.3)], {"x": X3}),
    case("hard_swish", [node("HardSwish", ["x"])], {"x": X3}, opset=14),
    case("elu", [node("Elu", ["x"], alpha=0.7)], {"x": X3}),
    case("selu", [node("Selu", ["x"])], {"x": X3}),
    case("softplus", [node("Softplus", ["x"])], {"x": X3}),
    case("gelu", [node("Gelu", ["x"])], {"x": X3}, opset=20),
    case("gelu_tanh", [node("Gelu", ["x"], approximate="tanh")], {"x": X3}, opset=20),
    case("erf", [node("Erf", ["x"])], {"x": X3}),
    *[case(op.lower(), [node(op, ["x", "z"])], {"x": X3, "z": X3}) for op in ("Add", "Sub", "Mul", "Max", "Min")],
    case("div", [node("Div", ["x", "z"])], {"x": X3}, {"z": rand(5, low=0.5, high=2)}),
    case("pow", [node("Pow", ["x", "z"])], {"x": X3}, {"z": np.float32(2.0)}, positive=True),
    case("add_broadcast", [node("Add", ["x", "z"])], {"x": X13}, {"z": rand(13, 1, 1)}),
    case("compare_where", [node("Greater", ["x", "z"], ["g"]), node("Where", ["g", "x", "z"])],
         {"x": X3, "z": X3}),
    case("and_or_not", [node("Less", ["x", "z"], ["l"]), node("Greater", ["x", "c"], ["g"]),
                        node("And", ["l", "g"], ["a"]), node("Or", ["l", "g"], ["o"]), node("Not", ["a"], ["n"]),
                        node("Where", ["n", "x", "z"], ["y"])],
         {"x": X3, "z": X3}, {"c": np.float32(0.0)}),
    *[case(op.lower(), [node(op, ["x"])], {"x": X3}, positive=op in ("Sqrt", "Log", "Reciprocal"))
      for op in ("Abs", "Neg", "Floor", "Ceil", "Sqrt", "Exp", "Log", "Reciprocal", "Sin", "Cos")],
    case("maxpool", [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {"x": X13}),
    case("maxpool_ceil", [node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], {"x": X13}),
    case("maxpool_ceil_last_window", [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                           ceil_mode=1)], {"x": [1, 3, 6, 7]}),
    case("avgpool_pad_exclude", [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {"x": X13}),
    case("avgpool_pad_include", [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      count_include_pad=1)], {"x": X13}),
    case("avgpool_asymmetric_include", [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[0, 1, 2, 0],
                                             count_include_pad=1)], {"x": X13}),
    case("global_avgpool", [node("GlobalAveragePool", ["x"])], {"x": X13}),
    case("global_maxpool", [node("GlobalMaxPool", ["x"])], {"x": X13}),
    case("gemm", [node("Gemm", ["x", "w", "b"], transB=1, alpha=0.5, beta=2.0)], {"x": [3, 7]},
         {"w": rand(5, 7), "b": rand(5)}),
    case("gemm_act", [node("Gemm", ["x", "w"])], {"x": [3, 7], "w": [7, 4]}),
    case("matmul", [node("MatMul", ["x", "z"])], {"x": [2, 3, 5, 6], "z": [2, 3, 6, 4]}),
    case("matmul_const", [node("MatMul", ["x", "w"])], {"x": [2, 5, 6]}, {"w": rand(6, 3)}),
    case("matmul_broadcast", [node("MatMul", ["x", "z"])], {"x": [2, 3, 5, 6], "z": [6, 4]}),
    case("flatten", [node("Flatten", ["x"], axis=2)], {"x": X3}),
    case("reshape", [node("Reshape", ["x", "s"])], {"x": X3}, {"s": np.array([0, -1, 5], np.int64)}),
    case("squeeze_unsqueeze", [node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u", "a"])],
         {"x": X3}, {"a": np.array([2], np.int64)}),
    case("transpose", [node("Transpose", ["x"], perm=[0, 2, 3, 1])], {"x": X13}),
    case("concat", [node("Concat", ["x", "z"], axis=1)], {"x": X3, "z": [2, 5, 6, 5]}),
    case("split", [node("Split", ["x", "s"], ["y", "y2"], axis=3)], {"x": X3}, {"s": np.array([2, 3], np.int64)},
         outputs=["y", "y2"]),
    case("split_equal", [node("Split", ["x"], ["y", "y2"], axis=2)], {"x": X3}, outputs=["y", "y2"]),
    case("slice", [node("Slice", ["x", "st", "en", "ax", "sp"])], {"x": X13},
         {"st": np.array([1, -6], np.int64), "en": np.array([12, 100], np.int64), "ax": np.array([1, 3], np.int64),
          "sp": np.array([2, 1], np.int64)}),
    case("gather", [node("Gather", ["x", "i"], axis=1)], {"x": X3}, {"i": np.array([2, 0, -1], np.int64)}),
    case("gather_elements_negative", [node("GatherElements", ["x", "i"], axis=-1)], {"x": [3, 4]},
         {"i": np.array([[0, -1], [2, -4], [-2, 1]], np.int64)}),
    case("gather_scalar", [node("Gather", ["x", "i"], axis=0)], {"x": [7, 3]}, {"i": np.array(4, np.int64)}),
    case("pad_constant", [node("Pad", ["x", "p", "v"])], {"x": X3},
         {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "v": np.float32(0.5)}),
    case("pad_reflect", [node("Pad", ["x", "p"], mode="reflect")], {"x": X3},
         {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    case("pad_edge", [node("Pad", ["x", "p"], mode="edge")], {"x": X3},
         {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    case("resize_nearest", [node("Resize", ["x", "", "s"], mode="nearest")], {"x": X3},
         {"s": np.array([1, 1, 2, 2], np.float32)}),
    case("resize_nearest_floor_asym", [node("Resize", ["x", "", "s"], mode="nearest", nearest_mode="floor",
                                            coordinate_transformation_mode="asymmetric")], {"x": X3},
         {"s": np.array([1, 1, 2, 3], np.float32)}),
    case("resize_linear_sizes", [node("Resize", ["x", "", "", "s"], mode="linear")], {"x": X3},
         {"s": np.array([2, 3, 9, 11], np.int64)}),
    case("resize_linear_align", [node("Resize", ["x", "", "s"], mode="linear",
                                      coordinate_transformation_mode="align_corners")], {"x": X3},
         {"s": np.array([1, 1, 2, 2], np.float32)}),
    case("resize_cubic_align", [node("Resize", ["x", "", "s"], mode="cubic",
                                     coordinate_transformation_mode="align_corners")], {"x": X3},
         {"s": np.array([1, 1, 2, 2], np.float32)}),
    case("resize_cubic_asym", [node("Resize", ["x", "", "s"], mode="cubic",
                                    coordinate_transformation_mode="asymmetric")], {"x": X3},
         {"s": np.array([1, 1, 2, 2], np.float32)}),
    case("resize_axes_scales", [node("Resize", ["x", "", "s"], mode="nearest", axes=[3, 2])], {"x": X3},
         {"s": np.array([2, 3], np.float32)}, opset=18),
    case("resize_not_larger_sizes", [node("Resize", ["x", "", "", "s"], mode="nearest", axes=[2, 3],
                                          keep_aspect_ratio_policy="not_larger")], {"x": X3},
         {"s": np.array([9, 20], np.int64)}, opset=18),
    case("cumprod_with_zero_and_negatives", [node("CumProd", ["s", "a"], ["c"], reverse=1), node("Add", ["c", "x"])],
         {"x": [7]}, {"s": np.array([2, -1, 0.5, -3, 0, 4, -2], np.float32), "a": np.array(0, np.int64)}, opset=26),
    case("softmax", [node("Softmax", ["x"], axis=1)], {"x": X13}),
    case("softmax_last", [node("Softmax", ["x"])], {"x": X13}),
    case("softmax_v11", [node("Softmax", ["x"], axis=1)], {"x": X3}, opset=11),
    case("log_softmax", [node("LogSoftmax", ["x"], axis=-1)], {"x": X13}),
    *[case(op.lower(), [node(op, ["x"], axes=[1, 3], keepdims=k)], {"x": X3}, opset=13, positive=op == "ReduceLogSum")
      for op, k in (("ReduceMean", 1), ("ReduceMax", 0), ("ReduceMin", 1), ("ReduceProd", 0), ("ReduceL2", 1),
                    ("ReduceL1", 0), ("ReduceSumSquare", 1), ("ReduceLogSumExp", 0), ("ReduceLogSum", 1))],
    case("reduce_sum", [node("ReduceSum", ["x", "a"], keepdims=0)], {"x": X3}, {"a": np.array([-1], np.int64)}),
    case("reduce_mean_all", [node("ReduceMean", ["x"])], {"x": X3}, opset=13),
    case("argmax", [node("ArgMax", ["x"], ["i"], axis=1, keepdims=0), node("Cast", ["i"], to=F)], {"x": X13}),
    case("argmin_keep", [node("ArgMin", ["x"], ["i"], axis=-1), node("Cast", ["i"], to=F)], {"x": X13}),
    case("cast_roundtrip", [node("Cast", ["x"], ["i"], to=TensorProto.INT32), node("Cast", ["i"], to=F)],
         {"x": X3}),
    case("shape_cos_expand", [node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["c"],
                                                                value=oh.make_tensor("v", F, [1], [2.0])),
                              node("Mul", ["x", "c"])], {"x": X3}),
    case("expand", [node("Expand", ["x", "s"])], {"x": [3, 1, 5]}, {"s": np.array([2, 3, 4, 5], np.int64)}),
    case("tile", [node("Tile", ["x", "r"])], {"x": X3}, {"r": np.array([1, 2, 1, 3], np.int64)}),
    case("range", [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i"], ["n"], axis=0),
                   node("Cast", ["n"], ["nf"], to=F), node("Range", ["z", "nf", "d"], ["r"]),
                   node("Add", ["x", "r"])], {"x": X3},
         {"i": np.array(3, np.int64), "z": np.float32(0), "d": np.float32(1)}),
    case("identity_dropout", [node("Identity", ["x"], ["a"]), node("Dropout", ["a"], ["b"]), node("Relu", ["b"])],
         {"x": X3}),
    case("layer_norm", [node("LayerNormalization", ["x", "g", "b"], epsilon=1e-5)], {"x": [2, 5, 13]},
         {"g": rand(13), "b": rand(13)}),
    case("layer_norm_2axes", [node("LayerNormalization", ["x", "g", "b"], axis=1)], {"x": [2, 5, 13]},
         {"g": rand(5, 13), "b": rand(5, 13)}),
    case("instance_norm", [node("InstanceNormalization", ["x", "g", "b"])], {"x": X13},
         {"g": rand(13), "b": rand(13)}),
    case("group_norm", [node("GroupNormalization", ["x", "g", "b"], num_groups=3)], {"x": [2, 6, 5, 3]},
         {"g": rand(6), "b": rand(6)}, opset=21),
    case("depth_to_space", [node("DepthToSpace", ["x"], blocksize=2)], {"x": [1, 12, 3, 5]}),
    case("depth_to_space_crd", [node("DepthToSpace", ["x"], blocksize=2, mode="CRD")], {"x": [1, 12, 3, 5]}),
    case("space_to_depth", [node("SpaceToDepth", ["x"], blocksize=2)], {"x": [1, 3, 4, 6]}),
    case("einsum_bmm", [node("Einsum", ["x", "z"], equation="bhid,bhjd->bhij")], {"x": [2, 3, 5, 4],
                                                                                    "z": [2, 3, 7, 4]}),
    case("einsum_matmul", [node("Einsum", ["x", "z"], equation="ij,jk->ik")], {"x": [5, 4], "z": [4, 3]}),
    case("topk", [node("TopK", ["x", "k"], ["v", "i"], axis=-1), node("Cast", ["i"], ["y"], to=F)], {"x": X3},
         {"k": np.array([3], np.int64)}, outputs=["v", "y"]),
    case("mean_sum", [node("Mean", ["x", "z", "x"], ["m"]), node("Sum", ["m", "z"])], {"x": X3, "z": X3}),
    case("lstm", [node("LSTM", ["x", "w", "r", "b", "", "h0"], ["y", "yh", "yc"], hidden_size=5)], {"x": [3, 2, 4]},
         {"w": rand(1, 20, 4), "r": rand(1, 20, 5), "b": rand(1, 40), "h0": rand(1, 2, 5)},
         outputs=["y", "yh", "yc"]),
    case("gru_bidirectional", [node("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=3, direction="bidirectional",
                                    linear_before_reset=1)], {"x": [4, 1, 2]},
         {"w": rand(2, 9, 2), "r": rand(2, 9, 3), "b": rand(2, 18)}, outputs=["y", "yh"]),
    case("rnn_reverse", [node("RNN", ["x", "w", "r"], ["y"], hidden_size=3, direction="reverse")], {"x": [2, 2, 3]},
         {"w": rand(1, 3, 3), "r": rand(1, 3, 3)}),
    case("round", [node("Round", ["s"], ["r"]), node("Add", ["r", "x"])], {"x": [6]},
         {"s": np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)}),
    case("trilu", [node("Trilu", ["x", "k"], upper=0)], {"x": [2, 5, 4]}, {"k": np.array(1, np.int64)}, opset=14),
    case("lrn", [node("LRN", ["x"], size=3, alpha=0.01, beta=0.7, bias=1.5)], {"x": X13}),
    case("lp_norm", [node("LpNormalization", ["x"], axis=1)], {"x": X3}),
    case("quant_dequant", [node("QuantizeLinear", ["x", "s", "z"], ["q"]), node("DequantizeLinear", ["q", "s", "z"])],
         {"x": [2, 13]}, {"s": np.float32(0.01), "z": np.uint8(128)}),
    case("rms_norm_function_body", [node("RMSNormalization", ["x", "g"], axis=-1)], {"x": [2, 3, 8]},
         {"g": rand(8)}, opset=23),
    case("grid_sample", [node("GridSample", ["x", "g"], align_corners=1)], {"x": [1, 3, 5, 6], "g": [1, 4, 3, 2]},
         opset=16),
]


def _scan_body() -> Any:
    body_nodes = [oh.make_node("Add", ["s_in", "x_t"], ["s_out"]), oh.make_node("Mul", ["s_out", "x_t"], ["y_t"])]
    return oh.make_graph(body_nodes, "body", [oh.make_tensor_value_info("s_in", F, [3]),
                                              oh.make_tensor_value_info("x_t", F, [3])],
                         [oh.make_tensor_value_info("s_out", F, [3]), oh.make_tensor_value_info("y_t", F, [3])])


def _branch(op: str) -> Any:
    return oh.make_graph([oh.make_node(op, ["x", "z"], ["b"])], op, [], [oh.make_tensor_value_info("b", F, [2, 3])])


CASES += [
    case("scan_unrolled", [node("Scan", ["s0", "x"], ["s", "y"], body=_scan_body(), num_scan_inputs=1,
                                scan_input_directions=[1])], {"x": [4, 3]}, {"s0": rand(3)}, opset=11,
         outputs=["s", "y"]),
    case("if_select", [node("ReduceSum", ["x"], ["t"], keepdims=0), node("Greater", ["t", "zero"], ["c"]),
                       node("If", ["c"], ["y"], then_branch=_branch("Add"), else_branch=_branch("Sub"))],
         {"x": [2, 3], "z": [2, 3]}, {"zero": np.float32(0)}, opset=11),
]


@pytest.mark.parametrize(("nodes", "shapes", "inits", "opset", "outputs", "positive"), CASES)
def test_op(nodes: list[Any], shapes: dict[str, list[int]], inits: dict[str, np.ndarray], opset: int,
            outputs: list[Any], positive: bool, tmp_path: Any) -> None:
    model = make_model(nodes, [(n, F, s) for n, s in shapes.items()], outputs, inits, opset)
    low = 0.1 if positive else -1.0
    feeds = {n: rand(*s, low=low, high=1.0) for n, s in shapes.items()}
    check_model(model, feeds, tmp_path)
