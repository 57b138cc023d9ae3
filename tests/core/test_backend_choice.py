"""Backend choice (fallback to backupType with a warning, a clear error without one) and two CPU kernels that
backend developers found wrong: LayerNorm's RMS mode and BinaryOp MUL_SILU, checked against numpy and official MNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import official, runners
from support.models import net_op

import mnnpy
from mnnpy.core import registry
from mnnpy.core.backend import BackendUnavailable


def _input(name: str, shape: list[int]) -> fb.InputT:
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = shape, fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NCHW
    return inp


def _run_mnnpy(path: Path, feeds: dict[str, np.ndarray], config: dict | None = None) -> np.ndarray:
    (out,) = runners.run(path, feeds, config=config).values()
    return out


def _rms_net(gamma: np.ndarray, eps: float) -> fb.NetT:
    norm = fb.LayerNormT()
    norm.axis, norm.epsilon, norm.gamma, norm.useRmsnorm = [-1], eps, gamma, True
    norm.beta = np.zeros_like(gamma)
    net = fb.NetT()
    net.tensorName, net.outputName = ["x", "y"], ["y"]
    net.oplists = [net_op(fb.OpType.Input, "x", [], [0], fb.OpParameter.Input, _input("x", [2, 3, 8])),
                   net_op(fb.OpType.LayerNorm, "y", [0], [1], fb.OpParameter.LayerNorm, norm)]
    return net


def test_layernorm_rms_mode(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    gamma = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    path = save_net(_rms_net(gamma, 1e-5), tmp_path / "rms.mnn")
    want = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-5) * gamma
    np.testing.assert_allclose(_run_mnnpy(path, {"x": x}), want, rtol=1e-5, atol=1e-5)
    try:
        official.require_mnn()
    except pytest.skip.Exception:
        return
    np.testing.assert_allclose(official.run(path, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)


def test_binary_mul_silu(tmp_path: Path) -> None:
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.MUL_SILU
    net = fb.NetT()
    net.tensorName, net.outputName = ["a", "b", "y"], ["y"]
    net.oplists = [net_op(fb.OpType.Input, "a", [], [0], fb.OpParameter.Input, _input("a", [2, 5])),
                   net_op(fb.OpType.Input, "b", [], [1], fb.OpParameter.Input, _input("b", [2, 5])),
                   net_op(fb.OpType.BinaryOp, "y", [0, 1], [2], fb.OpParameter.BinaryOp, param)]
    path = save_net(net, tmp_path / "silu.mnn")
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 5)).astype(np.float32), rng.normal(size=(2, 5)).astype(np.float32)
    np.testing.assert_allclose(_run_mnnpy(path, {"a": a, "b": b}), a * b / (1 + np.exp(-b)), rtol=1e-5, atol=1e-6)


def test_unavailable_backend_needs_a_backup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_net(_rms_net(np.ones(8, np.float32), 1e-5), tmp_path / "m.mnn")
    real = registry.get_runtime

    def no_opencl(name: str) -> object:
        if name.lower() == "opencl":
            raise BackendUnavailable("opencl: no platform (test)")
        return real(name)

    monkeypatch.setattr(registry, "get_runtime", no_opencl)
    interp = mnnpy.Interpreter(str(path))
    with pytest.raises(BackendUnavailable, match=r"'opencl' requested and no backupType given: opencl: no platform"):
        interp.createSession({"backend": "OPENCL"})
    with pytest.warns(RuntimeWarning, match=r"backend 'opencl' unavailable \(opencl: no platform \(test\)\)"):
        session = interp.createSession({"backend": "OPENCL", "backupType": "CPU"})
    assert session.main.name == "cpu"
