"""Small Keras-style TF models built as GraphDefs: a MobileNetV2 inverted-residual network and a ResNet block,
converted and compared with a numpy reference on mnnpy and official MNN; layout permutes stay at the edges."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .tf_build import GraphBuilder, check, conv2d, depthwise, pool

RNG = np.random.default_rng(11)
PERMUTE = 46


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * (2.0 / np.prod(shape[:-1])) ** 0.5).astype(np.float32)


class _Net:
    """Builds the GraphDef and the numpy reference side by side."""

    def __init__(self, shape: list[int]) -> None:
        self.g = GraphBuilder()
        self.x = RNG.standard_normal(shape).astype(np.float32)
        self.node = self.g.placeholder("input", shape)
        self.ref = self.x.astype(np.float64)

    def conv(self, k: int, oc: int, stride: int = 1, padding: str = "SAME") -> None:
        w = _w(k, k, self.ref.shape[-1], oc)
        self.node = self.g.op("Conv2D", [self.node, self.g.const(w)], strides=[1, stride, stride, 1],
                              padding=padding, T=1)
        self.ref = conv2d(self.ref, w, (stride, stride), padding)

    def dwconv(self, stride: int = 1, padding: str = "SAME") -> None:
        w = _w(3, 3, self.ref.shape[-1], 1)
        self.node = self.g.op("DepthwiseConv2dNative", [self.node, self.g.const(w)], strides=[1, stride, stride, 1],
                              padding=padding, T=1)
        self.ref = depthwise(self.ref, w, (stride, stride), padding)

    def bn(self, act: str | None = None) -> None:
        c = self.ref.shape[-1]
        gamma, beta = RNG.random(c) + 0.5, RNG.standard_normal(c) * 0.1
        mean, var = RNG.standard_normal(c) * 0.1, RNG.random(c) + 0.5
        consts = [self.g.const(v.astype(np.float32)) for v in (gamma, beta, mean, var)]
        self.node = self.g.op("FusedBatchNormV3", [self.node, *consts], epsilon=1e-3, is_training=False, T=1, U=1)
        self.ref = (self.ref - mean) / np.sqrt(var + 1e-3) * gamma + beta
        if act == "relu6":
            self.node = self.g.op("Relu6", [self.node], T=1)
            self.ref = np.clip(self.ref, 0, 6)
        elif act == "relu":
            self.node = self.g.op("Relu", [self.node], T=1)
            self.ref = np.maximum(self.ref, 0)

    def head(self, classes: int) -> np.ndarray:
        pooled = self.g.op("Mean", [self.node, self.g.const(np.asarray([1, 2], np.int32), dtype=np.int32)],
                           keep_dims=False, T=1, Tidx=3)
        w, b = _w(self.ref.shape[-1], classes), RNG.standard_normal(classes).astype(np.float32)
        logits = self.g.op("BiasAdd", [self.g.op("MatMul", [pooled, self.g.const(w)], T=1), self.g.const(b)], T=1)
        self.g.op("Softmax", [logits], name="probs", T=1)
        z = self.ref.mean(axis=(1, 2)) @ w + b
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def test_mobilenet_v2_style(tmp_path: Path) -> None:
    net = _Net([1, 20, 20, 3])
    net.node = net.g.op("Pad", [net.node, net.g.const(np.asarray([[0, 0], [0, 1], [0, 1], [0, 0]], np.int32),
                                                        dtype=np.int32)], T=1, Tpaddings=3)
    net.ref = np.pad(net.ref, [(0, 0), (0, 1), (0, 1), (0, 0)])
    net.conv(3, 16, 2, "VALID")
    net.bn("relu6")
    for expand, stride in ((4, 1), (4, 2)):
        start, start_ref, c = net.node, net.ref, net.ref.shape[-1]
        net.conv(1, c * expand)
        net.bn("relu6")
        net.dwconv(stride)
        net.bn("relu6")
        net.conv(1, c if stride == 1 else 24)
        net.bn()
        if stride == 1:
            net.node = net.g.op("AddV2", [start, net.node], T=1)
            net.ref = start_ref + net.ref
    net.conv(1, 32)
    net.bn("relu6")
    probs = net.head(10)
    mnn = check(net.g, {"input": net.x}, {"probs": probs}, tmp_path)
    types = [op.type for op in mnn.oplists]
    assert types.count(PERMUTE) <= 1, f"only the input is permuted to NCHW, got {types.count(PERMUTE)} permutes"
    assert 77 not in types, "every batch norm folds into a convolution"


def test_resnet_style(tmp_path: Path) -> None:
    net = _Net([1, 16, 16, 3])
    net.conv(7, 8, 2)
    net.bn("relu")
    net.node = net.g.op("MaxPool", [net.node], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME", T=1)
    net.ref = pool(net.ref, 3, 2, "SAME", "max")
    shortcut, shortcut_ref = net.node, net.ref
    net.conv(3, 8)
    net.bn("relu")
    net.conv(3, 8)
    net.bn()
    net.node = net.g.op("Relu", [net.g.op("AddV2", [net.node, shortcut], T=1)], T=1)
    net.ref = np.maximum(net.ref + shortcut_ref, 0)
    concat = net.g.op("ConcatV2", [net.node, shortcut, net.g.const(-1, dtype=np.int32)], name="cat", N=2, T=1,
                      Tidx=3)
    net.node = concat
    net.ref = np.concatenate([net.ref, shortcut_ref], axis=-1)
    probs = net.head(7)
    mnn = check(net.g, {"input": net.x}, {"probs": probs}, tmp_path)
    assert [op.type for op in mnn.oplists].count(PERMUTE) <= 1
