"""ONNX ops MNN has no single op for, converted to several (per-axis Resize tables, DeformConv as GridSample +
MatMul, MaxPool indices / MaxUnpool, TensorScatter, recurrent options, Einsum diagonals, blocked quantization,
training-mode BatchNormalization, bicubic GridSample): each against onnxruntime or the ONNX node data, on mnnpy's
runtime and on official MNN."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import ModelError

from .helpers import F, TensorProto, make_model, oh, onnx, rel_diff, run_ort
from .onnx_backend import BACKENDS
from .test_onnx_small_ops import _check, _run

RNG = np.random.default_rng(11)
I64 = TensorProto.INT64
RNN_FILE = Path(__file__).resolve().parent / "test_relu_rnn_torch.onnx"


# Resize cases of the ONNX node suite whose modes MNN's Interp lacks; the suite feeds their scales / sizes / roi as
# graph inputs, so here they become initializers (their values from the case's data), which the tables need
_TABLE_CASES = ["downsample_scales_cubic_A_n0p5_exclude_outside", "downsample_scales_cubic_antialias",
                "downsample_scales_linear_antialias", "downsample_scales_linear_half_pixel_symmetric",
                "downsample_sizes_cubic_antialias", "downsample_sizes_linear_antialias", "tf_crop_and_resize",
                "tf_crop_and_resize_axes_3_2", "tf_crop_and_resize_extrapolation_value",
                "upsample_scales_cubic_A_n0p5_exclude_outside", "upsample_scales_linear_half_pixel_symmetric",
                "upsample_sizes_nearest_ceil_half_pixel", "upsample_sizes_nearest_round_prefer_ceil_asymmetric"]


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("case", _TABLE_CASES)
def test_resize_tables_match_onnx_node_data(runtime: str, case: str) -> None:
    """Modes MNN's Interp has no encoding for (antialias, exclude_outside, half_pixel_symmetric, tf_crop_and_resize,
    nearest ceil / round_prefer_ceil) convert as constant per-axis tables: GatherV2 for nearest, MatMul for linear /
    cubic, extrapolation_value added where the roi leaves the input. Checked against the ONNX node data."""
    from onnx import numpy_helper

    from .onnx_backend import node_data_dir

    folder = node_data_dir() / f"test_resize_{case}"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not in this onnx wheel")
    model = onnx.load(str(folder / "model.onnx"))
    data = folder / "test_data_set_0"
    values = [numpy_helper.to_array(onnx.load_tensor(str(data / f"input_{i}.pb")))
              for i in range(len(model.graph.input))]
    expected = numpy_helper.to_array(onnx.load_tensor(str(data / "output_0.pb")))
    graph = model.graph
    for info, value in zip(list(graph.input)[1:], values[1:], strict=True):
        graph.initializer.append(numpy_helper.from_array(value, info.name))
    del graph.input[1:]
    got = _run(runtime, model, {graph.input[0].name: values[0]})[0]
    assert got.shape == expected.shape
    assert rel_diff(got, expected) <= 1e-6


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("attrs", "scales"), [
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.3, 0.45]),
    ({"mode": "cubic", "antialias": 1}, [1, 1, 0.3, 0.45]),
    ({"mode": "cubic", "antialias": 1, "exclude_outside": 1}, [1, 1, 0.5, 0.7]),
    ({"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}, [1, 1, 1.7, 0.6]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 0.7, 1.3]),
    ({"mode": "nearest", "nearest_mode": "ceil"}, [1, 1, 1.7, 0.6]),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil", "coordinate_transformation_mode": "asymmetric"},
     [1, 1, 2.5, 0.5]),
    ({"mode": "linear", "antialias": 1, "axes": [3]}, [0.4]),
])
def test_resize_tables_match_onnxruntime(runtime: str, attrs: dict[str, Any], scales: list[float]) -> None:
    """The tables at sizes of several tens (taps past both edges, antialias footprints of up to 14 taps)."""
    node = oh.make_node("Resize", ["x", "", "s"], ["y"], **attrs)
    model = make_model([node], [("x", F, [1, 3, 37, 53])], ["y"], {"s": np.array(scales, np.float32)}, 19)
    _check(runtime, model, {"x": RNG.standard_normal((1, 3, 37, 53)).astype(np.float32)})




@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("const_weights", [False, True])
def test_deform_conv(runtime: str, const_weights: bool) -> None:
    """DeformConv as GridSample + MatMul, against onnxruntime: 2 groups, 2 offset groups, stride, dilation,
    asymmetric pads, offsets of a few pixels (samples past every edge), mask and bias; weights as graph inputs (as
    the node suite has them) or initializers."""
    n, c, h, w, oc, k = 2, 4, 9, 11, 6, 3
    pads = [1, 2, 0, 1]
    out_h = (h + pads[0] + pads[2] - (2 * (k - 1) + 1)) // 2 + 1
    out_w = (w + pads[1] + pads[3] - k) + 1
    values = {"x": RNG.standard_normal((n, c, h, w)), "off": RNG.standard_normal((n, 2 * k * k * 2, out_h, out_w)) * 2,
              "mask": RNG.uniform(0, 1, (n, 2 * k * k, out_h, out_w)), "W": RNG.standard_normal((oc, c // 2, k, k)),
              "B": RNG.standard_normal(oc)}
    values = {name: v.astype(np.float32) for name, v in values.items()}
    node = oh.make_node("DeformConv", ["x", "W", "off", "B", "mask"], ["y"], group=2, offset_group=2,
                        kernel_shape=[k, k], strides=[2, 1], dilations=[2, 1], pads=pads)
    graph_inputs = ["x", "off", "mask"] + ([] if const_weights else ["W", "B"])
    inits = {"W": values["W"], "B": values["B"]} if const_weights else {}
    model = make_model([node], [(name, F, list(values[name].shape)) for name in graph_inputs], ["y"], inits, 22)
    _check(runtime, model, {name: values[name] for name in graph_inputs})


def test_deform_conv_needs_static_shapes() -> None:
    node = oh.make_node("DeformConv", ["x", "W", "off"], ["y"], kernel_shape=[2, 2])
    model = make_model([node], [("x", F, [1, 1, None, 3]), ("W", F, [1, 1, 2, 2]), ("off", F, [1, 8, 2, 2])], ["y"],
                       opset=22)
    with pytest.raises(ModelError, match=r"DeformConv.*static input, weight and offset shapes"):
        BACKENDS["mnnpy"].prepare(model)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [0, 1, 1, 0], "storage_order": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 0, 1, 1]},
])
def test_maxpool_indices(runtime: str, attrs: dict[str, Any]) -> None:
    """MaxPool's Indices output (MNN's Pool has none) against onnxruntime, on small integer values so that windows
    hold ties (the first position in row-major order wins) and padded / overhanging taps are never picked."""
    node = oh.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    model = make_model([node], [("x", F, [2, 3, 7, 9])], ["y", ("i", I64)], opset=12)
    x = RNG.integers(-3, 3, (2, 3, 7, 9)).astype(np.float32)
    got = _run(runtime, model, {"x": x})
    ref = run_ort(model, {"x": x})
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(np.asarray(got[1], np.int64), ref[1])


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("with_shape", [False, True])
def test_maxunpool_after_maxpool(runtime: str, with_shape: bool) -> None:
    """MaxPool -> MaxUnpool, as PyTorch exports max_pool2d(return_indices) -> max_unpool2d: overlapping windows
    (the same index picked twice), and an odd input size restored by output_shape (the indices address that shape,
    as in onnxruntime and PyTorch)."""
    nodes = [oh.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2]),
             oh.make_node("MaxUnpool", ["y", "i", "shape"] if with_shape else ["y", "i"], ["z"], kernel_shape=[3, 3],
                          strides=[2, 2])]
    size = [2, 3, 8, 10] if with_shape else [2, 3, 7, 9]  # 8 x 10 pools to what 7 x 9 would be inferred from
    inits = {"shape": np.array(size, np.int64)} if with_shape else {}
    model = make_model(nodes, [("x", F, size)], ["z"], inits, opset=12)
    _check(runtime, model, {"x": RNG.standard_normal(size).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("mode", "starts", "axis"), [
    ("linear", [0, 7, 11], -2), ("circular", [0, 7, 14], -2), ("circular", [15, 3, 12], 1), ("linear", None, -2),
])
def test_tensor_scatter(runtime: str, mode: str, starts: list[int] | None, axis: int) -> None:
    """TensorScatter (opset 24 KV-cache writes) against onnxruntime: wrapping circular writes, a 3-D cache with the
    sequence on axis 1, no write_indices; values copied exactly (the cache holds inf and NaN)."""
    cache_shape, update_shape = ([3, 2, 16, 8], [3, 2, 5, 8]) if axis == -2 else ([3, 16, 8], [3, 5, 8])
    cache = RNG.standard_normal(cache_shape).astype(np.float32)
    cache.reshape(-1)[[3, 40]] = [np.inf, np.nan]
    feeds = {"cache": cache, "update": RNG.standard_normal(update_shape).astype(np.float32)}
    inputs = [("cache", F, cache_shape), ("update", F, update_shape)]
    if starts is not None:
        feeds["starts"] = np.array(starts, np.int64)
        inputs.append(("starts", I64, [3]))
    node = oh.make_node("TensorScatter", [name for name, _, _ in inputs], ["y"], mode=mode, axis=axis)
    model = make_model([node], inputs, ["y"], opset=24)
    np.testing.assert_array_equal(_run(runtime, model, feeds)[0], run_ort(model, feeds)[0])


def test_deform_conv_offset_of_the_wrong_size_is_refused() -> None:
    node = oh.make_node("DeformConv", ["x", "W", "off"], ["y"], kernel_shape=[2, 2])
    model = make_model([node], [("x", F, [1, 1, 3, 3]), ("W", F, [1, 1, 2, 2]), ("off", F, [1, 8, 3, 3])], ["y"],
                       opset=22)
    with pytest.raises(ModelError, match="offset's spatial shape"):
        BACKENDS["mnnpy"].prepare(model)


_RNN_CASES = [
    ("LSTM", {"direction": "bidirectional", "clip": 0.5, "activation_alpha": [0.3, 1.5], "activation_beta": [0.4, 0.7],
              "activations": ["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "ScaledTanh", "Tanh"]}, True),
    ("LSTM", {"input_forget": 1}, True),
    ("LSTM", {"direction": "reverse"}, False),
    ("GRU", {"direction": "bidirectional", "activations": ["Sigmoid", "Relu", "HardSigmoid", "Tanh"],
             "linear_before_reset": 1}, False),
    ("GRU", {"clip": 0.3}, False),
    ("RNN", {"activations": ["Relu"]}, False),
    ("RNN", {"activations": ["LeakyRelu", "Elu"], "activation_alpha": [0.2, 0.8], "direction": "bidirectional"}, False),
    ("RNN", {"activations": ["ThresholdedRelu"], "activation_alpha": [0.1]}, False),
    ("RNN", {"activations": ["Affine"], "activation_alpha": [0.5], "activation_beta": [0.1]}, False),
    ("RNN", {"activations": ["Softplus"]}, False),
]


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("op", "attrs", "peepholes"), _RNN_CASES)
def test_recurrent_options(runtime: str, op: str, attrs: dict[str, Any], peepholes: bool) -> None:
    """LSTM / GRU / RNN with ONNX's other activations (alpha / beta consumed in order by those that take them),
    clip, peepholes, input_forget and sequence_lens (lengths 5, 2, 3 of 5 steps: held states, zero outputs past the
    end, reverse passes from each sequence's end), against onnxruntime."""
    steps, batch, size, hidden = 5, 3, 4, 6
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    inits = {"W": RNG.standard_normal((dirs, gates * hidden, size)) * 0.5,
             "R": RNG.standard_normal((dirs, gates * hidden, hidden)) * 0.5,
             "B": RNG.standard_normal((dirs, 2 * gates * hidden)) * 0.3,
             "L": np.array([5, 2, 3], np.int32), "h0": RNG.standard_normal((dirs, batch, hidden))}
    inputs, outputs = ["x", "W", "R", "B", "L", "h0"], ["y", "yh"]
    if op == "LSTM":
        inits["c0"] = RNG.standard_normal((dirs, batch, hidden))
        inputs.append("c0")
        outputs.append("yc")
        if peepholes:
            inits["P"] = RNG.standard_normal((dirs, 3 * hidden))
            inputs.append("P")
    inits = {k: v if v.dtype == np.int32 else v.astype(np.float32) for k, v in inits.items()}
    node = oh.make_node(op, inputs, outputs, hidden_size=hidden, **attrs)
    model = make_model([node], [("x", F, [steps, batch, size])], outputs, inits, 14)
    _check(runtime, model, {"x": RNG.standard_normal((steps, batch, size)).astype(np.float32)})


def test_unknown_recurrent_activation_is_refused() -> None:
    node = oh.make_node("RNN", ["x", "W", "R"], ["y"], hidden_size=2, activations=["Swish"])
    inits = {"W": np.ones((1, 2, 3), np.float32), "R": np.ones((1, 2, 2), np.float32)}
    with pytest.raises(ModelError, match="activation 'Swish' is not supported"):
        BACKENDS["mnnpy"].prepare(make_model([node], [("x", F, [4, 1, 3])], ["y"], inits, 14))


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_torch_relu_rnn(runtime: str) -> None:
    """torch.nn.RNN(nonlinearity='relu'), 2 bidirectional layers, as torch.onnx exports it (activations ['Relu']
    per direction; the file is committed, see ``export_relu_rnn``), against onnxruntime."""
    model = onnx.load(str(RNN_FILE))
    assert any(a.name == "activations" for n in model.graph.node if n.op_type == "RNN" for a in n.attribute)
    _check(runtime, model, {model.graph.input[0].name: RNG.standard_normal((5, 3, 4)).astype(np.float32)})


def export_relu_rnn() -> None:
    """Regenerate ``test_relu_rnn_torch.onnx`` (needs torch), from the repository root: ``python -c "from
    tests.converter.test_onnx_more_ops import export_relu_rnn; export_relu_rnn()"``."""
    import torch

    torch.manual_seed(0)
    module = torch.nn.RNN(4, 6, nonlinearity="relu", num_layers=2, bidirectional=True)
    torch.onnx.export(module, (torch.randn(5, 3, 4),), str(RNN_FILE), dynamo=False, opset_version=14)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("equation", "shape"), [
    ("ii->i", [5, 5]), ("ii", [4, 4]), ("bii->bi", [3, 4, 4]), ("ibi->b", [4, 3, 4]), ("iijj->ij", [3, 3, 2, 2]),
    ("...ii->...i", [2, 3, 4, 4]), ("iij->ji", [3, 3, 5]),
])
def test_einsum_diagonal(runtime: str, equation: str, shape: list[int]) -> None:
    """One-operand Einsum with repeated letters (diagonals, traces) against onnxruntime: the repeated axes moved
    last, merged and read every n + 1."""
    node = oh.make_node("Einsum", ["x"], ["y"], equation=equation)
    model = make_model([node], [("x", F, shape)], ["y"], opset=12)
    _check(runtime, model, {"x": RNG.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("axis", "block"), [(1, 4), (0, 3), (-1, 5)])
def test_blocked_quantization(runtime: str, axis: int, block: int) -> None:
    """QuantizeLinear -> DequantizeLinear with one scale / zero point per block of `block` values along `axis`
    (the last block short), against onnxruntime; the integer codes are compared too."""
    shape = [6, 10, 7]
    blocks = list(shape)
    blocks[axis] = -(-shape[axis] // block)
    inits = {"s": RNG.uniform(0.01, 0.05, blocks).astype(np.float32),
             "z": RNG.integers(-20, 20, blocks).astype(np.int8)}
    nodes = [oh.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis, block_size=block),
             oh.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis, block_size=block)]
    model = make_model(nodes, [("x", F, shape)], [("q", TensorProto.INT8), "y"], inits, opset=21)
    x = RNG.standard_normal(shape).astype(np.float32)
    got, ref = _run(runtime, model, {"x": x}), run_ort(model, {"x": x})
    np.testing.assert_array_equal(np.asarray(got[0], np.int64), ref[0].astype(np.int64))
    assert rel_diff(got[1], ref[1]) <= 1e-6


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_batch_norm_training_mode(runtime: str) -> None:
    """Training-mode BatchNormalization: the batch's own mean / population variance, and the running statistics
    updated with momentum, against onnxruntime."""
    node = oh.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                        momentum=0.7, epsilon=1e-3)
    inits = {"s": RNG.standard_normal(5), "b": RNG.standard_normal(5), "m": RNG.standard_normal(5),
             "v": RNG.uniform(0.5, 2, 5)}
    model = make_model([node], [("x", F, [4, 5, 6, 3])], ["y", "rm", "rv"],
                       {k: v.astype(np.float32) for k, v in inits.items()}, opset=15)
    _check(runtime, model, {"x": (RNG.standard_normal((4, 5, 6, 3)) * 3 + 1).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", ["zeros", "border"])
def test_grid_sample_bicubic(runtime: str, align: int, padding: str) -> None:
    """Bicubic GridSample (16 nearest samples weighted by the cubic coefficients) against onnxruntime, with grid
    values past [-1, 1] (taps and samples outside the input)."""
    node = oh.make_node("GridSample", ["x", "g"], ["y"], mode="cubic", align_corners=align, padding_mode=padding)
    model = make_model([node], [("x", F, [2, 3, 7, 9]), ("g", F, [2, 5, 6, 2])], ["y"], opset=20)
    _check(runtime, model, {"x": RNG.standard_normal((2, 3, 7, 9)).astype(np.float32),
                            "g": RNG.uniform(-1.2, 1.2, (2, 5, 6, 2)).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("attrs", [{}, {"strides": [2, 3]}, {"pads": [1, 0, 2, 1], "dilations": [2, 1]},
                                   {"strides": [2, 2], "pads": [1, 1, 1, 1]}])
def test_col2im(runtime: str, attrs: dict[str, Any]) -> None:
    """Col2Im as a grouped one-hot ConvTranspose (overlapping blocks summed, image rows no block reaches left
    zero), against onnxruntime; image_shape / block_shape are initializers, as torch.nn.Fold exports them."""
    image, block = [9, 10], [3, 2]
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    grid = [(image[i] + pads[i] + pads[i + 2] - (block[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in (0, 1)]
    shape = [2, 4 * block[0] * block[1], grid[0] * grid[1]]
    node = oh.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    model = make_model([node], [("x", F, shape)], ["y"], {"image": np.array(image, np.int64),
                                                         "block": np.array(block, np.int64)}, opset=18)
    _check(runtime, model, {"x": RNG.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("group", "ic", "oc", "attrs"), [
    (4, 24, 4, {}), (4, 24, 8, {"strides": [2, 2], "pads": [1, 0, 1, 1]}), (2, 4, 2, {}),
    (4, 8, 4, {"strides": [2, 2], "output_padding": [1, 0]}), (4, 4, 4, {}),
])
@pytest.mark.parametrize("const_weights", [True, False])
def test_grouped_conv_transpose(runtime: str, group: int, ic: int, oc: int, attrs: dict[str, Any],
                                const_weights: bool) -> None:
    """Grouped ConvTranspose that is not depthwise: one Deconvolution per group between a Slice and a Concat
    (official MNN's grouped Deconvolution read garbage: 1e33 off before), constant or run-time weights."""
    values = {"x": RNG.standard_normal((2, ic, 7, 9)), "w": RNG.standard_normal((ic, oc // group, 3, 2)),
              "b": RNG.standard_normal(oc)}
    values = {k: v.astype(np.float32) for k, v in values.items()}
    node = oh.make_node("ConvTranspose", ["x", "w", "b"], ["y"], group=group, **attrs)
    feeds = ["x"] if const_weights else ["x", "w", "b"]
    inits = {k: values[k] for k in ("w", "b")} if const_weights else {}
    model = make_model([node], [(k, F, list(values[k].shape)) for k in feeds], ["y"], inits, 13)
    _check(runtime, model, {k: values[k] for k in feeds})
