"""`--weightQuantBits N` (converter/quantize.py): IDSTQuan round trip through the CPU decoder, and both runtimes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

import mnnpy
from mnnpy.core.idst import dequantize_idst

from .conftest import logits

CONVS = (fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise)
# bits -> largest relative output error allowed (max |diff| / max |fp32|). On this random-weight CNN the official
# converter's own --weightQuantBits output measures 0.012 / 0.21 / 1.7, and ours is the same numerically.
TOLERANCE = {8: 0.015, 4: 0.25, 2: 2.0}


def _ours(path: Path, xs: np.ndarray) -> np.ndarray:
    return logits(mnnpy.Interpreter(str(path)), xs)


@pytest.fixture(scope="module")
def float_model(cnn: dict[str, Path]) -> Path:
    from mnnpy.converter import convert

    dst = cnn["root"] / "ours_fp32.mnn"
    convert(cnn["onnx"], dst)
    return dst


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_weight_quant_bits(cnn: dict[str, Path], float_model: Path, held_out: np.ndarray, bits: int) -> None:
    from mnnpy.converter import convert
    from support.official import convert as official_convert
    from support.official import run as official

    dst = cnn["root"] / f"w{bits}.mnn"
    convert(cnn["onnx"], dst, weight_quant_bits=bits)
    ref_net, net = load_net(float_model), load_net(dst)
    ref_ops = {str(op.name): op for op in ref_net.oplists if op.type in CONVS}
    checked = 0
    for op in net.oplists:
        if op.type not in CONVS:
            continue
        q = op.main.quanParameter
        oc = op.main.common.outputCount
        assert op.main.weight is None and q.type == 1 and q.aMaxOrBits == bits and q.aMin == -(1 << (bits - 1))
        w_ref = np.asarray(ref_ops[str(op.name)].main.weight, np.float32).reshape(oc, -1)
        w = dequantize_idst(q, oc, w_ref.size).reshape(oc, -1)
        step = np.asarray(q.alpha, np.float32).reshape(oc, 2)[:, 1]
        assert np.all(np.abs(w - w_ref) <= step[:, None] / 2 + 1e-6)
        checked += 1
    assert checked == 7  # six convolutions and the Gemm as a 1x1 convolution
    if bits == 8:
        assert dst.stat().st_size <= 0.3 * float_model.stat().st_size
    xs = held_out[:4]
    ref = _ours(float_model, xs)
    scale = np.abs(ref).max()
    ours = _ours(dst, xs)
    theirs = np.array([official(dst, {"x": x[None]})["y"].ravel() for x in xs])
    assert np.abs(ours - ref).max() / scale <= TOLERANCE[bits]
    assert np.abs(theirs - ref).max() / scale <= TOLERANCE[bits]
    np.testing.assert_allclose(ours, theirs, atol=1e-4 * scale, rtol=1e-4)
    reference = official_convert(cnn["onnx"], cnn["root"] / f"official_w{bits}.mnn", "--weightQuantBits", str(bits))
    theirs_own = np.array([official(reference, {"x": x[None]})["y"].ravel() for x in xs])
    np.testing.assert_allclose(theirs, theirs_own, atol=1e-5 * scale, rtol=1e-5)  # same codes as MNNConvert
