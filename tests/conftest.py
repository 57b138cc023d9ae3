"""Shared fixtures: build ONNX graphs in code, convert them with the official converter, run them in mnnpy and
onnxruntime. Helpers live in `support/` (pythonpath); this file only adds the `e2e` fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest


class E2E:
    """Convert (official MNN converter), run in mnnpy and in onnxruntime, compare."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.count = 0

    def convert(self, model: Any) -> Path:
        """Save an onnx ModelProto and convert it to .mnn with the official converter."""
        import onnx
        from support.official import convert

        self.count += 1
        src = self.tmp / f"m{self.count}.onnx"
        onnx.save(model, str(src))
        return convert(src, self.tmp / f"m{self.count}.mnn")

    def mnnpy(self, path: Path, feeds: dict[str, np.ndarray], config: dict | None = None) -> dict[str, np.ndarray]:
        """Run a .mnn in mnnpy through the MNN-compatible API (arrays in each tensor's own dimension type)."""
        from support import runners

        return runners.run(path, feeds, dim=None, config=config)

    def ort(self, model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the ONNX model in onnxruntime."""
        ort = pytest.importorskip("onnxruntime")
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(None, feeds), strict=True))

    def check(self, model: Any, feeds: dict[str, np.ndarray], rtol: float = 1e-4, atol: float = 1e-5,
              config: dict | None = None, official: bool = False) -> dict[str, np.ndarray]:
        """Convert, run mnnpy and onnxruntime (and official MNN), assert every output matches; returns mnnpy's."""
        path = self.convert(model)
        got = self.mnnpy(path, feeds, config)
        want = self.ort(model, feeds)
        for name, ref in want.items():
            assert name in got, f"output {name} missing; mnnpy has {list(got)}"
            np.testing.assert_allclose(got[name].reshape(ref.shape), ref, rtol=rtol, atol=atol, err_msg=name)
        if official:
            from support.official import run

            for name, ref in run(path, feeds).items():
                np.testing.assert_allclose(got[name].reshape(ref.shape), ref, rtol=rtol, atol=atol,
                                           err_msg=f"{name} vs official MNN")
        return got


@pytest.fixture
def e2e(tmp_path: Path) -> E2E:
    """End-to-end helper (needs onnx, onnxruntime and the official MNN wheel; skips otherwise)."""
    pytest.importorskip("onnx")
    pytest.importorskip("MNN")
    return E2E(tmp_path)


@pytest.fixture(params=["numpy", "jit"])
def cpu_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a CPU kernel test on both implementations of the kernels that have two: numpy passes, and the
    numba-compiled loops of ``backends/cpu/compute/jit.py`` (chosen when a kernel is made, by ``MNNPY_JIT``)."""
    from mnnpy.backends.cpu.compute import jit

    if request.param == "numpy":
        monkeypatch.setenv("MNNPY_JIT", "0")
    else:
        monkeypatch.delenv("MNNPY_JIT", raising=False)
        if jit.kernels() is None:
            pytest.skip("numba (the `jit` extra) is not installed: the JIT kernels cannot run here")
    return str(request.param)
