"""Helpers around the official MNN wheel, a test-only reference.

Its converter is called through `_tools.mnnconvert([...])`, never through the `mnnconvert` console script (which
pip-installs packages and sends telemetry).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import pytest


def require_mnn() -> object:
    return pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")


def convert(src: Path, dst: Path, *extra: str) -> Path:
    """Convert an ONNX model with the official converter (quietly)."""
    pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")
    import _tools

    args = ["mnnconvert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst), "--bizCode", "MNN", *extra]
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(io.StringIO()):
        old = os.dup(1)
        os.dup2(devnull.fileno(), 1)
        try:
            _tools.mnnconvert(args)
        finally:
            os.dup2(old, 1)
            os.close(old)
    if not dst.exists():
        raise RuntimeError(f"official converter produced nothing for {src}")
    return dst


def run(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a .mnn file in official MNN on CPU; inputs and outputs are NCHW float32 arrays by name."""
    mnn = require_mnn()
    interp = mnn.Interpreter(str(path))
    session = interp.createSession({})
    for name, x in feeds.items():
        tensor = interp.getSessionInput(session, name)
        if list(tensor.getShape()) != list(x.shape):
            interp.resizeTensor(tensor, tuple(x.shape))  # MNN wants a tuple
            interp.resizeSession(session)
            tensor = interp.getSessionInput(session, name)
        host = mnn.Tensor(x.shape, mnn.Halide_Type_Float, np.ascontiguousarray(x, np.float32),
                          mnn.Tensor_DimensionType_Caffe)
        tensor.copyFrom(host)
    interp.runSession(session)
    outputs = {}
    for name, tensor in interp.getSessionOutputAll(session).items():
        shape = list(tensor.getShape())
        host = mnn.Tensor(shape, mnn.Halide_Type_Float, np.zeros(shape, np.float32), mnn.Tensor_DimensionType_Caffe)
        tensor.copyToHostTensor(host)
        outputs[name] = np.array(host.getData(), np.float32).reshape(shape)
    return outputs
