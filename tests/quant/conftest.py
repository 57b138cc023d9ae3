"""Fixtures of the quantisation tests: a small ResNet-style CNN (onnx.helper, random weights), converted with the
official converter, and generated calibration / held-out inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.models import save_onnx

import mnnpy


def resnet_block_onnx(path: Path, seed: int = 0, width: int = 32, size: int = 16) -> Path:
    """Stem conv, a residual block, a depthwise 3x3, a 1x1 expansion, global pool and a classifier.

    Input ``x`` [1, 3, size, size] -> ``y`` [1, 10]. Weights are He-scaled so activations stay in range.
    """
    from onnx import helper as h

    rng = np.random.default_rng(seed)

    def conv_w(oc: int, ic: int, k: int) -> np.ndarray:
        return rng.normal(0.0, np.sqrt(2.0 / (ic * k * k)), size=(oc, ic, k, k)).astype(np.float32)

    w = width
    inits = {
        "w0": conv_w(w, 3, 3), "b0": rng.normal(0, 0.1, w),
        "w1": conv_w(w, w, 3), "b1": rng.normal(0, 0.1, w),
        "w2": conv_w(w, w, 3), "b2": rng.normal(0, 0.1, w),
        "wd": conv_w(w, 1, 3), "bd": rng.normal(0, 0.1, w),
        "w3": conv_w(2 * w, w, 1), "b3": rng.normal(0, 0.1, 2 * w),
        "w4": conv_w(2 * w, 2 * w, 3), "b4": rng.normal(0, 0.1, 2 * w),
        "fc": rng.normal(0, np.sqrt(1.0 / (2 * w)), size=(10, 2 * w)), "fb": rng.normal(0, 0.1, 10),
    }
    nodes = [
        h.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c0"], ["r0"]),
        h.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        h.make_node("Add", ["c2", "r0"], ["a2"]),
        h.make_node("Relu", ["a2"], ["r2"]),
        h.make_node("Conv", ["r2", "wd", "bd"], ["cd"], pads=[1, 1, 1, 1], group=w, strides=[2, 2]),
        h.make_node("Relu", ["cd"], ["rd"]),
        h.make_node("Conv", ["rd", "w3", "b3"], ["c3"]),
        h.make_node("Relu", ["c3"], ["r3"]),
        h.make_node("Conv", ["r3", "w4", "b4"], ["c4"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c4"], ["r4"]),
        h.make_node("GlobalAveragePool", ["r4"], ["gp"]),
        h.make_node("Flatten", ["gp"], ["fl"]),
        h.make_node("Gemm", ["fl", "fc", "fb"], ["y"], transB=1),
    ]
    inits = {k: np.asarray(v, np.float32) for k, v in inits.items()}
    return save_onnx(path, nodes, {"x": [1, 3, size, size]}, {"y": [1, 10]}, inits, name="qblock")


def calibration_inputs(count: int, size: int = 16, seed: int = 1) -> np.ndarray:
    """Smooth random images [count, 3, size, size] in about [-1, 1] (blurred noise plus a gradient)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(count, 3, size, size)).astype(np.float32)
    blur = (base + np.roll(base, 1, 2) + np.roll(base, 1, 3) + np.roll(base, (1, 1), (2, 3))) / 2.0
    ramp = np.linspace(-0.5, 0.5, size, dtype=np.float32)
    return np.clip(blur * 0.5 + ramp[None, None, None, :] * rng.uniform(-1, 1, (count, 3, 1, 1)), -1, 1).astype(
        np.float32)


SIZE = 16


def logits(interp: object, xs: np.ndarray) -> np.ndarray:
    """Run each [C, H, W] image of `xs` as a batch of one (NCHW) through `interp` (mnnpy's or the quantised
    Interpreter), its default input and output; one row of flattened outputs per image."""
    session = interp.createSession({})
    outs = []
    for x in xs:
        interp.getSessionInput(session).copyFrom(mnnpy.Tensor([1, *x.shape], data=x[None], dimType=1))
        interp.runSession(session)
        outs.append(interp.getSessionOutput(session).getNumpyData().ravel().copy())
    return np.array(outs)


@pytest.fixture(scope="session")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The block model as ONNX, as official-MNN fp32 .mnn, and 20 calibration inputs as .npy."""
    pytest.importorskip("onnx")
    from support.official import convert

    root = tmp_path_factory.mktemp("qcnn")
    src = resnet_block_onnx(root / "m.onnx", width=32, size=SIZE)
    mnn = convert(src, root / "m.mnn")
    np.save(root / "cal.npy", calibration_inputs(20, SIZE, seed=1))
    return {"onnx": src, "mnn": mnn, "cal": root / "cal.npy", "root": root}


@pytest.fixture(scope="session")
def held_out() -> np.ndarray:
    """Inputs never seen by calibration [16, 3, SIZE, SIZE]."""
    return calibration_inputs(16, SIZE, seed=7)
