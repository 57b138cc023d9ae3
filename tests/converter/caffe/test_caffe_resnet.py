"""A Caffe ResNet (conv + BatchNorm + Scale + in-place ReLU, residual Eltwise, pooling, InnerProduct, Softmax) built
from a prototxt with random weights: mnnpy, official MNN and OpenCV all match a numpy reference within 1e-4."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .caffe_build import check, conv, pool

PROTOTXT = """
name: "tiny_resnet"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 17 dim: 17 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  param { lr_mult: 1 } convolution_param { num_output: 8 kernel_size: 3 stride: 2 pad: 1 bias_term: false
  weight_filler { type: "msra" } } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { use_global_stats: true } }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "res_a" type: "Convolution" bottom: "pool1" top: "res_a"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false } }
layer { name: "bn_a" type: "BatchNorm" bottom: "res_a" top: "res_a" }
layer { name: "scale_a" type: "Scale" bottom: "res_a" top: "res_a" scale_param { bias_term: true } }
layer { name: "relu_a" type: "ReLU" bottom: "res_a" top: "res_a" }
layer { name: "res_b" type: "Convolution" bottom: "res_a" top: "res_b"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 } }
layer { name: "bn_b" type: "BatchNorm" bottom: "res_b" top: "res_b" }
layer { name: "scale_b" type: "Scale" bottom: "res_b" top: "res_b" scale_param { bias_term: true } }
layer { name: "sum" type: "Eltwise" bottom: "pool1" bottom: "res_b" top: "sum" }
layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
layer { name: "gap" type: "Pooling" bottom: "sum" top: "gap" pooling_param { pool: AVE global_pooling: true } }
layer { name: "fc" type: "InnerProduct" bottom: "gap" top: "fc" inner_product_param { num_output: 5 } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
"""


def _bn(rng: np.random.Generator, c: int) -> list[np.ndarray]:
    factor = 2.0
    return [rng.standard_normal(c) * factor, (rng.random(c) + 0.5) * factor, np.asarray([factor])]


def _scale(rng: np.random.Generator, c: int) -> list[np.ndarray]:
    return [rng.random(c) + 0.5, rng.standard_normal(c) * 0.1]


def _apply_bn_scale(y: np.ndarray, bn: list[np.ndarray], sc: list[np.ndarray]) -> np.ndarray:
    mean, var = bn[0] / bn[2][0], bn[1] / bn[2][0]
    y = (y - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5)
    return y * sc[0].reshape(1, -1, 1, 1) + sc[1].reshape(1, -1, 1, 1)


def test_resnet_block_batchnorm_scale(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    w = {name: rng.standard_normal(shape) * 0.3 for name, shape in
         (("conv1", (8, 3, 3, 3)), ("res_a", (8, 8, 3, 3)), ("res_b", (8, 8, 3, 3)), ("fc", (5, 8)))}
    weights = {"conv1": [w["conv1"]], "bn1": _bn(rng, 8), "scale1": _scale(rng, 8), "res_a": [w["res_a"]],
               "bn_a": _bn(rng, 8), "scale_a": _scale(rng, 8), "res_b": [w["res_b"], rng.standard_normal(8)],
               "bn_b": _bn(rng, 8), "scale_b": _scale(rng, 8), "fc": [w["fc"], rng.standard_normal(5)]}
    x = rng.standard_normal((1, 3, 17, 17)).astype(np.float32)
    y = conv(x, w["conv1"], None, stride=2, pad=1)
    y = np.maximum(_apply_bn_scale(y, weights["bn1"], weights["scale1"]), 0)
    p = pool(y, 3, 2, 0, "max")
    a = np.maximum(_apply_bn_scale(conv(p, w["res_a"], None, pad=1), weights["bn_a"], weights["scale_a"]), 0)
    b = _apply_bn_scale(conv(a, w["res_b"], weights["res_b"][1], pad=1), weights["bn_b"], weights["scale_b"])
    s = np.maximum(p + b, 0)
    logits = s.mean(axis=(2, 3)) @ w["fc"].T + weights["fc"][1]
    e = np.exp(logits - logits.max())
    net = check(PROTOTXT, weights, {"data": x}, {"prob": e / e.sum(), "pool1": p}, tmp_path)
    types = [op.type for op in net.oplists]
    assert 77 not in types, "every BatchNorm/Scale folds into its convolution"
    assert set(net.outputName) == {"prob", "pool1"}


def test_default_outputs_are_unread_blobs(tmp_path: Path) -> None:
    from mnnpy.converter.frontends.caffe import load

    rng = np.random.default_rng(1)
    weights = {"conv1": [rng.standard_normal((8, 3, 3, 3))], "bn1": _bn(rng, 8), "scale1": _scale(rng, 8),
               "res_a": [rng.standard_normal((8, 8, 3, 3))], "bn_a": _bn(rng, 8), "scale_a": _scale(rng, 8),
               "res_b": [rng.standard_normal((8, 8, 3, 3)), rng.standard_normal(8)], "bn_b": _bn(rng, 8),
               "scale_b": _scale(rng, 8), "fc": [rng.standard_normal((5, 8)), rng.standard_normal(5)]}
    from .caffe_build import write_caffemodel

    proto = tmp_path / "deploy.prototxt"
    proto.write_text(PROTOTXT)
    graph = load(proto, write_caffemodel(tmp_path / "w.caffemodel", weights))
    assert graph.outputs == ["prob"]
    assert list(graph.inputs) == ["data"]
