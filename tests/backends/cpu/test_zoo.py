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
