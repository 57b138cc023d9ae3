"""Real zoo models (optional): PP-OCRv4 det/rec and the PP-OCR v2 classifier from the `rapidocr-onnxruntime` wheel.

Set MNNPY_ZOO_DIR to a folder holding the .onnx files (e.g. `pip download --no-deps rapidocr-onnxruntime==1.4.4`
and unzip it); the test skips otherwise. Converted with the official converter, run on mnnpy's CPU backend,
compared with onnxruntime.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

MODELS = {
    "ch_PP-OCRv4_det_infer.onnx": (1, 3, 96, 128),
    "ch_PP-OCRv4_rec_infer.onnx": (1, 3, 48, 160),
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": (1, 3, 48, 192),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_pp_ocr(e2e: Any, name: str) -> None:
    root = os.environ.get("MNNPY_ZOO_DIR")
    found = list(Path(root).rglob(name)) if root else []
    if not found:
        pytest.skip(f"{name} not found (set MNNPY_ZOO_DIR)")
    import onnx

    x = np.random.default_rng(15).random(MODELS[name], np.float32)
    e2e.check(onnx.load(str(found[0])), {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["silero_vad.onnx", "silero_vad_16k_op15.onnx", "silero_vad_op18_ifless.onnx"])
def test_silero_vad_streaming(e2e: Any, name: str) -> None:
    """silero-vad (If branches, nested If, LSTM op, Conv1D in subgraphs), state fed back over three chunks."""
    root = os.environ.get("MNNPY_ZOO_DIR")
    found = list(Path(root).rglob(name)) if root else []
    if not found:
        pytest.skip(f"{name} not found (set MNNPY_ZOO_DIR; silero-vad==6.2.3 wheel)")
    import onnx

    import mnnpy as MNN  # noqa: N812 - as official scripts do

    model = onnx.load(str(found[0]))
    interp = MNN.Interpreter(str(e2e.convert(model)))
    session = interp.createSession({"numThread": 1})
    rng = np.random.default_rng(16)
    state = np.zeros((2, 1, 128), np.float32)
    ref_state = state
    for _ in range(3):
        chunk = (rng.standard_normal((1, 512)) * 0.3).astype(np.float32)
        feeds = {"input": chunk, "state": state, "sr": np.array(16000, np.int64)}
        for k, v in feeds.items():
            t = interp.getSessionInput(session, k)
            if tuple(t.getShape()) != v.shape:
                interp.resizeTensor(t, v.shape)
                interp.resizeSession(session)
        for k, v in feeds.items():
            interp.getSessionInput(session, k).copyFrom(v)
        interp.runSession(session)
        want = e2e.ort(model, {**feeds, "state": ref_state})
        got_prob = interp.getSessionOutput(session, "output").getNumpyData()
        state = interp.getSessionOutput(session, "stateN").getNumpyData().reshape(2, 1, 128)
        np.testing.assert_allclose(got_prob.reshape(want["output"].shape), want["output"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state, want["stateN"].reshape(state.shape), rtol=1e-4, atol=1e-5)
        ref_state = want["stateN"].reshape(state.shape)
