"""Small whole models built in code with onnx.helper (random weights, fixed seed): ResNet, MobileNetV2, encoder."""

from __future__ import annotations

from typing import Any

import numpy as np

from .helpers import F, make_model, oh


class Builder:
    """Accumulates nodes and initializers with generated names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: dict[str, np.ndarray] = {}
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def weight(self, *shape: int, scale: float = 0.3, value: np.ndarray | None = None) -> str:
        name = self.name("w")
        self.inits[name] = value if value is not None else (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(oh.make_node(op_type, inputs, [out], name=out + "_node", **attrs))
        return out

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, act: str | None = "Relu"
                ) -> str:
        w = self.weight(cout, cin // group, k, k, scale=1.0 / np.sqrt(cin // group * k * k))
        y = self.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)
        gamma = self.weight(cout, value=self.rng.uniform(0.5, 1.5, cout).astype(np.float32))
        beta = self.weight(cout, value=self.rng.uniform(-0.2, 0.2, cout).astype(np.float32))
        mean = self.weight(cout, value=self.rng.uniform(-0.2, 0.2, cout).astype(np.float32))
        var = self.weight(cout, value=self.rng.uniform(0.5, 1.5, cout).astype(np.float32))
        y = self.op("BatchNormalization", [y, gamma, beta, mean, var])
        if act == "Relu":
            y = self.op("Relu", [y])
        elif act == "Relu6":
            y = self.op("Clip", [y, self.weight(value=np.float32(0)), self.weight(value=np.float32(6))])
        return y


def resnet_block_model() -> tuple[Any, dict[str, np.ndarray]]:
    """Stem conv-bn-relu + maxpool, a basic block, a strided projection block, GAP, flatten, fc."""
    b = Builder(1)
    y = b.conv_bn("x", 3, 13, 3, stride=2)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    z = b.conv_bn(y, 13, 13, 3)
    z = b.conv_bn(z, 13, 13, 3, act=None)
    y = b.op("Relu", [b.op("Add", [z, y])])
    z = b.conv_bn(y, 13, 20, 3, stride=2)
    z = b.conv_bn(z, 20, 20, 3, act=None)
    short = b.conv_bn(y, 13, 20, 1, stride=2, act=None)
    y = b.op("Relu", [b.op("Add", [z, short])])
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    out = b.op("Gemm", [y, b.weight(10, 20), b.weight(10)], transB=1)
    b.nodes.append(oh.make_node("Identity", [out], ["y"]))
    model = make_model(b.nodes, [("x", F, [1, 3, 33, 31])], ["y"], b.inits, opset=13)
    return model, {"x": b.rng.standard_normal((1, 3, 33, 31)).astype(np.float32)}


def mobilenet_v2_block_model() -> tuple[Any, dict[str, np.ndarray]]:
    """Two inverted-residual blocks (expand 1x1, depthwise 3x3, relu6, project, residual add), then a strided one."""
    b = Builder(2)
    y = b.conv_bn("x", 3, 16, 3, stride=2, act="Relu6")
    for _ in range(2):
        z = b.conv_bn(y, 16, 48, 1, act="Relu6")
        z = b.conv_bn(z, 48, 48, 3, group=48, act="Relu6")
        z = b.conv_bn(z, 48, 16, 1, act=None)
        y = b.op("Add", [y, z])
    z = b.conv_bn(y, 16, 48, 1, act="Relu6")
    z = b.conv_bn(z, 48, 48, 3, stride=2, group=48, act="Relu6")
    b.conv_bn(z, 48, 13, 1, act=None)
    b.nodes[-1].output[0] = "y"
    model = make_model(b.nodes, [("x", F, [1, 3, 29, 27])], ["y"], b.inits, opset=13)
    return model, {"x": b.rng.standard_normal((1, 3, 29, 27)).astype(np.float32)}


def encoder_layer(b: Builder, x: str, hidden: int, heads: int) -> str:
    """One pre-norm encoder layer as PyTorch exports it (reshapes via Shape/Gather/Concat); returns its output."""
    head_dim = hidden // heads
    h = b.op("LayerNormalization", [x, b.weight(hidden), b.weight(hidden)], axis=-1, epsilon=1e-5)
    shape = b.op("Shape", [x])
    n = b.op("Unsqueeze", [b.op("Gather", [shape, b.weight(value=np.array(0, np.int64))], axis=0),
                           b.weight(value=np.array([0], np.int64))])
    s = b.op("Unsqueeze", [b.op("Gather", [shape, b.weight(value=np.array(1, np.int64))], axis=0),
                           b.weight(value=np.array([0], np.int64))])
    split_shape = b.op("Concat", [n, s, b.weight(value=np.array([heads, head_dim], np.int64))], axis=0)
    scale = 1.0 / np.sqrt(hidden)

    def proj(src: str, perm: list[int]) -> str:
        y = b.op("Add", [b.op("MatMul", [src, b.weight(hidden, hidden, scale=scale)]), b.weight(hidden)])
        return b.op("Transpose", [b.op("Reshape", [y, split_shape])], perm=perm)

    q = proj(h, [0, 2, 1, 3])
    k = proj(h, [0, 2, 3, 1])
    v = proj(h, [0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), b.weight(value=np.float32(np.sqrt(head_dim)))])
    attn = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    attn = b.op("Transpose", [attn], perm=[0, 2, 1, 3])
    attn = b.op("Reshape", [attn, b.weight(value=np.array([0, 0, hidden], np.int64))])
    attn = b.op("Add", [b.op("MatMul", [attn, b.weight(hidden, hidden, scale=scale)]), b.weight(hidden)])
    x = b.op("Add", [x, attn])
    h = b.op("LayerNormalization", [x, b.weight(hidden), b.weight(hidden)], axis=-1, epsilon=1e-5)
    h = b.op("Add", [b.op("MatMul", [h, b.weight(hidden, 2 * hidden, scale=scale)]), b.weight(2 * hidden)])
    erf = b.op("Erf", [b.op("Div", [h, b.weight(value=np.float32(np.sqrt(2.0)))])])
    gelu = b.op("Mul", [b.op("Mul", [h, b.op("Add", [erf, b.weight(value=np.float32(1.0))])]),
                        b.weight(value=np.float32(0.5))])
    ffn = b.op("Add", [b.op("MatMul", [gelu, b.weight(2 * hidden, hidden, scale=scale)]), b.weight(hidden)])
    return b.op("Add", [x, ffn])


def encoder_layer_model(batch: int = 2, seq: int = 9, hidden: int = 16, heads: int = 2, layers: int = 1
                        ) -> tuple[Any, dict[str, np.ndarray]]:
    """`layers` encoder layers (layers=4, hidden=256, heads=4, seq=128 is the issue's BERT encoder)."""
    b = Builder(3)
    x = "x"
    for _ in range(layers):
        x = encoder_layer(b, x, hidden, heads)
    b.nodes.append(oh.make_node("Identity", [x], ["y"]))
    model = make_model(b.nodes, [("x", F, [batch, seq, hidden])], ["y"], b.inits, opset=17)
    return model, {"x": b.rng.standard_normal((batch, seq, hidden)).astype(np.float32)}


def vit_model(image: int = 32, patch: int = 8, hidden: int = 192, heads: int = 3, layers: int = 2
              ) -> tuple[Any, dict[str, np.ndarray]]:
    """ViT-tiny topology (patch conv, class token, position embedding, encoder layers, head) with fewer layers."""
    b = Builder(5)
    tokens = (image // patch) ** 2
    emb = b.op("Conv", ["x", b.weight(hidden, 3, patch, patch, scale=0.05), b.weight(hidden)],
               kernel_shape=[patch, patch], strides=[patch, patch])
    seq = b.op("Transpose", [b.op("Reshape", [emb, b.weight(value=np.array([0, hidden, -1], np.int64))])],
               perm=[0, 2, 1])
    cls = b.weight(1, 1, hidden, scale=0.02)
    shape = b.op("Shape", ["x"])
    batch = b.op("Gather", [shape, b.weight(value=np.array([0], np.int64))], axis=0)
    cls_shape = b.op("Concat", [batch, b.weight(value=np.array([1, hidden], np.int64))], axis=0)
    x = b.op("Concat", [b.op("Expand", [cls, cls_shape]), seq], axis=1)
    x = b.op("Add", [x, b.weight(1, tokens + 1, hidden, scale=0.02)])
    for _ in range(layers):
        x = encoder_layer(b, x, hidden, heads)
    x = b.op("LayerNormalization", [x, b.weight(hidden), b.weight(hidden)], axis=-1)
    first = b.op("Gather", [x, b.weight(value=np.array(0, np.int64))], axis=1)
    b.nodes.append(oh.make_node("Gemm", [first, b.weight(10, hidden, scale=0.05), b.weight(10)], ["y"], transB=1))
    model = make_model(b.nodes, [("x", F, [2, 3, image, image])], ["y"], b.inits, opset=17)
    return model, {"x": b.rng.standard_normal((2, 3, image, image)).astype(np.float32)}


def resnet18_model(size: int = 64) -> tuple[Any, dict[str, np.ndarray]]:
    """ResNet-18 topology (11.7 M random weights, ~47 MB), for conversion-speed and end-to-end checks."""
    b = Builder(18)
    y = b.conv_bn("x", 3, 64, 7, stride=2)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)):
        z = b.conv_bn(y, cin, cout, 3, stride=stride)
        z = b.conv_bn(z, cout, cout, 3, act=None)
        short = y if stride == 1 and cin == cout else b.conv_bn(y, cin, cout, 1, stride=stride, act=None)
        y = b.op("Relu", [b.op("Add", [z, short])])
        cin = cout
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    b.nodes.append(oh.make_node("Gemm", [y, b.weight(1000, 512, scale=0.05), b.weight(1000)], ["y"], transB=1))
    model = make_model(b.nodes, [("x", F, [1, 3, size, size])], ["y"], b.inits, opset=13)
    return model, {"x": b.rng.standard_normal((1, 3, size, size)).astype(np.float32)}


def unet_block_model() -> tuple[Any, dict[str, np.ndarray]]:
    """A 3x3-conv UNet level: down (conv-bn-relu x2, maxpool), bottleneck, up (ConvTranspose and Resize), concat."""
    b = Builder(4)
    skip = b.conv_bn(b.conv_bn("x", 3, 8, 3), 8, 8, 3)
    down = b.op("MaxPool", [skip], kernel_shape=[2, 2], strides=[2, 2])
    mid = b.conv_bn(b.conv_bn(down, 8, 16, 3), 16, 16, 3)
    up = b.op("ConvTranspose", [mid, b.weight(16, 8, 2, 2), b.weight(8)], strides=[2, 2])
    resized = b.op("Resize", [mid, "", b.weight(value=np.array([1, 1, 2, 2], np.float32))], mode="nearest")
    merged = b.op("Concat", [skip, up, resized], axis=1)
    out = b.conv_bn(merged, 32, 5, 3, act=None)
    b.nodes.append(oh.make_node("Sigmoid", [out], ["y"]))
    model = make_model(b.nodes, [("x", F, [1, 3, 16, 20])], ["y"], b.inits, opset=13)
    return model, {"x": b.rng.standard_normal((1, 3, 16, 20)).astype(np.float32)}


def mobilenet_v2_model(size: int = 64) -> tuple[Any, dict[str, np.ndarray]]:
    """Full MobileNetV2 topology (width 1.0, 17 inverted residual blocks, 3.5 M random weights)."""
    b = Builder(6)
    y = b.conv_bn("x", 3, 32, 3, stride=2, act="Relu6")
    cin = 32
    for expand, cout, repeats, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                                          (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(repeats):
            s = stride if i == 0 else 1
            hidden = cin * expand
            z = b.conv_bn(y, cin, hidden, 1, act="Relu6") if expand != 1 else y
            z = b.conv_bn(z, hidden, hidden, 3, stride=s, group=hidden, act="Relu6")
            z = b.conv_bn(z, hidden, cout, 1, act=None)
            y = b.op("Add", [y, z]) if s == 1 and cin == cout else z
            cin = cout
    y = b.conv_bn(y, 320, 1280, 1, act="Relu6")
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    b.nodes.append(oh.make_node("Gemm", [y, b.weight(1000, 1280, scale=0.03), b.weight(1000)], ["y"], transB=1))
    model = make_model(b.nodes, [("x", F, [1, 3, size, size])], ["y"], b.inits, opset=13)
    return model, {"x": b.rng.standard_normal((1, 3, size, size)).astype(np.float32)}
