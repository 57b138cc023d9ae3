"""Shared helpers for converter tests: build ONNX models in code, run onnxruntime and official MNN, compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="onnx not installed")
from onnx import TensorProto, numpy_helper  # noqa: E402
from onnx import helper as oh  # noqa: E402

F = TensorProto.FLOAT
RTOL = 1e-4


def make_model(nodes: list[Any], inputs: list[tuple[str, int, list[int] | None]], outputs: list[str | tuple[str, int]],
               inits: dict[str, np.ndarray] | None = None, opset: int = 17) -> Any:
    """An ONNX model from nodes, (name, elem type, shape) inputs, output names and numpy initializers."""
    outs = [oh.make_tensor_value_info(o, F, None) if isinstance(o, str) else oh.make_tensor_value_info(o[0], o[1], None)
            for o in outputs]
    graph = oh.make_graph(nodes, "test", [oh.make_tensor_value_info(n, t, s) for n, t, s in inputs], outs,
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Reference outputs from onnxruntime."""
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_mnn(path: str | Path, feeds: dict[str, np.ndarray], outputs: list[str]) -> list[np.ndarray]:
    """Run a .mnn file in the OFFICIAL MNN runtime (outputs in the order of `outputs`)."""
    from support import official

    got = official.run(Path(path), feeds, outputs)
    return [got[name] for name in outputs]


def rel_diff(got: np.ndarray, ref: np.ndarray) -> float:
    """max|got - ref| / max|ref| (absolute when ref is all zeros)."""
    ref = np.asarray(ref, np.float64)
    got = np.asarray(got, np.float64).reshape(ref.shape)
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    diff = float(np.abs(got - ref).max()) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def check_model(model: Any, feeds: dict[str, np.ndarray], tmp_path: Path, rtol: float = RTOL) -> Any:
    """Convert with OUR converter, run in official MNN, compare every output with onnxruntime."""
    from mnnpy.converter import convert

    pytest.importorskip("MNN", reason="official MNN wheel not installed")
    src = tmp_path / "model.onnx"
    dst = tmp_path / "model.mnn"
    onnx.save(model, str(src))
    net, _ = convert(src, dst)
    names = [o.name for o in model.graph.output]
    refs = run_ort(model, feeds)
    gots = run_mnn(dst, feeds, names)
    for name, ref, got in zip(names, refs, gots, strict=True):
        assert list(np.shape(got)) == list(np.shape(ref)), f"{name}: shape {np.shape(got)} != {np.shape(ref)}"
        if ref.dtype == np.bool_:
            ref = ref.astype(np.int32)
        err = rel_diff(got, ref)
        assert err <= rtol, f"{name}: max rel diff {err:.3g} > {rtol}"
    return net


def official_convert(src: Path, dst: Path) -> Path:
    """Convert with the OFFICIAL converter (in a child process, see `support.official.convert`)."""
    from support import official

    return official.convert(src, dst)
