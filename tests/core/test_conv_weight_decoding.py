"""IDSTQuan weight decoding of transposed convolutions (mnnpy.core.conv_geometry / idst), against official MNN.

MNN splits a convolution's flat stored weights into `outputCount` rows of scales for every conv type; for a
Deconvolution the stored layout is (ic, oc/g, kh, kw), so the rows are not the leading axis. mnnpy once decoded
them per input channel and refused MNNConvert's own `--weightQuantBits` deconvolutions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import official, runners

onnx = pytest.importorskip("onnx", reason="onnx not installed")


def _conv_transpose_model(path: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 5, 3, 3)).astype(np.float32)  # (C_in, C_out / group, kh, kw)
    bias = rng.standard_normal(5).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "W", "B"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])
    graph = helper.make_graph([node], "deconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 5, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _run_mnnpy(path: Path, x: np.ndarray) -> np.ndarray:
    (out,) = runners.run(path, {"x": x}).values()
    return out


@pytest.mark.parametrize("bits", [4, 8])
def test_weight_quantized_deconvolution_matches_official(tmp_path: Path, bits: int) -> None:
    official.require_mnn()
    src = tmp_path / "deconv.onnx"
    _conv_transpose_model(src)
    theirs = official.convert(src, tmp_path / "official.mnn", "--weightQuantBits", str(bits))
    x = np.random.default_rng(1).standard_normal((1, 6, 5, 4)).astype(np.float32)
    expected = next(iter(official.run(theirs, {"x": x}).values()))
    got = _run_mnnpy(theirs, x).reshape(expected.shape)
    # same decoded weights on both sides: fp32 agreement, not the quantisation error (which is ~1e-2 at 8 bits)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))
