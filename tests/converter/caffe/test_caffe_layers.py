"""Caffe layers one by one: converted by us, run on mnnpy / official MNN / OpenCV, compared with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.caffe import load_net
from mnnpy.converter.graph import ConvertError

from .caffe_build import check, conv, pool, write_caffemodel

RNG = np.random.default_rng(7)


def _net(shape: list[int], body: str) -> str:
    dims = " ".join(f"dim: {d}" for d in shape)
    return f'layer {{ name: "data" type: "Input" top: "data" input_param {{ shape {{ {dims} }} }} }}\n{body}'


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_grouped_dilated_conv_deconv_prelu(tmp_path: Path) -> None:
    x = _x(1, 6, 9, 9)
    w1, b1 = _x(6, 3, 3, 3), _x(6)
    dw = _x(6, 1, 3, 3)
    slope = np.abs(_x(6)) * 0.3
    up_w = _x(6, 4, 2, 2)
    body = """
layer { name: "g" type: "Convolution" bottom: "data" top: "g"
  convolution_param { num_output: 6 kernel_size: 3 group: 2 dilation: 2 pad: 2 } }
layer { name: "dw" type: "Convolution" bottom: "g" top: "dw"
  convolution_param { num_output: 6 kernel_size: 3 group: 6 stride: 2 pad: 1 bias_term: false } }
layer { name: "pr" type: "PReLU" bottom: "dw" top: "pr" }
layer { name: "up" type: "Deconvolution" bottom: "pr" top: "up"
  convolution_param { num_output: 4 kernel_size: 2 stride: 2 bias_term: false } }
"""
    g = conv(x, w1, b1, pad=2, group=2, dilation=2)
    d = conv(g, dw, None, stride=2, pad=1, group=6)
    d = np.where(d > 0, d, d * slope.reshape(1, -1, 1, 1))
    up = np.zeros((1, 4, d.shape[2] * 2, d.shape[3] * 2))
    for i in range(2):
        for j in range(2):
            up[:, :, i::2, j::2] = np.einsum("nchw,co->nohw", d, up_w[:, :, i, j])
    weights = {"g": [w1, b1], "dw": [dw], "pr": [slope], "up": [up_w]}
    check(_net([1, 6, 9, 9], body), weights, {"data": x}, {"g": g, "pr": d, "up": up}, tmp_path)


def test_grouped_deconvolution(tmp_path: Path) -> None:
    """Deconvolution with group 2 (3 -> 2 channels per group, not depthwise) and a bias: one Deconvolution per group
    in the file (official MNN's grouped Deconvolution computes garbage); mnnpy, official MNN and OpenCV against
    numpy."""
    x = _x(1, 6, 5, 4)
    w, b = _x(6, 2, 3, 3), _x(4)
    body = """
layer { name: "up" type: "Deconvolution" bottom: "data" top: "up"
  convolution_param { num_output: 4 kernel_size: 3 stride: 2 group: 2 } }
"""
    up = np.zeros((1, 4, 11, 9))
    for g in range(2):
        for i in range(3):
            for j in range(3):
                up[:, 2 * g:2 * g + 2, i:i + 9:2, j:j + 7:2] += np.einsum("nchw,co->nohw", x[:, 3 * g:3 * g + 3],
                                                                           w[3 * g:3 * g + 3, :, i, j])
    up += b.reshape(1, -1, 1, 1)
    check(_net([1, 6, 5, 4], body), {"up": [w, b]}, {"data": x}, {"up": up}, tmp_path)


def test_pooling_ceil_mode_and_average_padding(tmp_path: Path) -> None:
    x = _x(1, 5, 10, 10)
    body = """
layer { name: "mp" type: "Pooling" bottom: "data" top: "mp" pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "ap" type: "Pooling" bottom: "data" top: "ap"
  pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "gp" type: "Pooling" bottom: "data" top: "gp" pooling_param { pool: MAX global_pooling: true } }
"""
    refs = {"mp": pool(x, 3, 2, 0, "max"), "ap": pool(x, 3, 2, 1, "avg"), "gp": x.max(axis=(2, 3), keepdims=True)}
    check(_net([1, 5, 10, 10], body), {}, {"data": x}, refs, tmp_path)


def test_activations_eltwise_power(tmp_path: Path) -> None:
    x = _x(1, 3, 4, 5)
    body = """
layer { name: "leaky" type: "ReLU" bottom: "data" top: "leaky" relu_param { negative_slope: 0.1 } }
layer { name: "sig" type: "Sigmoid" bottom: "data" top: "sig" }
layer { name: "tanh" type: "TanH" bottom: "data" top: "tanh" }
layer { name: "elu" type: "ELU" bottom: "data" top: "elu" elu_param { alpha: 0.5 } }
layer { name: "prod" type: "Eltwise" bottom: "sig" bottom: "tanh" top: "prod" eltwise_param { operation: PROD } }
layer { name: "wsum" type: "Eltwise" bottom: "sig" bottom: "tanh" top: "wsum"
  eltwise_param { operation: SUM coeff: 2 coeff: -1 } }
layer { name: "emax" type: "Eltwise" bottom: "sig" bottom: "tanh" top: "emax" eltwise_param { operation: MAX } }
layer { name: "pow" type: "Power" bottom: "sig" top: "pow" power_param { power: 2 scale: 3 shift: 1 } }
layer { name: "drop" type: "Dropout" bottom: "pow" top: "drop" dropout_param { dropout_ratio: 0.3 } }
layer { name: "after" type: "Power" bottom: "drop" top: "after" power_param { scale: 0.5 } }
"""
    sig, th = 1 / (1 + np.exp(-x)), np.tanh(x)
    refs = {"leaky": np.where(x > 0, x, 0.1 * x), "sig": sig, "tanh": th, "elu": np.where(x > 0, x, 0.5 * np.expm1(x)),
            "prod": sig * th, "wsum": 2 * sig - th, "emax": np.maximum(sig, th), "after": (1 + 3 * sig) ** 2 * 0.5}
    check(_net([1, 3, 4, 5], body), {}, {"data": x}, refs, tmp_path)


def test_concat_slice_split_flatten_reshape_permute_softmax(tmp_path: Path) -> None:
    x = _x(2, 6, 3, 4)
    body = """
layer { name: "split" type: "Split" bottom: "data" top: "a" top: "b" }
layer { name: "cat" type: "Concat" bottom: "a" bottom: "b" top: "cat" concat_param { axis: 1 } }
layer { name: "slice" type: "Slice" bottom: "cat" top: "s0" top: "s1" top: "s2"
  slice_param { axis: 1 slice_point: 2 slice_point: 7 } }
layer { name: "flat" type: "Flatten" bottom: "s1" top: "flat" }
layer { name: "perm" type: "Permute" bottom: "s2" top: "perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "resh" type: "Reshape" bottom: "perm" top: "resh" reshape_param { shape { dim: 0 dim: -1 dim: 5 } } }
layer { name: "soft" type: "Softmax" bottom: "resh" top: "soft" softmax_param { axis: 2 } }
"""
    cat = np.concatenate([x, x], axis=1)
    perm = cat[:, 7:].transpose(0, 2, 3, 1)
    resh = perm.reshape(2, -1, 5)
    e = np.exp(resh - resh.max(axis=2, keepdims=True))
    refs = {"s0": cat[:, :2], "flat": cat[:, 2:7].reshape(2, -1), "perm": perm,
            "soft": e / e.sum(axis=2, keepdims=True)}
    check(_net([2, 6, 3, 4], body), {}, {"data": x}, refs, tmp_path, opencv=False)  # cv2 names outputs by layer


def test_bias_and_scale_layers_alone(tmp_path: Path) -> None:
    x = _x(1, 4, 3, 3)
    s, b, c = _x(4), _x(4), _x(4)
    body = """
layer { name: "scale" type: "Scale" bottom: "data" top: "scaled" scale_param { bias_term: true } }
layer { name: "bias" type: "Bias" bottom: "scaled" top: "biased" }
"""
    ref = x * s.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1) + c.reshape(1, -1, 1, 1)
    check(_net([1, 4, 3, 3], body), {"scale": [s, b], "bias": [c]}, {"data": x}, {"biased": ref}, tmp_path,
          opencv=False)  # OpenCV has no Bias layer


def test_lrn_normalize(tmp_path: Path) -> None:
    """LRN and SSD's Normalize on mnnpy and official MNN (OpenCV's LRN/Normalize differ in details)."""
    x = _x(1, 7, 5, 6)
    scale = np.abs(_x(7)) + 0.5
    body = """
layer { name: "lrn" type: "LRN" bottom: "data" top: "lrn" lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 k: 2 } }
layer { name: "norm" type: "Normalize" bottom: "data" top: "norm"
  norm_param { across_spatial: false channel_shared: false eps: 1e-10 } }
"""
    sq = np.pad(x * x, [(0, 0), (1, 1), (0, 0), (0, 0)])
    window = sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]
    lrn = x / (2 + 0.5 / 3 * window) ** 0.75
    norm = x / np.sqrt((x * x).sum(axis=1, keepdims=True) + 1e-10) * scale.reshape(1, -1, 1, 1)
    check(_net([1, 7, 5, 6], body), {"norm": [scale]}, {"data": x}, {"lrn": lrn, "norm": norm}, tmp_path,
          opencv=False)


def test_interp(tmp_path: Path) -> None:
    x = _x(1, 3, 4, 5)
    body = 'layer { name: "up" type: "Interp" bottom: "data" top: "up" interp_param { height: 7 width: 9 } }'

    def axis_weights(out: int, size: int) -> np.ndarray:
        src = np.arange(out) * (size - 1) / (out - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, size - 1)
        m = np.zeros((out, size))
        m[np.arange(out), lo] += 1 - (src - lo)
        m[np.arange(out), hi] += src - lo
        return m

    ref = np.einsum("ph,nchw,qw->ncpq", axis_weights(7, 4), x, axis_weights(9, 5))
    check(_net([1, 3, 4, 5], body), {}, {"data": x}, {"up": ref}, tmp_path, opencv=False)


def test_unsupported_layers_listed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = """
layer { name: "a" type: "Foo" bottom: "data" top: "a" }
layer { name: "b" type: "Foo" bottom: "a" top: "b" }
layer { name: "c" type: "Bar" bottom: "b" top: "c" }
"""
    proto = tmp_path / "deploy.prototxt"
    proto.write_text(_net([1, 1, 2, 2], body))
    with pytest.raises(ConvertError) as info:
        load_net(proto, None)
    assert "2 unsupported Caffe layer type(s)" in str(info.value)
    assert "Foo: a, b" in str(info.value) and "Bar: c" in str(info.value)
    # through `mnnpy convert -f CAFFE`: the same one error, no traceback, nothing written
    from mnnpy.cli.main import main

    model, dst = write_caffemodel(tmp_path / "m.caffemodel", {}), tmp_path / "m.mnn"
    assert main(["convert", "-f", "CAFFE", "--modelFile", str(model), "--prototxt", str(proto), "--MNNModel",
                 str(dst)]) == 2
    err = capsys.readouterr().err
    assert "Foo: a, b" in err and "Bar: c" in err and "Traceback" not in err
    assert not dst.exists()


def test_bad_prototxt_and_missing_weights(tmp_path: Path) -> None:
    proto = tmp_path / "deploy.prototxt"
    proto.write_text("layer { name: ")
    with pytest.raises(ConvertError, match="prototxt"):
        load_net(proto, None)
    proto.write_text(_net([1, 1, 2, 2], 'layer { name: "c" type: "Convolution" bottom: "data" top: "c" '
                                         "convolution_param { num_output: 1 kernel_size: 1 } }"))
    with pytest.raises(ConvertError, match="missing from the caffemodel"):
        load_net(proto, None)


def test_legacy_inputs_crop_argmax(tmp_path: Path) -> None:
    """`input:` + `input_dim:` net inputs (old deploy files), Crop to a reference blob, ArgMax over channels."""
    x, ref = _x(1, 4, 7, 8), _x(1, 4, 3, 5)
    prototxt = """
input: "data"
input_dim: 1 input_dim: 4 input_dim: 7 input_dim: 8
input: "ref"
input_dim: 1 input_dim: 4 input_dim: 3 input_dim: 5
layer { name: "crop" type: "Crop" bottom: "data" bottom: "ref" top: "crop" crop_param { axis: 2 offset: 2 offset: 1 } }
layer { name: "am" type: "ArgMax" bottom: "data" top: "am" argmax_param { axis: 1 } }
"""
    refs = {"crop": x[:, :, 2:5, 1:6], "am": x.argmax(axis=1)[:, None].astype(np.float64)}
    check(prototxt, {}, {"data": x}, {"am": refs["am"]}, tmp_path / "a", opencv=False)
    check(prototxt, {}, {"data": x, "ref": ref}, {"crop": refs["crop"]}, tmp_path / "b", opencv=False)


def test_v1_layers(tmp_path: Path) -> None:
    """Old-format nets (`layers { type: CONVOLUTION }` in the prototxt and V1 layers in the caffemodel)."""
    from mnnpy.converter.frontends.caffe import caffe_net_pb2 as pb

    x, w, b = _x(1, 3, 6, 6), _x(4, 3, 3, 3), _x(4)
    prototxt = """
input: "data"
input_dim: 1 input_dim: 3 input_dim: 6 input_dim: 6
layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv"
  blobs_lr: 1 convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
layers { name: "relu" type: RELU bottom: "conv" top: "conv" }
layers { name: "pool" type: POOLING bottom: "conv" top: "pool" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
"""
    weights = pb.NetParameter()
    layer = weights.layers.add(name="conv", type=pb.V1LayerParameter.CONVOLUTION)
    for arr in (w, b):
        blob = layer.blobs.add(num=1, channels=1, height=1, width=int(arr.size))
        if arr.ndim == 4:
            blob.num, blob.channels, blob.height, blob.width = arr.shape
        blob.data.extend(arr.ravel().tolist())
    (tmp_path / "deploy.prototxt").write_text(prototxt)
    (tmp_path / "w.caffemodel").write_bytes(weights.SerializeToString())
    graph = load_net(tmp_path / "deploy.prototxt", tmp_path / "w.caffemodel")
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net

    from .caffe_build import run_mnnpy

    run_pipeline(graph)
    save_net(graph_to_net(graph), tmp_path / "m.mnn")
    ref = pool(np.maximum(conv(x, w, b, pad=1), 0), 2, 2, 0, "avg")
    got = run_mnnpy(tmp_path / "m.mnn", {"data": x})["pool"]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
