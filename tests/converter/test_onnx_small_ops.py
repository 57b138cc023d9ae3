"""RoiAlign, Det, ReverseSequence and Shrink: converted by mnnpy, run by mnnpy's CPU session and by official MNN,
against onnxruntime, on shapes larger than the ONNX node tests' (batches, several rois, lengths 0 and full)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import ModelError

from .helpers import F, TensorProto, make_model, oh, onnx, rel_diff, run_ort
from .onnx_backend import BACKENDS

RNG = np.random.default_rng(7)
I64 = TensorProto.INT64


def _run(runtime: str, model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    if runtime == "official":
        pytest.importorskip("MNN", reason="official MNN wheel not installed")
    rep = BACKENDS[runtime].prepare(model)
    try:
        return list(rep.run(feeds))
    finally:
        rep.path.unlink(missing_ok=True)


def _check(runtime: str, model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-5) -> None:
    for got, ref in zip(_run(runtime, model, feeds), run_ort(model, feeds), strict=True):
        assert list(np.shape(got)) == list(np.shape(ref))
        assert rel_diff(np.asarray(got, np.float32), ref.astype(np.float32)) <= rtol


def _roi_model(mode: str = "half_pixel") -> Any:
    node = oh.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], output_height=3, output_width=4, sampling_ratio=0,
                        spatial_scale=0.5, coordinate_transformation_mode=mode)
    return make_model([node], [("x", F, [2, 5, 9, 11]), ("rois", F, [6, 4]), ("idx", I64, [6])], ["y"], {}, 16)


def _roi_feeds() -> dict[str, np.ndarray]:
    corners = RNG.uniform(-2, 22, size=(6, 2, 2))  # some rois partly outside the 2x-scaled 9x11 map
    rois = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)  # x1, y1, x2, y2
    return {"x": RNG.standard_normal((2, 5, 9, 11)).astype(np.float32), "rois": rois.astype(np.float32),
            "idx": np.array([0, 1, 1, 0, 1, 0], np.int64)}


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("mode", ["half_pixel", "output_half_pixel"])
def test_roi_align_avg(runtime: str, mode: str) -> None:
    _check(runtime, _roi_model(mode), _roi_feeds(), rtol=1e-4)


def test_roi_align_max_is_refused() -> None:
    node = oh.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], mode="max")
    model = make_model([node], [("x", F, [1, 1, 4, 4]), ("rois", F, [1, 4]), ("idx", I64, [1])], ["y"], {}, 16)
    with pytest.raises(ModelError, match=r"RoiAlign.*mode 'max'"):
        BACKENDS["mnnpy"].prepare(model)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_det_batched(runtime: str) -> None:
    model = make_model([oh.make_node("Det", ["x"], ["y"])], [("x", F, [2, 3, 4, 4])], ["y"], {}, 13)
    _check(runtime, model, {"x": RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)}, rtol=1e-4)


def _reverse_model(batch_axis: int, time_axis: int, shape: list[int]) -> Any:
    node = oh.make_node("ReverseSequence", ["x", "n"], ["y"], batch_axis=batch_axis, time_axis=time_axis)
    return make_model([node], [("x", F, shape), ("n", I64, [shape[batch_axis]])], ["y"], {}, 10)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("batch_axis", "time_axis"), [(0, 1), (1, 0)])
def test_reverse_sequence(runtime: str, batch_axis: int, time_axis: int) -> None:
    shape = [5, 4, 3] if batch_axis == 1 else [4, 5, 3]
    model = _reverse_model(batch_axis, time_axis, shape)
    # a length of 0 (nothing reversed) is valid ONNX; official MNN 3.6.1 fails on it ("ReverseSequence info error")
    lengths = [0, 5, 1, 3] if runtime == "mnnpy" else [2, 5, 1, 3]
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32), "n": np.array(lengths, np.int64)}
    _check(runtime, model, feeds)


def test_reverse_sequence_length_out_of_range() -> None:
    model = _reverse_model(0, 1, [2, 3])
    feeds = {"x": np.zeros((2, 3), np.float32), "n": np.array([1, 4], np.int64)}
    with pytest.raises(ModelError, match=r"ReverseSequence.*length 4 of batch entry 1 is outside \[0, 3\]"):
        _run("mnnpy", model, feeds)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("bias", "lambd"), [(0.0, 0.5), (0.3, 0.4)])
def test_shrink(runtime: str, bias: float, lambd: float) -> None:
    model = make_model([oh.make_node("Shrink", ["x"], ["y"], bias=bias, lambd=lambd)], [("x", F, [3, 40])], ["y"],
                       {}, 13)
    _check(runtime, model, {"x": RNG.uniform(-1, 1, (3, 40)).astype(np.float32)})


POOL_CASES = [  # (op, attrs, input shape, opset)
    ("MaxPool", {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 1], "pads": [1, 0, 2, 1]}, [2, 3, 11, 10],
     12),
    ("MaxPool", {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 2], "pads": [1, 0, 2, 1], "ceil_mode": 1},
     [1, 2, 12, 9], 12),
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
     [1, 2, 9, 8], 12),
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
     [1, 2, 10, 9], 12),
    ("MaxPool", {"kernel_shape": [3], "dilations": [2], "strides": [2], "pads": [2, 1]}, [2, 3, 13], 12),
    ("AveragePool", {"kernel_shape": [3, 2], "dilations": [2, 2], "strides": [2, 1], "pads": [2, 1, 1, 1],
                     "count_include_pad": 0}, [1, 3, 10, 9], 19),
    ("AveragePool", {"kernel_shape": [3, 2], "dilations": [2, 2], "strides": [2, 1], "pads": [2, 1, 1, 1],
                     "count_include_pad": 1}, [1, 3, 10, 9], 19),
    ("AveragePool", {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [3, 3], "pads": [1, 1, 1, 1],
                     "ceil_mode": 1, "count_include_pad": 1}, [1, 2, 11, 13], 19),
]


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("op", "attrs", "shape", "opset"), POOL_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(POOL_CASES)])
def test_dilated_pooling(runtime: str, op: str, attrs: dict[str, Any], shape: list[int], opset: int) -> None:
    model = make_model([oh.make_node(op, ["x"], ["y"], **attrs)], [("x", F, shape)], ["y"], {}, opset)
    reference = model
    if attrs.get("auto_pad", "NOTSET").startswith("SAME"):
        # onnxruntime sizes SAME padding by the undilated kernel (a 9x8 input, stride 2, kernel 3 dilated 2 gives it
        # 4x3, against the spec's ceil(in / stride) = 5x4 that mnnpy and ONNX's shape inference use): the oracle is
        # onnxruntime on the explicit pads the spec implies
        kernel, dilations, strides = attrs["kernel_shape"], attrs["dilations"], attrs["strides"]
        total = [max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
                 for n, k, d, s in zip(shape[2:], kernel, dilations, strides, strict=True)]
        begin = [t // 2 if attrs["auto_pad"] == "SAME_UPPER" else t - t // 2 for t in total]
        explicit = {k: v for k, v in attrs.items() if k != "auto_pad"}
        explicit["pads"] = begin + [t - b for t, b in zip(total, begin, strict=True)]
        reference = make_model([oh.make_node(op, ["x"], ["y"], **explicit)], [("x", F, shape)], ["y"], {}, opset)
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    got, ref = _run(runtime, model, feeds)[0], run_ort(reference, feeds)[0]
    assert list(got.shape) == list(ref.shape)
    assert rel_diff(np.asarray(got, np.float32), ref) <= 1e-5


DFT_CASES = [  # (input shape, attrs, dft_length or None)
    ([2, 12, 3, 1], {"axis": 1}, None),  # real, forward
    ([2, 12, 3, 2], {"axis": 1}, 9),  # complex, cut to 9
    ([2, 3, 7, 2], {"axis": 2, "inverse": 1}, 10),  # complex inverse, zero-padded to 10
    ([3, 11, 1], {"axis": -2, "onesided": 1}, None),  # real, odd length, one-sided
    ([2, 6, 4, 2], {"axis": 1, "inverse": 1, "onesided": 1}, None),  # irfft, length 2 * (6 - 1)
    ([2, 6, 4, 2], {"axis": 1, "inverse": 1, "onesided": 1}, 11),  # irfft, odd length
]


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("shape", "attrs", "length"), DFT_CASES, ids=[str(i) for i in range(len(DFT_CASES))])
def test_dft(runtime: str, shape: list[int], attrs: dict[str, Any], length: int | None) -> None:
    from onnx.reference import ReferenceEvaluator

    inits = {} if length is None else {"n": np.array(length, np.int64)}
    node = oh.make_node("DFT", ["x", "n"] if length is not None else ["x"], ["y"], **attrs)
    model = make_model([node], [("x", F, shape)], ["y"], inits, 17)
    feeds = {"x": RNG.standard_normal(shape).astype(np.float32)}
    ref = ReferenceEvaluator(model).run(None, feeds)[0]  # ONNX's own reference (numpy's FFT)
    got = _run(runtime, model, feeds)[0]
    assert list(got.shape) == list(ref.shape)
    assert np.abs(got - ref).max() <= 1e-4 * max(1.0, np.abs(ref).max())


GRID_3D = [(m, p, a) for m in ("linear", "nearest") for p in ("zeros", "border", "reflection") for a in (0, 1)]
# official MNN 3.6.1 rounds nearest samples and reflects differently (its 2-D node cases of both fail too): it is
# compared on the rest
GRID_3D_RUNS = [("mnnpy", *c) for c in GRID_3D] + \
    [("official", *c) for c in GRID_3D if c[0] == "linear" and c[1] != "reflection"]


@pytest.mark.parametrize(("runtime", "mode", "padding", "align"), GRID_3D_RUNS,
                         ids=["-".join(map(str, c)) for c in GRID_3D_RUNS])
def test_grid_sample_3d(runtime: str, mode: str, padding: str, align: int) -> None:
    node = oh.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    model = make_model([node], [("x", F, [2, 3, 4, 5, 6]), ("g", F, [2, 3, 2, 4, 3])], ["y"], {}, 20)
    grid = RNG.uniform(-1.3, 1.3, (2, 3, 2, 4, 3)).astype(np.float32)  # some samples outside the volume
    _check(runtime, model, {"x": RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32), "g": grid}, rtol=1e-5)


def _resize_model(scale: float, **attrs: Any) -> Any:
    node = oh.make_node("Resize", ["x", "", "s"], ["y"], **attrs)
    return make_model([node], [("x", F, [1, 2, 4, 5])], ["y"], {"s": np.array([1, 1, scale, scale], np.float32)},
                      13)


def test_resize_refuses_what_mnn_would_compute_otherwise() -> None:
    """align_corners at a scale that gives no whole size (onnxruntime and MNN map coordinates one way, the ONNX
    reference another) is refused by name; so are the modes MNN's Interp lacks (round_prefer_ceil: MNN's round sends
    halves down) when their scales come at run time, where no table can be made at convert time."""
    with pytest.raises(ModelError, match="align_corners with scales that do not give whole sizes"):
        BACKENDS["mnnpy"].prepare(_resize_model(0.6, mode="linear", coordinate_transformation_mode="align_corners"))
    node = oh.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest", nearest_mode="round_prefer_ceil")
    runtime_scales = make_model([node], [("x", F, [1, 2, 4, 5]), ("s", F, [4])], ["y"], opset=13)
    with pytest.raises(ModelError, match=r"nearest_mode 'round_prefer_ceil' is not supported by MNN's Interp .*"
                                         r"constant scales"):
        BACKENDS["mnnpy"].prepare(runtime_scales)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_resize_align_corners_whole_sizes(runtime: str) -> None:
    model = _resize_model(2.0, mode="linear", coordinate_transformation_mode="align_corners")
    _check(runtime, model, {"x": RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("direction", [0, 1])
def test_scan_opset8_batched(runtime: str, direction: int) -> None:
    """Scan-8: a batch axis in front of every state and scan input, time on axis 1; two batch entries."""
    steps = [oh.make_node("Add", ["s_in", "x_t"], ["s_out"]), oh.make_node("Mul", ["s_out", "x_t"], ["y_t"])]
    info = {name: oh.make_tensor_value_info(name, F, [3]) for name in ("s_in", "x_t", "s_out", "y_t")}
    body = oh.make_graph(steps, "body", [info["s_in"], info["x_t"]], [info["s_out"], info["y_t"]])
    node = oh.make_node("Scan", ["", "s0", "x"], ["s", "y"], body=body, num_scan_inputs=1, directions=[direction])
    model = make_model([node], [("s0", F, [2, 3]), ("x", F, [2, 4, 3])], ["s", "y"], {}, 8)
    _check(runtime, model, {"s0": RNG.standard_normal((2, 3)).astype(np.float32),
                            "x": RNG.standard_normal((2, 4, 3)).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_group_norm_runtime_scale(runtime: str) -> None:
    node = oh.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-4)
    model = make_model([node], [("x", F, [2, 6, 5, 4]), ("s", F, [6]), ("b", F, [6])], ["y"], {}, 21)
    feeds = {"x": RNG.standard_normal((2, 6, 5, 4)).astype(np.float32),
             "s": RNG.standard_normal(6).astype(np.float32), "b": RNG.standard_normal(6).astype(np.float32)}
    _check(runtime, model, feeds, rtol=1e-4)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("axis", "p"), [(0, 2), (1, 1), (-1, 2)])
def test_lp_normalization_zero_norm(runtime: str, axis: int, p: int) -> None:
    """A slice of zeros normalises to zeros (ONNX, onnxruntime), not 0 / 0."""
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    x[1] = 0.0
    x[:, 2] = 0.0
    x[..., 3] = 0.0
    node = oh.make_node("LpNormalization", ["x"], ["y"], axis=axis, p=p)
    _check(runtime, make_model([node], [("x", F, [3, 4, 5])], ["y"], {}, 13), {"x": x})


def test_sequence_and_optional_graph_inputs_are_refused() -> None:
    seq = oh.make_value_info("s", oh.make_sequence_type_proto(oh.make_tensor_type_proto(F, [3])))
    graph = oh.make_graph([oh.make_node("Identity", ["s"], ["t"])], "g", [seq],
                          [oh.make_value_info("t", oh.make_sequence_type_proto(oh.make_tensor_type_proto(F, [3])))])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    with pytest.raises(ModelError, match="graph input 's' has an ONNX sequence type"):
        BACKENDS["mnnpy"].prepare(model)


def test_training_mode_dropout_is_refused() -> None:
    """A constant true training_mode draws a random mask: refused, not run as the identity (ratio 0 is exact)."""
    node = oh.make_node("Dropout", ["x", "r", "t"], ["y"])
    inits = {"r": np.array(0.5, np.float32), "t": np.array(True)}
    with pytest.raises(ModelError, match="training-mode Dropout"):
        BACKENDS["mnnpy"].prepare(make_model([node], [("x", F, [2, 3])], ["y"], inits, 13))
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    got = _run("mnnpy", make_model([node], [("x", F, [2, 3])], ["y"], {**inits, "r": np.array(0.0, np.float32)}, 13),
               {"x": x})[0]
    np.testing.assert_array_equal(got, x)


def _mlp(path: Path) -> Any:
    """x [4, 300] -> MatMul 300x64 -> Relu -> MatMul 64x10 (+ bias): K = 300 past float32's exact integer sums."""
    rng = np.random.default_rng(3)
    inits = {"w1": rng.normal(0, 0.2, (300, 64)).astype(np.float32),
             "w2": rng.normal(0, 0.2, (64, 10)).astype(np.float32), "b2": rng.normal(0, 0.1, 10).astype(np.float32)}
    nodes = [oh.make_node("MatMul", ["x", "w1"], ["h"]), oh.make_node("Relu", ["h"], ["r"]),
             oh.make_node("MatMul", ["r", "w2"], ["m"]), oh.make_node("Add", ["m", "b2"], ["y"])]
    model = make_model(nodes, [("x", F, [4, 300])], ["y"], inits, 13)
    onnx.save(model, str(path))
    return model


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_dynamic_quantized_mlp(tmp_path: Path, runtime: str) -> None:
    """onnxruntime's quantize_dynamic output (DynamicQuantizeLinear + MatMulInteger + scale Muls) against
    onnxruntime running the same quantized file."""
    pytest.importorskip("onnxruntime", reason="onnxruntime quantizes and is the reference")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _mlp(tmp_path / "f.onnx")
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8)
    model = onnx.load(str(tmp_path / "q.onnx"))
    assert "MatMulInteger" in {n.op_type for n in model.graph.node}
    x = np.random.default_rng(5).normal(0, 1, (4, 300)).astype(np.float32)
    _check(runtime, model, {"x": x}, rtol=1e-5)


def _conv_net(path: Path) -> None:
    rng = np.random.default_rng(4)
    inits = {"w1": rng.normal(0, 0.3, (16, 8, 3, 3)).astype(np.float32),
             "b1": rng.normal(0, 0.1, 16).astype(np.float32),
             "w2": rng.normal(0, 0.3, (8, 16, 1, 1)).astype(np.float32)}
    nodes = [oh.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]), oh.make_node("Relu", ["c"], ["r"]),
             oh.make_node("Conv", ["r", "w2"], ["y"])]
    onnx.save(make_model(nodes, [("x", F, [1, 8, 12, 12])], ["y"], inits, 13), str(path))


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qoperator_conv_net(tmp_path: Path, runtime: str, per_channel: bool) -> None:
    """onnxruntime's quantize_static in its QOperator format (QLinearConv, per tensor or per channel) against
    onnxruntime running the same quantized file: the same uint8 values, so the same dequantized output."""
    pytest.importorskip("onnxruntime", reason="onnxruntime quantizes and is the reference")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(6)
            self.feeds = iter([{"x": rng.normal(0, 1, (1, 8, 12, 12)).astype(np.float32)} for _ in range(4)])

        def get_next(self) -> dict | None:
            return next(self.feeds, None)

    _conv_net(tmp_path / "f.onnx")
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QOperator,
                    per_channel=per_channel)
    model = onnx.load(str(tmp_path / "q.onnx"))
    assert "QLinearConv" in {n.op_type for n in model.graph.node}
    x = np.random.default_rng(8).normal(0, 1, (1, 8, 12, 12)).astype(np.float32)
    _check(runtime, model, {"x": x}, rtol=1e-6)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("equation", "shapes"), [
    ("bld,dhk->blhk", [(2, 3, 4), (4, 5, 6)]),            # two free letters on one side
    ("bqhd,bkhd->bhqk", [(2, 3, 4, 5), (2, 6, 4, 5)]),    # attention scores
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),  # ellipsis (two batch dims)
    ("ij,jk", [(3, 4), (4, 5)]),                          # implicit output
    ("abc,cd->ad", [(2, 3, 4), (4, 5)]),                  # a letter only one operand has, summed first
    ("i,j->ij", [(3,), (4,)]),                            # outer product
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),             # the plain batched matmul form
])
def test_einsum_forms(runtime: str, equation: str, shapes: list[tuple[int, ...]]) -> None:
    node = oh.make_node("Einsum", ["a", "b"], ["y"], equation=equation)
    feeds = {n: RNG.standard_normal(s).astype(np.float32) for n, s in zip("ab", shapes, strict=True)}
    model = make_model([node], [(n, F, list(s)) for n, s in zip("ab", shapes, strict=True)], ["y"], {}, 13)
    _check(runtime, model, feeds, rtol=1e-5)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize("pads", [[0, 0, 1, 2, 0, 0, 2, 1], [0, 1, 0, 3, 0, 2, 0, 3], [0, 0, 0, 0, 0, 0, 0, 0]])
def test_wrap_pad_constant_pads(runtime: str, pads: list[int]) -> None:
    """Pad mode 'wrap' (circular padding) with constant pads, up to the dim size, against onnxruntime."""
    node = oh.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    model = make_model([node], [("x", F, [1, 2, 3, 4])], ["y"], {"pads": np.array(pads, np.int64)}, 19)
    _check(runtime, model, {"x": RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("batch_dims", "data", "indices"), [
    (1, (3, 4, 5), (3, 2, 1)),
    (1, (3, 4, 5, 2), (3, 2, 2)),
    (2, (2, 3, 4, 5), (2, 3, 6, 1)),
])
def test_gathernd_batch_dims(runtime: str, batch_dims: int, data: tuple[int, ...], indices: tuple[int, ...]) -> None:
    """GatherND with batch_dims, run-time indices, against onnxruntime."""
    node = oh.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    model = make_model([node], [("x", F, list(data)), ("i", I64, list(indices))], ["y"], {}, 13)
    q = indices[-1]
    high = np.array(data[batch_dims:batch_dims + q])
    idx = (RNG.integers(0, 1 << 20, indices) % np.broadcast_to(high, indices)).astype(np.int64)
    _check(runtime, model, {"x": RNG.standard_normal(data).astype(np.float32), "i": idx})


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
@pytest.mark.parametrize(("op", "auto_pad"), [("AveragePool", "SAME_UPPER"), ("AveragePool", "SAME_LOWER"),
                                               ("LpPool", "SAME_UPPER"), ("LpPool", "SAME_LOWER")])
def test_same_pooling_counting_padding(runtime: str, op: str, auto_pad: str) -> None:
    """SAME pooling whose average counts the padding (LpPool always does): explicit pads, as official MNN's SAME
    mode leaves the padding out of the count; against onnxruntime."""
    extra = {"count_include_pad": 1} if op == "AveragePool" else {"p": 2}
    node = oh.make_node(op, ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1], auto_pad=auto_pad, **extra)
    model = make_model([node], [("x", F, [1, 3, 7, 6])], ["y"], {}, 18)
    _check(runtime, model, {"x": RNG.standard_normal((1, 3, 7, 6)).astype(np.float32)})
