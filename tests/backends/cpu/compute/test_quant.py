"""Weight-only quantised convolution weights (IDSTQuan): hand-built buffers and the official converter's output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
from mnnpy.schema import mnn_generated as fb
from support.models import make_conv

from mnnpy.core.idst import dequantize_idst


def quan(codes: np.ndarray, codebook: list[int], bits: int, alpha: list[float], read_type: int = 0,
         a_min: int = 0) -> fb.IDSTQuanT:
    """Encode codebook indices MSB-first the way the converter does."""
    idx = np.searchsorted(np.array(sorted(codebook)), codes)
    bitstream = ((idx[:, None] >> np.arange(bits - 1, -1, -1)) & 1).astype(np.uint8).ravel()
    header = [2, *np.array([codes.size // 2, 2], "<u2").view(np.uint8), len(codebook) % 256]
    buf = np.concatenate([np.array(header, np.uint8), np.array(codebook, np.int8).view(np.uint8),
                          np.packbits(bitstream)])
    q = fb.IDSTQuanT()
    q.buffer, q.alpha, q.type, q.readType, q.aMin, q.quantScale = buf.view(np.int8), alpha, 1, read_type, a_min, 1.0
    return q


@pytest.mark.parametrize("bits", [8, 4, 3])
def test_symmetric_linear_codebook(bits: int) -> None:
    half = 1 << (bits - 1)
    codebook = list(range(-half, half))
    codes = np.array([-half, half - 1, 0, 1, -1, 2, half - 1, -half], np.int64)
    w = dequantize_idst(quan(codes, codebook, bits, [0.5, 2.0]), 2, 8)
    np.testing.assert_array_equal(w, (codes.reshape(2, 4) * np.array([[0.5], [2.0]])).ravel())


def test_asymmetric_sparse_codebook() -> None:
    codebook = [-7, -1, 3, 9, 20]  # 5 samples -> 3-bit indices
    codes = np.array([3, -7, 20, 9, -1, 3], np.int64)
    alpha = [0.1, 0.5, -1.0, 0.25]  # (min, scale) per row
    w = dequantize_idst(quan(codes, codebook, 3, alpha, read_type=2, a_min=-128), 2, 6)
    expected = (codes.reshape(2, 3) + 128) * np.array([[0.5], [0.25]]) + np.array([[0.1], [-1.0]])
    np.testing.assert_allclose(w, expected.ravel(), rtol=1e-6)


def test_fp16() -> None:
    values = np.array([1.5, -2.25, 65504.0, 1e-3], np.float16)
    q = fb.IDSTQuanT()
    q.buffer, q.type = values.view(np.int8), 3
    np.testing.assert_array_equal(dequantize_idst(q, 1, 4), values.astype(np.float32))


def test_official_converter_weight_quant(tmp_path: Path) -> None:
    pytest.importorskip("MNN")
    onnx = pytest.importorskip("onnx")
    from mnnpy.schema.io import load_net
    from onnx import TensorProto, helper, numpy_helper

    from tests.support.official import convert

    rng = np.random.default_rng(0)
    w = rng.standard_normal((12, 5, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 6, 6])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    for bits, step in ((8, 1 / 127), (4, 1 / 7), (6, 1 / 31)):
        dst = convert(tmp_path / "m.onnx", tmp_path / f"q{bits}.mnn", "--weightQuantBits", str(bits))
        op = next(op for op in load_net(dst).oplists if op.type == fb.OpType.Convolution)
        assert op.main.weight is None or len(op.main.weight) == 0
        got = dequantize_idst(op.main.quanParameter, 12, w.size).reshape(w.shape)
        channel_range = np.abs(w).reshape(12, -1).max(1)
        assert (np.abs(got - w).reshape(12, -1).max(1) <= channel_range * step * 1.01).all()
        kernel = make_conv2d_kernel(op.main, fb.OpType.Convolution, (1, 5, 6, 6))
        assert kernel.out_shape == (1, 12, 6, 6)


def test_quantised_conv_kernel_from_table() -> None:
    conv = make_conv(2, 2, (1, 1))
    conv.weight = None
    conv.quanParameter = quan(np.array([1, -2, 3, 0]), list(range(-128, 128)), 8, [1.0, 0.5])
    kernel = make_conv2d_kernel(conv, fb.OpType.Convolution, (1, 2, 1, 1))
    assert kernel.plan.algorithm in ("gemm1x1", "strassen")
