"""Whole small models: converted by us, run in official MNN, compared with onnxruntime (1e-4 relative)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mnnpy.schema import mnn_generated as fb

from .helpers import check_model
from .models import encoder_layer_model, mobilenet_v2_block_model, resnet_block_model


def _types(net: fb.NetT) -> list[int]:
    return [op.type for op in net.oplists]


def test_resnet_block(tmp_path: Path) -> None:
    model, feeds = resnet_block_model()
    net = check_model(model, feeds, tmp_path)
    types = _types(net)
    assert fb.OpType.Scale not in types and fb.OpType.ReLU not in types[:3]  # BN and stem relu fused into conv
    assert types.count(fb.OpType.Convolution) == 7  # 6 convs + the fc (const-B MatMul -> 1x1 conv)


def test_mobilenet_v2_block(tmp_path: Path) -> None:
    model, feeds = mobilenet_v2_block_model()
    net = check_model(model, feeds, tmp_path)
    types = _types(net)
    assert types.count(fb.OpType.ConvolutionDepthwise) == 3
    assert fb.OpType.ReLU6 not in types
    assert all(op.main.common.relu6 for op in net.oplists if op.type == fb.OpType.ConvolutionDepthwise)


def test_encoder_layer(tmp_path: Path) -> None:
    model, feeds = encoder_layer_model()
    net = check_model(model, feeds, tmp_path)
    assert fb.OpType.LayerNorm in _types(net)
    gelu = [op for op in net.oplists
            if op.type == fb.OpType.UnaryOp and op.main.opType == fb.UnaryOpOperation.GELU_STANDARD]
    assert len(gelu) == 1  # the Erf form was recognised
    assert _types(net).count(fb.OpType.Convolution) == 6  # const-B MatMuls became 1x1 convolutions


def test_encoder_layer_other_shape(tmp_path: Path) -> None:
    model, feeds = encoder_layer_model(batch=1, seq=13, hidden=24, heads=3)
    check_model(model, feeds, tmp_path)


def test_resnet18_converts_fast_and_matches(tmp_path: Path) -> None:
    """Issue acceptance: ResNet-18 (~47 MB of weights) converts in under 5 s and runs in official MNN."""
    from mnnpy.converter import convert

    from .helpers import onnx, rel_diff, run_mnn, run_ort
    from .models import resnet18_model

    model, feeds = resnet18_model(size=32)
    src = tmp_path / "r18.onnx"
    onnx.save(model, str(src))
    _, report = convert(src, tmp_path / "r18.mnn")
    assert report.seconds < 5.0, report.summary()
    assert rel_diff(run_mnn(tmp_path / "r18.mnn", feeds, ["y"])[0], run_ort(model, feeds)[0]) <= 1e-4


@pytest.mark.parametrize("name", ["mobilenet_v2_block", "attention_block"])
def test_examples_convert_and_match(name: str, tmp_path: Path) -> None:
    """The models tools/make_examples.py writes into examples/ convert and run in official MNN."""
    import numpy as np

    from .helpers import onnx

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.onnx"
    if not path.exists():
        pytest.skip("run tools/make_examples.py first")
    model = onnx.load(str(path))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {model.graph.input[0].name: np.random.default_rng(5).standard_normal(shape).astype(np.float32)}
    check_model(model, feeds, tmp_path)


def test_decomposed_layer_norm_is_recognised(tmp_path: Path) -> None:
    """ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add (older exporters) becomes one LayerNorm."""
    import numpy as np

    from .helpers import F, make_model, oh

    nodes = [oh.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), oh.make_node("Sub", ["x", "m"], ["d"]),
             oh.make_node("Pow", ["d", "two"], ["sq"]), oh.make_node("ReduceMean", ["sq"], ["v"], axes=[-1]),
             oh.make_node("Add", ["v", "eps"], ["ve"]), oh.make_node("Sqrt", ["ve"], ["s"]),
             oh.make_node("Div", ["d", "s"], ["n"]), oh.make_node("Mul", ["n", "g"], ["ng"]),
             oh.make_node("Add", ["ng", "b"], ["y"])]
    rng = np.random.default_rng(7)
    inits = {"two": np.float32(2), "eps": np.float32(1e-5), "g": rng.standard_normal(13).astype(np.float32),
             "b": rng.standard_normal(13).astype(np.float32)}
    model = make_model(nodes, [("x", F, [2, 5, 13])], ["y"], inits, opset=13)
    net = check_model(model, {"x": rng.standard_normal((2, 5, 13)).astype(np.float32)}, tmp_path)
    assert _types(net) == [fb.OpType.Input, fb.OpType.LayerNorm]


def test_dynamic_batch_and_sequence(tmp_path: Path) -> None:
    """Symbolic input dims become -1 in the Input op; official MNN runs the model after resizeTensor."""
    import numpy as np

    model, _ = encoder_layer_model()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_param, dims[1].dim_param = "batch", "seq"
    net = check_model(model, {"x": np.random.default_rng(3).standard_normal((3, 5, 16)).astype(np.float32)},
                      tmp_path)
    assert list(net.oplists[0].main.dims) == [-1, -1, 16]


@pytest.mark.parametrize("add_after_relu", [True, False])
def test_conv_add_constant(add_after_relu: bool, tmp_path: Path) -> None:
    """Conv + Add(per-channel const) folds into the bias, except after a fused ReLU (MNNConvert 3.6.1 folds that one
    too and gets a 16% relative error on this model)."""
    import numpy as np

    from .helpers import F, make_model, oh

    rng = np.random.default_rng(11)
    conv = oh.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])
    if add_after_relu:  # sigmoid(relu(conv) + k)
        body = [oh.make_node("Relu", ["c"], ["r"]), oh.make_node("Add", ["r", "k"], ["a"])]
    else:  # sigmoid(relu(conv + k))
        body = [oh.make_node("Add", ["c", "k"], ["r"]), oh.make_node("Relu", ["r"], ["a"])]
    nodes = [conv, *body, oh.make_node("Sigmoid", ["a"], ["y"])]
    inits = {"w": rng.standard_normal((5, 3, 3, 3)).astype(np.float32), "b": rng.standard_normal(5).astype(np.float32),
             "k": rng.standard_normal((5, 1, 1)).astype(np.float32)}
    model = make_model(nodes, [("x", F, [1, 3, 7, 9])], ["y"], inits, opset=13)
    net = check_model(model, {"x": rng.standard_normal((1, 3, 7, 9)).astype(np.float32)}, tmp_path)
    assert (fb.OpType.BinaryOp in _types(net)) == add_after_relu


def test_squeeze_excitation_block(tmp_path: Path) -> None:
    """MobileNetV3 / PP-OCR style SE block: NC4HW4 tensors of shapes [N,C,H,W] and [N,C,1,1] multiplied."""
    import numpy as np

    from .helpers import F, make_model, oh

    rng = np.random.default_rng(21)
    inits = {"w": rng.standard_normal((13, 3, 3, 3)).astype(np.float32) * 0.3,
             "w1": rng.standard_normal((5, 13, 1, 1)).astype(np.float32) * 0.3,
             "w2": rng.standard_normal((13, 5, 1, 1)).astype(np.float32) * 0.3}
    nodes = [oh.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), oh.make_node("HardSwish", ["c"], ["h"]),
             oh.make_node("GlobalAveragePool", ["h"], ["g"]), oh.make_node("Conv", ["g", "w1"], ["s1"]),
             oh.make_node("Relu", ["s1"], ["s2"]), oh.make_node("Conv", ["s2", "w2"], ["s3"]),
             oh.make_node("HardSigmoid", ["s3"], ["s4"], alpha=1 / 6), oh.make_node("Mul", ["h", "s4"], ["y"])]
    model = make_model(nodes, [("x", F, [2, 3, 11, 9])], ["y"], inits, opset=14)
    check_model(model, {"x": rng.standard_normal((2, 3, 11, 9)).astype(np.float32)}, tmp_path)


def test_unet_block(tmp_path: Path) -> None:
    from .models import unet_block_model

    model, feeds = unet_block_model()
    net = check_model(model, feeds, tmp_path)
    assert fb.OpType.Deconvolution in _types(net) and fb.OpType.Interp in _types(net)


def test_bert_encoder_4_layers(tmp_path: Path) -> None:
    """Issue acceptance model: a 4-layer BERT encoder, hidden 256, 4 heads, sequence 128."""
    model, feeds = encoder_layer_model(batch=1, seq=128, hidden=256, heads=4, layers=4)
    net = check_model(model, feeds, tmp_path)
    assert _types(net).count(fb.OpType.LayerNorm) == 8


def test_vit_tiny_topology(tmp_path: Path) -> None:
    """ViT-tiny's topology (hidden 192, 3 heads, patch conv, class token) with 2 of its 12 layers, 32x32 images."""
    from .models import vit_model

    model, feeds = vit_model()
    check_model(model, feeds, tmp_path)


def test_mobilenet_v2_full(tmp_path: Path) -> None:
    """Issue acceptance model: the whole MobileNetV2 topology (random weights), 64x64 input."""
    from .models import mobilenet_v2_model

    model, feeds = mobilenet_v2_model()
    net = check_model(model, feeds, tmp_path)
    types = _types(net)
    assert types.count(fb.OpType.ConvolutionDepthwise) == 17 and fb.OpType.Scale not in types


def test_same_ops_as_official_converter(tmp_path: Path) -> None:
    """The MobileNetV2 block example converts to MNNConvert 3.6.1's ops, op names, tensors and params."""
    import numpy as np
    from mnnpy.converter import convert
    from mnnpy.schema import load_net

    from .helpers import official_convert

    src = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_v2_block.onnx"
    if not src.exists():
        pytest.skip("run tools/make_examples.py first")
    ours, _ = convert(src, tmp_path / "ours.mnn")
    theirs = load_net(official_convert(src, tmp_path / "official.mnn"))
    assert [(op.type, op.name) for op in ours.oplists] == [(op.type, op.name) for op in theirs.oplists]
    assert list(ours.tensorName) == list(theirs.tensorName)
    for a, b in zip(ours.oplists, theirs.oplists, strict=True):
        if a.mainType == fb.OpParameter.Convolution2D:
            ca, cb = a.main.common, b.main.common
            assert (ca.padX, ca.padY, ca.group, ca.relu, ca.relu6) == (cb.padX, cb.padY, cb.group, cb.relu, cb.relu6)
            assert np.allclose(a.main.weight, b.main.weight, atol=1e-5)
            assert np.allclose(a.main.bias, b.main.bias, atol=1e-5)
