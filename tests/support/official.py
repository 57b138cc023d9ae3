"""Helpers around the official MNN wheel, a test-only reference.

Its converter is called through `_tools.mnnconvert([...])`, never through the `mnnconvert` console script (which
pip-installs packages and sends telemetry).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def require_mnn() -> object:
    return pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")


def convert(src: Path, dst: Path, *extra: str, framework: str = "ONNX") -> Path:
    """Convert a model with the official converter, in a child process.

    `_tools.mnnconvert` aborts the whole process on some inputs (a C++ abort, not an exception), so it never runs
    inside the pytest process: a failed conversion becomes a RuntimeError of one test instead of a dead run.
    """
    require_mnn()
    args = ["mnnconvert", "-f", framework, "--modelFile", str(src), "--MNNModel", str(dst), "--bizCode", "MNN",
            *extra]
    code = "import sys, _tools; _tools.mnnconvert(sys.argv[1:])"
    proc = subprocess.run([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0 or not Path(dst).exists():
        raise RuntimeError(f"official converter failed on {src} (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return Path(dst)


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
