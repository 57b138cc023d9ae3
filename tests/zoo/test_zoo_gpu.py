"""PP-OCRv4 det and rec (converted by mnnpy) on the GPU backends: no op falls back to the CPU (from session.info())
and the outputs match the CPU backend within 1e-4 relative (issues 8 and 9)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.api import convert
from support import runners

import mnnpy as MNN  # noqa: N812 - as MNN scripts do

pytestmark = pytest.mark.zoo
SHAPES = {"ppocr-det": (1, 3, 160, 320), "ppocr-rec": (1, 3, 48, 320)}


def _run(path: Path, backend: str, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
    interp = MNN.Interpreter(str(path))
    session = interp.createSession({"backend": backend, "numThread": 1})
    tensor = interp.getSessionInput(session)
    interp.resizeTensor(tensor, x.shape)
    interp.resizeSession(session)
    interp.getSessionInput(session).copyFrom(MNN.Tensor(x.shape, MNN.Halide_Type_Float, x,
                                                        MNN.Tensor_DimensionType_Caffe))
    interp.runSession(session)
    fallbacks = [f"{c['type']} {c['name']}" for c in session.info()["commands"]
                 if c["backend"] != backend.lower() and c["type"] != "Copy"]
    return np.array(interp.getSessionOutput(session).getNumpyData()), fallbacks


@pytest.mark.parametrize("backend", ["OPENCL", "VULKAN"])
@pytest.mark.parametrize("model", sorted(SHAPES))
def test_ocr_on_gpu_backend(model: str, backend: str, zoo_fetch: Callable[[str], Path], tmp_path: Path) -> None:
    runners.require_backend(backend)
    path = tmp_path / f"{model}.mnn"
    convert(str(zoo_fetch(model)), str(path), "ONNX")
    x = np.random.default_rng(0).random(SHAPES[model]).astype(np.float32)
    want, _ = _run(path, "CPU", x)
    got, fallbacks = _run(path, backend, x)
    assert not fallbacks, f"ops fell back to the CPU: {fallbacks}"
    err = float(np.abs(got - want).max() / np.abs(want).max())
    assert err <= 1e-4, f"max rel diff {err:.3g} vs the CPU backend"
