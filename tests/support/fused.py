"""Helpers for the tests of fused runs (``Scheduler.fused``): a session's callback-free run against its plain run
(with callbacks, which keeps every command's own ``on_execute``) and against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnnpy.interpreter import Interpreter


def fused_and_plain(src: Path, x: np.ndarray, algorithm: str, threads: int = 1) -> tuple[np.ndarray, np.ndarray,
                                                                                         object]:
    """(fused run, plain run with callbacks, session) of ``src``'s .mnn beside it, twice each (the second runs reuse
    what the first built)."""
    interp = Interpreter(str(src.with_suffix(".mnn")))
    session = interp.createSession({"numThread": threads, "convAlgorithm": algorithm})
    interp.getSessionInput(session).copyFrom(x)
    for _ in range(2):
        interp.runSession(session)
        fast = np.array(interp.getSessionOutput(session).getNumpyData(), copy=True)
        interp.runSessionWithCallBack(session, lambda *_: True, lambda *_: True)
        plain = np.array(interp.getSessionOutput(session).getNumpyData(), copy=True)
    return fast, plain, session


def check_against_ort(src: Path, x: np.ndarray, fast: np.ndarray, plain: np.ndarray) -> None:
    """The fused run within 2e-5 (of the output's scale) of onnxruntime on ``src`` (input "x"), and the plain run
    within float32 rounding of the fused one."""
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime (the reference) is not installed")
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    scale = max(float(np.abs(want).max()), 1.0)
    assert np.abs(fast - want).max() <= 2e-5 * scale
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * scale)
