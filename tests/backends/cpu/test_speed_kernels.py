"""Kernels rewritten for speed keep their results: in-place GELU (erf) against float64 math.erf, through a session
(packed and plain layouts); phase-split separable pooling against onnxruntime on awkward strides, pads and ceil mode."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.backends.cpu.ops._common import gelu_erf
from onnx import TensorProto as T
from onnx import helper as h

from mnnpy.core.session import Session

sys.path.insert(0, str(Path(__file__).parents[2] / "core"))
from netbuild import NetBuilder

GELU = 33


def _gelu64(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.float64)
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


def test_gelu_erf_matches_float64() -> None:
    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, 1e-30, -1e-30, 40.0, -40.0]]).astype(np.float32)
    out, a, t = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    gelu_erf(x, out, a, t)
    want = _gelu64(x)
    assert np.all(np.isfinite(out))
    # the tanh-rational fit (|error| < 6e-7, tools/fit_gelu.py) plus float32 rounding of values up to 12
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)
    assert out[-2] == 40.0 and out[-1] == 0.0


@pytest.mark.parametrize("shape", [(1, 13, 5, 7), (2, 128, 64)])
def test_gelu_in_session(shape: tuple[int, ...], cpu_impl: str) -> None:
    nb = NetBuilder()
    nb.input("x", shape)
    nb.unary("x", "h", 0)  # ABS then negate: GELU's input is a computed (packed or plain) tensor
    nb.unary("h", "n", 1)
    nb.unary("n", "y", GELU)
    nb.outputs("y")
    s = Session(nb.net)
    x = (np.random.default_rng(2).standard_normal(shape) * 3).astype(np.float32)
    s.write(s.input_index("x"), x)
    s.run()
    kinds = {c["algorithm"] for c in s.info()["commands"] if c["type"] == "UnaryOp"}
    assert ("gelu-erf-jit" if cpu_impl == "jit" else "gelu-erf") in kinds, kinds
    np.testing.assert_allclose(s.read(s.output_index("y")), _gelu64(-np.abs(x)), rtol=2e-6, atol=2e-6)


POOLS = [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), (1, 8, 17, 16)),
    ("MaxPool", dict(kernel_shape=[2, 3], strides=[3, 2], pads=[0, 2, 1, 0], ceil_mode=1), (2, 5, 13, 11)),
    ("MaxPool", dict(kernel_shape=[5, 4], strides=[1, 3]), (1, 6, 9, 14)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 3], pads=[1, 1, 1, 1], count_include_pad=1), (1, 7, 10, 9)),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), (1, 4, 7, 7)),
]


@pytest.mark.parametrize(("op", "attrs", "shape"), POOLS)
def test_phase_split_pooling(e2e: Any, op: str, attrs: dict, shape: tuple[int, ...]) -> None:
    node = h.make_node(op, ["x"], ["y"], **attrs)
    graph = h.make_graph([node], "p", [h.make_tensor_value_info("x", T.FLOAT, list(shape))],
                         [h.make_tensor_value_info("y", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    e2e.check(model, {"x": x}, rtol=1e-5, atol=1e-6)


def test_matmul_reshapes_are_flat_copies(tmp_path: Path) -> None:
    """[M, K] <-> NC4HW4 [M, K, 1, 1] around MatMuls converted to 1x1 convolutions: same bytes, so one flat copy."""
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from mnnpy.converter import convert
    from onnx import numpy_helper as nh

    from mnnpy.interpreter import Interpreter

    rng = np.random.default_rng(5)
    inits = [nh.from_array(rng.standard_normal((16, 12)).astype(np.float32), "w1"),
             nh.from_array(rng.standard_normal((12, 20)).astype(np.float32), "w2")]
    nodes = [h.make_node("MatMul", ["x", "w1"], ["a"]), h.make_node("Relu", ["a"], ["r"]),
             h.make_node("MatMul", ["r", "w2"], ["b"]), h.make_node("Reshape", ["b", "s"], ["y"])]
    inits.append(nh.from_array(np.array([1, 8, 4, 5], np.int64), "s"))
    graph = h.make_graph(nodes, "m", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 16])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    convert(tmp_path / "m.onnx", tmp_path / "m.mnn")
    x = rng.standard_normal((1, 8, 16)).astype(np.float32)
    interp = Interpreter(str(tmp_path / "m.mnn"))
    session = interp.createSession({"numThread": 1})
    interp.getSessionInput(session).copyFrom(x)
    interp.runSession(session)
    got = interp.getSessionOutput(session).getNumpyData()
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
    rasters = [c for c in session.info()["commands"] if c["type"] == "Raster"]
    packed = [c for c in rasters if any("NC4HW4" in o for o in c["outputs"])]
    assert packed and all(c["algorithm"] in ("raster-copy", "alias") for c in packed), rasters


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
def test_relu_helper_matches_maximum(dtype: type) -> None:
    from mnnpy.backends.cpu.compute.common import relu

    values = np.random.default_rng(6).standard_normal(1000) * 50
    if np.dtype(dtype).kind == "f":
        values = np.concatenate([values, [np.nan, np.inf, -np.inf, -0.0, 0.0]])
    x = values.astype(dtype)
    out = np.full_like(x, 7)
    relu(x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))  # NaN == NaN here; -0.0 == 0.0
    relu(x, x)  # in place
    np.testing.assert_array_equal(x, out)


@pytest.mark.parametrize("trans_b", [False, True])
def test_matmul_lanes_match_float64(tmp_path: Path, trans_b: bool) -> None:
    """numThread 2: a large MatMul is split by rows over two lanes (BLAS at 1 thread); results as float64's."""
    import onnx
    from mnnpy.converter import convert

    from mnnpy.interpreter import Interpreter

    b_shape = [2, 256, 384] if trans_b else [2, 384, 256]
    nodes = [h.make_node("Transpose", ["b"], ["bt"], perm=[0, 2, 1])] if trans_b else []
    nodes.append(h.make_node("MatMul", ["a", "bt" if trans_b else "b"], ["y"]))
    graph = h.make_graph(nodes, "m", [h.make_tensor_value_info("a", T.FLOAT, [2, 300, 384]),
                                      h.make_tensor_value_info("b", T.FLOAT, b_shape)],
                         [h.make_tensor_value_info("y", T.FLOAT, None)])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    convert(tmp_path / "m.onnx", tmp_path / "m.mnn")
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 300, 384)).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    want = a.astype(np.float64) @ (np.swapaxes(b, 1, 2) if trans_b else b).astype(np.float64)
    got = {}
    for threads in (1, 2):
        interp = Interpreter(str(tmp_path / "m.mnn"))
        session = interp.createSession({"numThread": threads})
        interp.getSessionInput(session, "a").copyFrom(a)
        interp.getSessionInput(session, "b").copyFrom(b)
        interp.runSession(session)
        got[threads] = interp.getSessionOutput(session).getNumpyData().copy()
        algos = [c["algorithm"] for c in session.info()["commands"] if c["type"] in ("MatMul", "BatchMatMul")]
        assert algos and all(("lanes" in x) == (threads == 2) for x in algos), algos
        np.testing.assert_allclose(got[threads], want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(("ic", "oc", "hw", "unit", "group"), [(256, 256, 7, 2, 1), (192, 160, 13, 4, 1),
                                                               (192, 192, 9, 6, 1), (256, 256, 11, 4, 2)])
def test_winograd_position_lanes(monkeypatch: pytest.MonkeyPatch, ic: int, oc: int, hw: int, unit: int,
                                 group: int) -> None:
    """Weight-heavy single block, 2 lanes: the alpha² GEMMs split over the lanes (grouped), or, ungrouped, bands of
    output channels (each lane: whole input transform, its band's GEMMs, output transform and stores; 160 channels =
    40 blocks of 4: bands of 20). (Weights of any size split here; by default only those over
    WINOGRAD_SPLIT_WEIGHT_BYTES transformed.)"""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    from mnnpy.core import strategy

    monkeypatch.setattr(strategy, "WINOGRAD_SPLIT_WEIGHT_BYTES", 0)

    conv = make_conv(ic, oc, (3, 3), pads=(1, 1, 1, 1), group=group, relu=True, seed=11)
    x = np.random.default_rng(12).standard_normal((1, ic, hw, hw)).astype(np.float32)
    got, kernel = run_kernel(conv, 12, x, force=f"winograd:{unit}", threads=2)
    if group == 1:
        assert kernel.positions is None and kernel.by_channels and len(kernel.lanes) == 2
        assert [b.oc4 for b in kernel.lanes[1]] == [(0, oc // 8), (oc // 8, oc // 4)]
    else:
        assert kernel.positions is not None and len(kernel.positions) == 2 and not kernel.by_channels
    assert kernel.memory_bytes == kernel.plan.memory_bytes  # the strategy's estimate follows the split
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, x.shape)))


def test_winograd_channel_bands_on_one_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """Channel bands run inline one after the other (here the lanes are driven by someone else; each lane's task
    runs its own band, lane i band i): the input transformed once in the first phase serves both, the same result."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute import blas
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    from mnnpy.core import strategy

    monkeypatch.setattr(strategy, "WINOGRAD_SPLIT_WEIGHT_BYTES", 0)

    conv = make_conv(192, 160, (3, 3), pads=(1, 1, 1, 1), relu=True, seed=5)
    x = np.random.default_rng(6).standard_normal((1, 192, 13, 13)).astype(np.float32)
    assert blas._LANES_BUSY.acquire(blocking=False)
    try:
        got, kernel = run_kernel(conv, 12, x, force="winograd:4", threads=2)
    finally:
        blas._LANES_BUSY.release()
    assert kernel.by_channels
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, x.shape)))


@pytest.mark.parametrize("shape", [(1000, 96), (3, 7, 5, 16), (37, 512), (5, 12)])
def test_add_row_bias_matches_broadcast(shape: tuple[int, ...]) -> None:
    from mnnpy.backends.cpu.compute.common import add_row_bias

    rng = np.random.default_rng(13)
    bias = rng.standard_normal(shape[-1]).astype(np.float32)
    tile = np.tile(bias, (16, 1))
    y = rng.standard_normal(shape).astype(np.float32)
    want = y + bias
    add_row_bias(y, tile)
    np.testing.assert_array_equal(y, want)  # the same float additions, grouped differently
    strided = rng.standard_normal((*shape[:-1], 2 * shape[-1])).astype(np.float32)[..., ::2]
    want = strided + bias
    add_row_bias(strided, tile)
    np.testing.assert_array_equal(strided, want)


@pytest.mark.parametrize("kind", ["winograd", "im2col"])
def test_lanes_claim_blocks(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Lanes claim blocks one by one: a lane that starts late (its core busy elsewhere) finds the work done."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute import blas, im2col, winograd_conv
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 1)
    monkeypatch.setattr(im2col, "TILE_BYTES", 1)
    module = winograd_conv if kind == "winograd" else im2col
    monkeypatch.setattr(module, "run_lanes", lambda tasks, threads, *shared: [task() for task in tasks])  # lane 0 first
    monkeypatch.setattr(module, "run_phases", lambda phases, threads, *shared: [task() for p in phases for task in p])
    conv = make_conv(16, 24, (3, 3), pads=(1, 1, 1, 1), relu=True, stride=(1, 1) if kind == "winograd" else (2, 2))
    x = np.random.default_rng(14).standard_normal((1, 16, 12, 10)).astype(np.float32)
    seen: list[int] = []
    if kind == "winograd":
        original = winograd_conv.WinogradKernel._transform_in
        monkeypatch.setattr(winograd_conv.WinogradKernel, "_transform_in",
                            lambda self, b: (seen.append(id(b)), original(self, b))[1])
    got, kernel = run_kernel(conv, 12, x, force="winograd:2" if kind == "winograd" else "im2col", threads=2)
    assert len(kernel.lanes) == 2 and len(kernel.lanes[0]) > 2
    if kind == "winograd":
        assert sorted(seen) == sorted(id(b) for b in kernel.lanes[0])  # lane 0 did every block, lane 1 none
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, x.shape)))


@pytest.mark.parametrize(("k", "stride", "dilation", "pads", "x_shape", "threads"),
                         [((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 24, 15, 16), 1),
                          ((3, 3), (2, 2), (1, 1), (0, 1, 0, 1), (2, 10, 14, 17), 2),
                          ((5, 3), (1, 3), (2, 2), (2, 1, 2, 0), (1, 7, 11, 20), 1),
                          ((3, 4), (3, 2), (1, 3), (1, 2, 0, 3), (1, 13, 16, 13), 2)])
def test_depthwise_column_phases(monkeypatch: pytest.MonkeyPatch, k: tuple[int, int], stride: tuple[int, int],
                                 dilation: tuple[int, int], pads: tuple[int, ...], x_shape: tuple[int, ...],
                                 threads: int) -> None:
    """Depthwise with stride-x > 1 on NC4HW4 column phases (used from PHASE_MIN_OW output columns; forced here on
    small shapes): strides, dilations, uneven pads, channel tails, batch and 2 lanes, against the float64 direct
    convolution."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute import blas, depthwise
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    monkeypatch.setattr(depthwise, "PHASE_MIN_OW", 1)
    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    c = x_shape[1]
    conv = make_conv(c, c, k, stride=stride, dilation=dilation, pads=pads, group=c, relu6=threads == 1, seed=17)
    x = np.random.default_rng(18).standard_normal(x_shape).astype(np.float32)
    got, kernel = run_kernel(conv, 13, x, threads=threads)
    assert kernel.plan.algorithm == "depthwise" and kernel.nc4 and kernel.xp.shape[0] == stride[1]
    assert len(kernel.bands) == threads
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 13, x.shape)))


@pytest.mark.parametrize("shape", [(1, 3, 224, 224), (2, 13, 5, 6), (2, 1, 7), (3, 8, 2, 2), (4, 6),
                                   (1, 70, 180, 180), (2, 36, 128, 250)])
def test_pack_into_lanes(shape: tuple[int, ...]) -> None:
    """The Raster NCHW -> NC4HW4 pack copies lane by lane (the channel tail too) and zeroes the padded lanes of a
    reused buffer; tensors above 8 MB (the last two) go in groups of channel blocks; against zero-pad + reshape +
    transpose in numpy."""
    from mnnpy.backends.cpu.layout import pack_into

    x = np.random.default_rng(19).standard_normal(shape).astype(np.float32)
    n, c, *spatial = shape
    c4 = -(-c // 4)
    padded = np.zeros((n, c4 * 4, *spatial), dtype=np.float32)
    padded[:, :c] = x
    want = np.moveaxis(padded.reshape(n, c4, 4, *spatial), 2, -1)
    out = np.full((n, c4, *spatial, 4), np.nan, dtype=np.float32)
    pack_into(x, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("spatial", [(7, 7), (1, 1), (5, 3), (2, 3, 5)])
@pytest.mark.parametrize("is_max", [True, False])
def test_global_pool(spatial: tuple[int, ...], is_max: bool) -> None:
    """The batched-matmul mean and the halving max tree equal numpy's reductions (odd, even, single-element
    extents), and an inf / NaN stays in its own channel (the mean's products are per 4-channel block)."""
    from mnnpy.backends.cpu.compute.global_pool import GlobalPool

    x = np.random.default_rng(len(spatial)).standard_normal((2, 3, *spatial, 4)).astype(np.float32)
    x[1, 2, ..., 1].flat[0] = np.inf
    x[0, 1, ..., 3].flat[-1] = np.nan
    axes = tuple(range(2, 2 + len(spatial)))
    y = np.full((2, 3, *(1,) * len(spatial), 4), np.nan, np.float32)
    GlobalPool(x.shape, x.dtype, is_max).run(x, y)
    want = x.max(axis=axes, keepdims=True) if is_max else x.mean(axis=axes, dtype=np.float64, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    assert np.isnan(y[0, 1, ..., 3]).all() and (y[1, 2, ..., 1] == np.inf).all()
    assert np.isfinite(np.delete(y.reshape(6, 4), [7, 21]).astype(np.float64)).all()


@pytest.mark.parametrize(("unit", "k"), [(2, 3), (4, 3), (6, 3), (2, 5), (4, 5), (2, 7)])
@pytest.mark.parametrize("threads", [1, 2])
def test_winograd_compiled_transforms(unit: int, k: int, threads: int) -> None:
    """Every (u, k) with compiled transforms (``llvm_winograd``): 32 channels (whole vectors), tiles overhanging
    the edge, batch 2, bias and ReLU, one and two lanes, with and without a fused residual Add (the output transform
    then stores into the output itself); against float64 direct convolution. 20 channels (not whole vectors) keep
    numpy's transforms and copies."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute import packed_gemm
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    if not packed_gemm.available():
        pytest.skip(f"no compiled kernels here: {packed_gemm.describe()}")
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4

    for channels, compiled in ((32, True), (20, False)):
        conv = make_conv(channels, channels, (k, k), pads=(k // 2,) * 4, relu=True, seed=unit * k)
        conv.bias = (np.asarray(conv.bias) * 5).astype(np.float32)
        x = np.random.default_rng(k).standard_normal((2, channels, 11, 13)).astype(np.float32)
        got, kernel = run_kernel(conv, 12, x, force=f"winograd:{unit}", threads=threads)
        assert kernel.compiled == compiled
        want = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, x.shape))
        assert_close(got, want, rtol=2e-5)
        # a fused residual Add: the compiled transform stores output + residual (then ReLU) itself
        residual = np.random.default_rng(1).standard_normal(want.shape).astype(np.float32)
        out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
        kernel.run(pack_nc4hw4(x), out, pack_nc4hw4(residual), True)
        assert_close(unpack_nc4hw4(out, channels), np.maximum(want + residual, 0), rtol=2e-5)
        stores = list(kernel._stores.values())
        assert all((len(entry) == 1) == compiled for key in stores for lane in key for block in lane
                   for entry in block)


@pytest.mark.parametrize("kind", ["winograd", "im2col"])
def test_one_item_per_lane_runs_on_its_own_lane(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """With exactly one block (tile) per lane, lane i runs item i whatever the order the lanes start in (claims let
    whichever lane started first take the first): consecutive layers split alike then find their rows in their own
    core's cache."""
    sys.path.insert(0, str(Path(__file__).parent))
    from compute.helpers import assert_close, reference_conv, run_kernel
    from mnnpy.backends.cpu.compute import blas, im2col, winograd_conv
    from mnnpy.backends.cpu.compute.conv import conv2d_params
    from support.models import make_conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    module = winograd_conv if kind == "winograd" else im2col
    ran: list[tuple[int, int]] = []

    def last_lane_first(phases: list, threads: int, *shared: bool) -> None:
        for phase in phases:
            for lane, task in reversed(list(enumerate(phase))):
                ran.append((lane, task.args[2]))  # (lane, the item it was given)
                task()

    monkeypatch.setattr(module, "run_phases", last_lane_first)
    conv = make_conv(16, 24, (3, 3), pads=(1, 1, 1, 1), relu=True, stride=(1, 1) if kind == "winograd" else (2, 2))
    x = np.random.default_rng(14).standard_normal((1, 16, 24, 20)).astype(np.float32)
    got, kernel = run_kernel(conv, 12, x, force="winograd:2" if kind == "winograd" else "im2col", threads=2)
    assert len(kernel.lanes) == 2 and all(len(lane) == 2 for lane in kernel.lanes)
    assert sorted(ran) == [(0, 0), (1, 1)]
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, x.shape)))
