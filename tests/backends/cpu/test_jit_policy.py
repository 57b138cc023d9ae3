"""Compiled kernels (``compute/jit.py``) only where numpy needs many passes: a session of plain convolutions, pooling,
residual adds and a classifier (ResNet's ops) never imports numba, so its createSession stays fast; one with a
depthwise convolution does, when numba is installed and ``MNNPY_JIT`` allows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _model(tmp_path: Path, depthwise: bool) -> Path:
    from mnnpy.converter import convert

    rng = np.random.default_rng(0)
    w = nh.from_array(rng.standard_normal((8, 1 if depthwise else 8, 3, 3)).astype(np.float32), "w")
    fc = nh.from_array(rng.standard_normal((8, 5)).astype(np.float32), "fc")
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], group=8 if depthwise else 1),
             h.make_node("Relu", ["c"], ["r"]), h.make_node("Add", ["r", "x"], ["s"]),
             h.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("GlobalAveragePool", ["p"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("MatMul", ["f", "fc"], ["y"])]
    graph = h.make_graph(nodes, "net", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 16, 16])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], [w, fc])
    src = tmp_path / f"net{int(depthwise)}.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(src))
    convert(src, src.with_suffix(".mnn"))
    return src.with_suffix(".mnn")


def _imports_numba(path: Path, jit: str) -> bool:
    code = ("import sys; from mnnpy.interpreter import Interpreter; i = Interpreter(sys.argv[1]); "
            "s = i.createSession({'numThread': 1}); i.runSession(s); print('numba' in sys.modules)")
    env = {**os.environ, "MNNPY_JIT": jit}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                         check=True, timeout=300)
    return out.stdout.strip().splitlines()[-1] == "True"


def test_plain_convolution_sessions_never_import_numba(tmp_path: Path) -> None:
    assert not _imports_numba(_model(tmp_path, depthwise=False), "1")


def test_depthwise_sessions_use_numba_where_allowed(tmp_path: Path) -> None:
    from mnnpy.backends.cpu.compute import jit

    path = _model(tmp_path, depthwise=True)
    assert not _imports_numba(path, "0")
    if jit.kernels() is None:
        pytest.skip("numba (the `jit` extra) is not installed: nothing to import")
    assert _imports_numba(path, "1")


def test_describe_says_which_kernels_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mnnpy bench`'s line about compiled kernels: switched off, in use, or an installed numba that failed to import
    (the numpy kernels then run)."""
    from importlib import metadata

    from mnnpy.backends.cpu.compute import jit

    try:
        version = metadata.version("numba")
    except metadata.PackageNotFoundError:
        assert jit.describe() == "numba not installed" and jit.kernels() is None
        return
    monkeypatch.setenv("MNNPY_JIT", "0")
    assert jit.describe() == "off (MNNPY_JIT=0)" and not jit.enabled()
    monkeypatch.delenv("MNNPY_JIT")
    monkeypatch.setattr(jit, "_STATE", {"kernels": None})
    monkeypatch.setattr(jit, "_FAILURE", ["Numba needs NumPy 2.3 or less"])
    assert jit.describe() == f"numba {version} unusable, numpy kernels (Numba needs NumPy 2.3 or less)"
    assert not jit.enabled()
