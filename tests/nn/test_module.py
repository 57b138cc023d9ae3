"""mnnpy.nn: MNN's deployment pattern run unchanged with `import mnnpy as MNN`, vs onnxruntime; Module basics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import official
from support.models import save_onnx

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

# importing the subpackages makes MNN.expr / MNN.nn / MNN.numpy reachable even before mnnpy/__init__.py exposes
# them lazily (see the report of issue 6)
import mnnpy.expr
import mnnpy.nn
import mnnpy.numpy

onnx = pytest.importorskip("onnx", reason="onnx builds the test model")
helper = onnx.helper


def _classifier(path: Path) -> Path:
    """data [1, 3, 20, 20] -> Conv 3x3 (13 ch) -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm -> Softmax."""
    rng = np.random.default_rng(3)
    w = rng.normal(0, 0.3, (13, 3, 3, 3)).astype(np.float32)
    b = rng.normal(0, 0.1, 13).astype(np.float32)
    fc = rng.normal(0, 0.3, (10, 13)).astype(np.float32)
    fb_ = rng.normal(0, 0.1, 10).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["data", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    inits = {"w": w, "b": b, "fc": fc, "fb": fb_}
    return save_onnx(path, nodes, {"data": [1, 3, 20, 20]}, {"prob": [1, 10]}, inits, name="cls", opset=17)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("nn")
    src = _classifier(folder / "cls.onnx")
    return src, official.convert(src, folder / "cls.mnn")


def test_deployment_pattern_matches_onnxruntime(models: tuple[Path, Path]) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
    src, path = models
    image = np.random.default_rng(5).integers(0, 256, (20, 20, 3)).astype(np.uint8)

    # --- the MNN script, unchanged except for the import ---
    np_ = MNN.numpy
    net = MNN.nn.load_module_from_file(str(path), ["data"], ["prob"])
    x = np_.array(image).astype(np_.float32)
    x = (x - 127.5) * 0.0078125
    x = np_.transpose(x, (2, 0, 1))
    x = np_.expand_dims(x, 0)
    x = MNN.expr.convert(x, MNN.expr.NC4HW4)
    out = net.forward(x)
    out = MNN.expr.convert(out, MNN.expr.NCHW)
    top = int(np_.argmax(out))
    # --- end of the script ---

    feed = ((image.astype(np.float32) - 127.5) * 0.0078125).transpose(2, 0, 1)[None]
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"data": feed})[0]
    np.testing.assert_allclose(out.read(), ref, rtol=1e-4, atol=1e-5)
    assert top == int(np.argmax(ref))
    assert net.forward([x])[0].shape == [1, 10]  # list in, list out


def test_forward_resizes_and_takes_runtime_options(models: tuple[Path, Path]) -> None:
    _, path = models
    rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": 2},))
    net = MNN.nn.load_module_from_file(str(path), ["data"], ["prob"], runtime_manager=rt)
    batch = np.random.default_rng(1).normal(size=(2, 3, 20, 20)).astype(np.float32)
    out = net.forward(MNN.expr.const(batch, batch.shape))
    single = MNN.nn.load_module_from_file(str(path), ["data"], ["prob"], thread_num=1)
    for i in range(2):
        np.testing.assert_allclose(out.read()[i], single.forward(MNN.expr.const(batch[i:i + 1], [1, 3, 20, 20]))
                                   .read()[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no tensors named"):
        MNN.nn.load_module_from_file(str(path), ["nope"], ["prob"])


def test_user_module_registers_children_and_parameters() -> None:
    class Net(MNN.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = MNN.nn.linear(4, 3)
            self.scale = MNN.expr.const([2.0], [1])

        def onForward(self, x: object) -> object:
            return MNN.expr.relu(self.fc.forward(x)) * self.scale

    net = Net()
    assert len(net.parameters) == 3  # scale, fc.weight, fc.bias
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    w = net.fc.weight.read()
    np.testing.assert_allclose(net.forward(MNN.expr.const(x, x.shape)).read(), np.maximum(x @ w.T, 0) * 2, rtol=1e-5)
    np.testing.assert_allclose(net(x).read(), net.forward(x).read())
    assert net.load_parameters([np.ones(1, np.float32), np.zeros((3, 4), np.float32), np.ones(3, np.float32)])
    np.testing.assert_allclose(net.forward(x).read(), np.full((2, 3), 1.0), rtol=1e-6)  # relu(0 + 1) * 1
    conv = MNN.nn.conv(3, 5, [3, 3], padding=[1, 1])
    img = np.random.default_rng(0).normal(size=(1, 3, 6, 6)).astype(np.float32)
    assert conv.forward(MNN.expr.const(img, img.shape)).shape == [1, 5, 6, 6]
    assert MNN.nn.dropout(0.3).forward(img).shape == [1, 3, 6, 6]
    bn = MNN.nn.batch_norm(3)
    np.testing.assert_allclose(bn.forward(img).read(), img / np.sqrt(1 + 1e-5), rtol=1e-5)


def test_losses_and_names() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 1, (3, 4)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    t = np.eye(4, dtype=np.float32)[[0, 2, 3]]
    refs = {"cross_entropy": -(t * np.log(p)).sum(1).mean(), "mse": ((p - t) ** 2).sum(1).mean(),
            "mae": np.abs(p - t).sum(1).mean(), "hinge": np.maximum(1 - t * p, 0).sum(1).mean(),
            "kl": (t * (np.log(t + 1e-8) - np.log(p + 1e-8))).sum(1).mean()}
    for name, ref in refs.items():
        np.testing.assert_allclose(float(getattr(MNN.nn.loss, name)(p, t)), ref, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="train_quant"):
        MNN.nn.compress.train_quant()
    mnn = pytest.importorskip("MNN", reason="official MNN wheel lists the names")
    assert not sorted({n for n in dir(mnn.nn) if not n.startswith("_")} - set(dir(MNN.nn)))
