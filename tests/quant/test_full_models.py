"""Issue 11 acceptance on the full-size benchmark models (tools/bench_models.py: ResNet-18 and MobileNetV2, 224x224,
seeded random weights, converted by the official converter): ``mnnpy quant`` with 50 generated calibration inputs,
int8 logits' cosine with fp32 >= 0.99 on 200 held-out inputs, file <= 30% of fp32, and official MNN running our int8
file gives every logit within one quantisation step of ours (in fact the same codes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

import mnnpy
from mnnpy.quant import interpreter, quantize_model

from .conftest import calibration_inputs, logits

SIZE = 224


def _output_step(net: object) -> float:
    """Scale of the last quantised convolution's output (the classifier; the logits are its codes times this)."""
    convs = [op for op in net.oplists if op.type in (fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise)]
    scales = {int(d.index): d.quantInfo.scale for d in net.extraTensorDescribe if d.quantInfo is not None}
    return float(scales[int(convs[-1].outputIndexes[0])])


@pytest.fixture(scope="module", params=["resnet18", "mobilenetv2"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("onnx")
    import bench_models
    from support.official import convert

    name = request.param
    root = tmp_path_factory.mktemp(f"q_{name}")
    fp32 = convert(getattr(bench_models, name)(root / f"{name}.onnx", SIZE), root / f"{name}.mnn")
    np.save(root / "cal.npy", calibration_inputs(50, SIZE, seed=1))
    int8 = root / f"{name}_int8.mnn"
    _, report = quantize_model(fp32, int8, {"path": str(root / "cal.npy"), "feature_quantize_method": "KL"})
    assert report.samples == 50 and report.counts["skipped"] == 0, report.kept_float
    return {"fp32": fp32, "int8": int8}


@pytest.fixture(scope="module")
def held_out() -> np.ndarray:
    return calibration_inputs(200, SIZE, seed=7)


def test_int8_accuracy_and_size(model: dict[str, Path], held_out: np.ndarray) -> None:
    ref = logits(mnnpy.Interpreter(str(model["fp32"])), held_out)
    got = logits(interpreter(str(model["int8"])), held_out)
    cosine = (ref * got).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() >= 0.99, cosine.min()
    assert model["int8"].stat().st_size <= 0.3 * model["fp32"].stat().st_size


def test_official_mnn_agrees_within_one_step(model: dict[str, Path], held_out: np.ndarray) -> None:
    from support.official import run as official

    xs = held_out[:40]
    ours = logits(interpreter(str(model["int8"])), xs)
    theirs = np.array([next(iter(official(model["int8"], {"input": x[None]}).values())).ravel() for x in xs])
    steps = np.abs(ours - theirs) / _output_step(load_net(model["int8"]))
    assert steps.max() <= 1.0 + 1e-3, steps.max()
    assert np.mean(steps < 1e-3) >= 0.99, np.mean(steps < 1e-3)
