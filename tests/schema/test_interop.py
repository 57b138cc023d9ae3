"""Interop with the official MNN wheel, both directions (the spine's acceptance)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net, save_net
from support import official
from support.models import interop_onnx, scratch_cnn, scratch_cnn_reference


def test_official_to_mnnpy_to_official(tmp_path: Path) -> None:
    """A model written by the official converter survives load_net + save_net bit-for-bit in behaviour."""
    official.require_mnn()
    pytest.importorskip("onnx", reason="onnx not installed")
    src = official.convert(interop_onnx(tmp_path / "m.onnx"), tmp_path / "m.mnn")
    net = load_net(src)
    types = {op.type for op in net.oplists}
    assert len(types) >= 12, "the converted model should exercise many op types"
    resaved = save_net(net, tmp_path / "resaved.mnn")
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)
    before = official.run(src, {"x": x})
    after = official.run(resaved, {"x": x})
    assert before.keys() == after.keys() == {"y"}
    assert before["y"].shape == (1, 64, 10)
    np.testing.assert_array_equal(before["y"], after["y"])


def test_resaved_net_is_stable(tmp_path: Path) -> None:
    """load -> save -> load -> save gives identical bytes (the writer is deterministic)."""
    official.require_mnn()
    src = official.convert(interop_onnx(tmp_path / "m.onnx"), tmp_path / "m.mnn")
    first = save_net(load_net(src), tmp_path / "a.mnn").read_bytes()
    second = save_net(load_net(first), tmp_path / "b.mnn").read_bytes()
    assert first == second


def test_scratch_net_runs_in_official_mnn(tmp_path: Path) -> None:
    """A net built from scratch with the object API loads and runs in official MNN and matches numpy to 1e-5."""
    official.require_mnn()
    net, weights = scratch_cnn()
    path = save_net(net, tmp_path / "scratch.mnn")
    x = np.random.default_rng(2).normal(size=(1, 3, 8, 8)).astype(np.float32)
    got = official.run(path, {"x": x})["y"]
    want = scratch_cnn_reference(x, weights["w"], weights["b"])
    assert got.shape == want.shape == (1, 4, 4, 4)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
