"""`mnnpy quant`: calibration, MNN's int8 representation, int8 inference, agreement with official MNN."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

import mnnpy
from mnnpy.quant import QuantConfigError, interpreter, lower_int8, quantize_model

from .conftest import logits

OT = fb.OpType


def _run(model: str | Path, xs: np.ndarray, int8: bool = True) -> np.ndarray:
    return logits(interpreter(str(model)) if int8 else mnnpy.Interpreter(str(model)), xs)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def quantized(cnn: dict[str, Path]) -> tuple[Path, object]:
    dst = cnn["root"] / "int8_kl.mnn"
    net, report = quantize_model(cnn["mnn"], dst, {"path": str(cnn["cal"]), "feature_quantize_method": "KL"})
    assert report.counts["convs"] == 7 and report.samples == 20
    return dst, net


def test_representation_matches_mnnquant(quantized: tuple[Path, object]) -> None:
    path, _ = quantized
    net = load_net(path)
    convs = [op for op in net.oplists if op.type in (OT.Convolution, OT.ConvolutionDepthwise)]
    for op in convs:
        q = op.main.quanParameter
        assert op.main.weight is None and q.type == 1 and q.aMaxOrBits == 8 and q.aMin == 0 and q.readType == 0
        assert q.scaleIn > 0 and q.scaleOut > 0 and len(q.alpha) == op.main.common.outputCount
        assert op.main.symmetricQuan.clampMin == -127 and op.main.symmetricQuan.outputDataType == 6
    infos = {d.index: d.quantInfo for d in net.extraTensorDescribe if d.quantInfo is not None}
    for op in convs:
        assert int(op.inputIndexes[0]) in infos and int(op.outputIndexes[0]) in infos
    assert all(q.type == 6 and q.min == -127 and q.max == 127 and q.zero == 0 for q in infos.values())


def test_lowering_places_converts_at_island_edges(quantized: tuple[Path, object]) -> None:
    lowered = lower_int8(load_net(quantized[0]))
    kinds = [op.type for op in lowered.oplists]
    assert kinds.count(OT.ConvInt8) == 6 and kinds.count(OT.DepthwiseConvInt8) == 1
    assert kinds.count(OT.EltwiseInt8) == 1 and kinds.count(OT.QuantizedAvgPool) == 1  # residual add, global pool
    assert OT.Convolution not in kinds and OT.ConvolutionDepthwise not in kinds
    # conv chains stay int8: c0 -> c1 -> c2 and cd -> c3 -> c4 need no convert between them
    names = [str(op.name) for op in lowered.oplists]
    assert "r1__to_float" not in names and "r1__to_int8" not in names and "r3__to_float" not in names


def test_int8_accuracy_size_and_kernels(cnn: dict[str, Path], quantized: tuple[Path, object],
                                        held_out: np.ndarray) -> None:
    path, _ = quantized
    ref = _run(cnn["mnn"], held_out, int8=False)
    got = _run(path, held_out)
    assert _cosine(ref, got).min() >= 0.99
    assert path.stat().st_size <= 0.3 * cnn["mnn"].stat().st_size
    interp = interpreter(str(path))
    session = interp.createSession({})
    algos = {c.info.get("algorithm") for c in session.commands if c.info}
    assert {"int8-indirect", "int8-1x1", "int8-dw3x3"} <= algos


def test_official_mnn_runs_our_file(quantized: tuple[Path, object], held_out: np.ndarray) -> None:
    from support.official import run as official

    path, net = quantized
    ours = _run(path, held_out)
    theirs = np.array([official(path, {"x": x[None]})["y"].ravel() for x in held_out])
    out_index = next(op for op in net.oplists if str(op.name) == "y__matmul_converted").outputIndexes[0]
    step = {d.index: d.quantInfo.scale for d in net.extraTensorDescribe if d.quantInfo}[int(out_index)]
    steps = np.abs(ours - theirs) / step
    assert steps.max() <= 1.0 + 1e-3, steps  # acceptance: every logit within one output step
    assert np.mean(steps < 1e-3) >= 0.99, steps  # in fact the same codes: MNN's x86 int8 arithmetic is reproduced


@pytest.mark.parametrize("method", ["MAX_ABS", "EMA"])
def test_other_feature_methods(cnn: dict[str, Path], held_out: np.ndarray, method: str) -> None:
    cfg = {"path": str(cnn["cal"]), "feature_quantize_method": method, "weight_quantize_method": "ADMM",
           "used_image_num": 10, "batch_size": 3}
    _, report = quantize_model(cnn["mnn"], cnn["root"] / f"{method}.mnn", cfg)
    assert report.samples == 10
    ref = _run(cnn["mnn"], held_out[:4], int8=False)
    assert _cosine(ref, _run(cnn["root"] / f"{method}.mnn", held_out[:4])).min() >= 0.98


def test_image_folder_and_cli(cnn: dict[str, Path], tmp_path: Path) -> None:
    cv2 = pytest.importorskip("cv2")
    from mnnpy.cli.main import main

    from .conftest import SIZE, calibration_inputs

    images = tmp_path / "images"
    images.mkdir()
    for i, x in enumerate(calibration_inputs(6, SIZE, seed=3)):
        cv2.imwrite(str(images / f"{i}.png"), ((x.transpose(1, 2, 0)[:, :, ::-1] + 1) * 127.5).astype(np.uint8))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"path": "images", "format": "RGB", "mean": [127.5] * 3, "normal": [1 / 127.5] * 3,
                               "width": SIZE, "height": SIZE, "feature_quantize_method": "MAX_ABS"}))
    out = tmp_path / "q.mnn"
    assert main(["quant", str(cnn["mnn"]), str(out), str(cfg), "-q"]) == 0
    assert out.stat().st_size < cnn["mnn"].stat().st_size


@pytest.mark.parametrize("config, message", [
    ({"path": "nowhere"}, "not found"),
    ({"path": "cal.npy", "feature_quantize_method": "ADMM"}, "not supported"),
    ({"path": "cal.npy", "colour": 1}, "unknown"),
    ({"path": "bad.npy"}, "expects"),
    ({"path": "cal.npy", "mean": [1, 2]}, "mean"),
])
def test_bad_config_fails_before_work(cnn: dict[str, Path], tmp_path: Path, config: dict, message: str) -> None:
    np.save(tmp_path / "cal.npy", np.zeros((2, 3, 16, 16), np.float32))
    np.save(tmp_path / "bad.npy", np.zeros((2, 3, 8, 8), np.float32))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    out = tmp_path / "never.mnn"
    with pytest.raises(QuantConfigError, match=message):
        quantize_model(cnn["mnn"], out, cfg)
    assert not out.exists()


def test_we_run_mnnquant_files_in_int8(cnn: dict[str, Path], held_out: np.ndarray, tmp_path: Path) -> None:
    """Official MNN's quantization tool output runs on our int8 kernels and agrees with official MNN."""
    cv2 = pytest.importorskip("cv2")
    pytest.importorskip("MNN")
    import subprocess
    import sys

    from support.official import run as official

    from .conftest import SIZE, calibration_inputs

    images = tmp_path / "images"
    images.mkdir()
    for i, x in enumerate(calibration_inputs(20, SIZE, seed=1)):
        cv2.imwrite(str(images / f"{i:02d}.png"),
                    ((x.transpose(1, 2, 0)[:, :, ::-1] + 1) * 127.5).clip(0, 255).round().astype(np.uint8))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"format": "RGB", "mean": [127.5] * 3, "normal": [1 / 127.5] * 3, "width": SIZE,
                               "height": SIZE, "path": str(images) + "/", "feature_quantize_method": "KL"}))
    dst = tmp_path / "official_int8.mnn"
    args = ["mnnquant", str(cnn["mnn"]), str(dst), str(cfg)]  # own process: the tool is not safe to run in-process
    subprocess.run([sys.executable, "-c", f"import _tools; _tools.mnnquant({args!r})"], check=True,
                   capture_output=True, timeout=120)
    kinds = [op.type for op in lower_int8(load_net(dst)).oplists]
    assert kinds.count(OT.ConvInt8) == 6 and kinds.count(OT.DepthwiseConvInt8) == 1
    xs = held_out[:8]
    ours = _run(dst, xs)
    theirs = np.array([official(dst, {"x": x[None]})["y"].ravel() for x in xs])
    net = load_net(dst)
    out_index = next(op for op in net.oplists if str(op.name) == "y__matmul_converted").outputIndexes[0]
    step = {d.index: d.quantInfo.scale for d in net.extraTensorDescribe if d.quantInfo}[int(out_index)]
    steps = np.abs(ours - theirs) / step
    assert steps.max() <= 1.0 + 1e-3 and np.mean(steps < 1e-3) >= 0.99, steps


def test_npz_folder(cnn: dict[str, Path], tmp_path: Path) -> None:
    from .conftest import SIZE, calibration_inputs

    data = tmp_path / "data"
    data.mkdir()
    for i, x in enumerate(calibration_inputs(4, SIZE, seed=5)):
        np.savez(data / f"{i}.npz", x=x[None])
    _, report = quantize_model(cnn["mnn"], None, {"path": str(data), "feature_quantize_method": "MAX_ABS"})
    assert report.samples == 4 and report.counts["convs"] == 7
    np.savez(data / "9.npz", other=np.zeros((1, 3, SIZE, SIZE), np.float32))
    with pytest.raises(QuantConfigError, match="no data for input"):
        quantize_model(cnn["mnn"], None, {"path": str(data)})


def test_all_zero_tensor_keeps_its_convolution_float(cnn: dict[str, Path], tmp_path: Path) -> None:
    """Calibrating on black images: the stem's input never leaves 0, so it has no scale; that one convolution stays
    float and the report says which and why (every other tensor is nonzero through the biases)."""
    from .conftest import SIZE

    np.save(tmp_path / "zeros.npy", np.zeros((3, 3, SIZE, SIZE), np.float32))
    _, report = quantize_model(cnn["mnn"], None, {"path": str(tmp_path / "zeros.npy"),
                                                  "feature_quantize_method": "MAX_ABS"})
    assert report.counts["skipped"] == 1 and report.counts["convs"] == 6
    assert len(report.kept_float) == 1 and "input tensor" in report.kept_float[0]
    assert report.kept_float[0].endswith("was 0 on every calibration sample")


def test_ema_batches() -> None:
    from mnnpy.quant.calibrate import Observer

    obs = Observer("EMA", batch_size=2)
    for k, m in enumerate([1.0, 3.0, 2.0, 2.0, 5.0]):
        obs.first_pass(0, np.array([m, -m / 2]))
        obs.end_sample(last=k == 4)
    assert obs.threshold(0) == pytest.approx(0.9 * (0.9 * 3.0 + 0.1 * 2.0) + 0.1 * 5.0)
    assert obs.absmax[0] == 5.0


def test_skip_ops_stay_float(cnn: dict[str, Path], held_out: np.ndarray) -> None:
    from support.official import run as official

    dst = cnn["root"] / "skip.mnn"
    net, report = quantize_model(cnn["mnn"], dst, {"path": str(cnn["cal"]), "feature_quantize_method": "MAX_ABS",
                                                   "skip_quant_op_names": ["c0"]})
    assert report.counts["convs"] == 6
    first = next(op for op in net.oplists if str(op.name) == "c0")
    assert first.main.weight is not None and first.main.quanParameter is None
    ref = _run(cnn["mnn"], held_out[:4], int8=False)
    ours = _run(dst, held_out[:4])
    theirs = np.array([official(dst, {"x": x[None]})["y"].ravel() for x in held_out[:4]])
    assert _cosine(ref, ours).min() >= 0.99 and _cosine(ref, theirs).min() >= 0.99


def test_each_int8_op_within_one_step_of_official(quantized: tuple[Path, object], held_out: np.ndarray) -> None:
    """Fed official MNN's own int8 input, every int8 op of ours gives official MNN's codes exactly."""
    mnn = pytest.importorskip("MNN")
    from mnnpy.backends.cpu.int8.conv import Int8Conv
    from mnnpy.backends.cpu.int8.requant import add_int8
    from mnnpy.backends.cpu.ops.int8_conv import conv_params

    path, _ = quantized
    net = load_net(path)
    names = [str(n) for n in net.tensorName]
    info = {int(d.index): d.quantInfo for d in net.extraTensorDescribe if d.quantInfo is not None}
    interp = mnn.Interpreter(str(path))
    session = interp.createSession({"saveTensors": tuple(names[i] for i in info)})
    x = held_out[0][None]
    interp.getSessionInput(session).copyFrom(mnn.Tensor(list(x.shape), mnn.Halide_Type_Float, x,
                                                        mnn.Tensor_DimensionType_Caffe))
    interp.runSession(session)

    def codes(name: str) -> np.ndarray:
        tensor = interp.getSessionOutput(session, name)
        shape = list(tensor.getShape())
        host = mnn.Tensor(shape, mnn.Halide_Type_Float, np.zeros(shape, np.float32), mnn.Tensor_DimensionType_Caffe)
        tensor.copyToHostTensor(host)
        value = np.array(host.getData(), np.float32).reshape(shape)
        return np.rint(value / info[names.index(name)].scale).astype(np.int8)

    lowered = lower_int8(net)
    low_names = [str(n).removesuffix("__int8") for n in lowered.tensorName]
    checked = 0
    for op in lowered.oplists:
        if op.type not in (OT.ConvInt8, OT.DepthwiseConvInt8, OT.EltwiseInt8):
            continue
        ins = [codes(low_names[i]) for i in op.inputIndexes]
        want = codes(low_names[op.outputIndexes[0]]).astype(np.int64)
        got = np.zeros(want.shape, np.int8)
        if op.type == OT.EltwiseInt8:
            add_int8(ins[0], 0, ins[1], 0, tuple(op.main.tensorScale), 0, op.main.clampMin, op.main.clampMax, got)
        else:
            shape = ins[0].shape if ins[0].ndim == 4 else (*ins[0].shape, 1)
            kernel = Int8Conv(conv_params(op, shape[1]), shape)
            kernel.run(ins[0].reshape(shape), got.reshape(kernel.out_shape))
        diff = np.abs(got.astype(np.int64) - want)
        assert diff.max() == 0, (op.name, diff.max(), diff.mean())  # MNN's float32 requantisation, step for step
        checked += 1
    assert checked == 8


def test_interpreter_runs_quantised_files_in_int8(quantized: tuple[Path, object], held_out: np.ndarray) -> None:
    interp = mnnpy.Interpreter(str(quantized[0]))
    session = interp.createSession({})
    algos = {c.info.get("algorithm") for c in session.commands if c.info}
    assert {"int8-indirect", "int8-dw3x3", "int8-add"} <= algos
    np.testing.assert_array_equal(_run(quantized[0], held_out[:2]), _run(quantized[0], held_out[:2], int8=False))
