"""Benchmark models built with onnx.helper (random weights, fixed seed), one function per model writing an .onnx.

    python tools/bench_models.py OUT_DIR [resnet18 mobilenetv2 bert4l vit_tiny unet_block]

Models (batch 1, float32, opset 17):

* ``resnet18``: torchvision's ResNet-18 topology, 224x224, BatchNorm kept as separate nodes (the converters fold it).
* ``mobilenetv2``: MobileNetV2 (width 1.0), 224x224, ReLU6 as Clip.
* ``bert4l``: a 4-layer post-norm BERT encoder, hidden 256, 4 heads, FFN 1024, sequence 128, erf GELU.
* ``vit_tiny``: ViT-Ti/16 (dim 192, 3 heads, 12 pre-norm layers, MLP 768), 224x224, class-token head.
* ``unet_block``: a UNet double-conv block: two 3x3 convolutions, 64 channels, 256x256, ReLU.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

OPSET = 17


class _Graph:
    """Collects nodes and initializers with generated names (seeded random weights)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, value: np.ndarray | float | list, base: str = "c") -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, *shape: int, scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        std = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        return self.const((self.rng.standard_normal(shape) * std).astype(np.float32), "w")

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op_type.lower())
        self.nodes.append(oh.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, bias: bool = False) -> str:
        inputs = [x, self.weight(cout, cin // group, k, k)]
        if bias:
            inputs.append(self.const(np.zeros(cout, np.float32) + 0.01, "b"))
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group)

    def bn(self, x: str, c: int) -> str:
        params = [self.rng.uniform(0.5, 1.5, c), self.rng.uniform(-0.1, 0.1, c), self.rng.uniform(-0.1, 0.1, c),
                  self.rng.uniform(0.5, 1.5, c)]
        return self.op("BatchNormalization", [x, *(self.const(p.astype(np.float32), "bn") for p in params)])

    def relu6(self, x: str) -> str:
        return self.op("Clip", [x, self.const(np.float32(0.0)), self.const(np.float32(6.0))])

    def linear(self, x: str, cin: int, cout: int) -> str:
        y = self.op("MatMul", [x, self.weight(cin, cout, scale=1.0 / np.sqrt(cin))])
        return self.op("Add", [y, self.const(np.zeros(cout, np.float32) + 0.01, "b")])

    def layer_norm(self, x: str, c: int) -> str:
        return self.op("LayerNormalization", [x, self.const(np.ones(c, np.float32)),
                                              self.const(np.zeros(c, np.float32))], axis=-1, epsilon=1e-5)

    def gelu(self, x: str) -> str:
        erf = self.op("Erf", [self.op("Div", [x, self.const(np.float32(np.sqrt(2.0)))])])
        y = self.op("Mul", [x, self.op("Add", [erf, self.const(np.float32(1.0))])])
        return self.op("Mul", [y, self.const(np.float32(0.5))])

    def save(self, path: Path, x_shape: list[int], out: str, name: str) -> Path:
        self.nodes.append(oh.make_node("Identity", [out], ["output"], name="output"))
        graph = oh.make_graph(self.nodes, name, [oh.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
                              [oh.make_tensor_value_info("output", TensorProto.FLOAT, None)], self.inits)
        model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", OPSET)], producer_name="mnnpy-bench")
        model.ir_version = 8
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(path))
        return path


def resnet18(path: Path, size: int = 224) -> Path:
    """ResNet-18 (basic blocks 2-2-2-2, widths 64-512), 1000 classes."""
    g = _Graph(18)
    y = g.op("Relu", [g.bn(g.conv("input", 3, 64, 7, stride=2), 64)])
    y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            z = g.op("Relu", [g.bn(g.conv(y, cin, cout, 3, stride), cout)])
            z = g.bn(g.conv(z, cout, cout, 3), cout)
            short = g.bn(g.conv(y, cin, cout, 1, stride), cout) if stride != 1 or cin != cout else y
            y = g.op("Relu", [g.op("Add", [z, short])])
            cin = cout
    y = g.op("Flatten", [g.op("GlobalAveragePool", [y])])
    y = g.op("Gemm", [y, g.weight(1000, 512), g.const(np.zeros(1000, np.float32), "b")], transB=1)
    return g.save(path, [1, 3, size, size], y, "resnet18")


def mobilenetv2(path: Path, size: int = 224) -> Path:
    """MobileNetV2 1.0: inverted residuals (t, c, n, s) as in the paper, 1000 classes."""
    g = _Graph(2)
    y = g.relu6(g.bn(g.conv("input", 3, 32, 3, stride=2), 32))
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            z = g.relu6(g.bn(g.conv(y, cin, hidden, 1), hidden)) if t != 1 else y
            z = g.relu6(g.bn(g.conv(z, hidden, hidden, 3, stride, group=hidden), hidden))
            z = g.bn(g.conv(z, hidden, c, 1), c)
            y = g.op("Add", [y, z]) if stride == 1 and cin == c else z
            cin = c
    y = g.relu6(g.bn(g.conv(y, cin, 1280, 1), 1280))
    y = g.op("Flatten", [g.op("GlobalAveragePool", [y])])
    y = g.op("Gemm", [y, g.weight(1000, 1280), g.const(np.zeros(1000, np.float32), "b")], transB=1)
    return g.save(path, [1, 3, size, size], y, "mobilenetv2")


def _attention(g: _Graph, x: str, seq: int, dim: int, heads: int) -> str:
    hd = dim // heads
    split = g.const(np.array([1, seq, heads, hd], np.int64), "shape")
    q, k, v = (g.op("Reshape", [g.linear(x, dim, dim), split]) for _ in range(3))
    q = g.op("Transpose", [q], perm=[0, 2, 1, 3])
    k = g.op("Transpose", [k], perm=[0, 2, 3, 1])
    v = g.op("Transpose", [v], perm=[0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.float32(1.0 / np.sqrt(hd)))])
    ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.const(np.array([1, seq, dim], np.int64))])
    return g.linear(ctx, dim, dim)


def bert4l(path: Path, seq: int = 128, dim: int = 256, heads: int = 4, layers: int = 4) -> Path:
    """A BERT encoder (post-norm): input is the embedded sequence [1, seq, dim]."""
    g = _Graph(4)
    y = "input"
    for _ in range(layers):
        y = g.layer_norm(g.op("Add", [y, _attention(g, y, seq, dim, heads)]), dim)
        ffn = g.linear(g.gelu(g.linear(y, dim, 4 * dim)), 4 * dim, dim)
        y = g.layer_norm(g.op("Add", [y, ffn]), dim)
    return g.save(path, [1, seq, dim], y, "bert4l")


def vit_tiny(path: Path, size: int = 224, patch: int = 16, dim: int = 192, heads: int = 3, layers: int = 12) -> Path:
    """ViT-Ti/16: patch embedding conv, class token, learned positions, pre-norm encoder, linear head."""
    g = _Graph(5)
    tokens = (size // patch) ** 2
    y = g.op("Conv", ["input", g.weight(dim, 3, patch, patch), g.const(np.zeros(dim, np.float32), "b")],
             kernel_shape=[patch, patch], strides=[patch, patch])
    y = g.op("Transpose", [g.op("Reshape", [y, g.const(np.array([1, dim, tokens], np.int64))])], perm=[0, 2, 1])
    y = g.op("Concat", [g.weight(1, 1, dim, scale=0.02), y], axis=1)
    y = g.op("Add", [y, g.weight(1, tokens + 1, dim, scale=0.02)])
    for _ in range(layers):
        y = g.op("Add", [y, _attention(g, g.layer_norm(y, dim), tokens + 1, dim, heads)])
        mlp = g.linear(g.gelu(g.linear(g.layer_norm(y, dim), dim, 4 * dim)), 4 * dim, dim)
        y = g.op("Add", [y, mlp])
    y = g.op("Gather", [g.layer_norm(y, dim), g.const(np.array(0, np.int64))], axis=1)
    y = g.op("Gemm", [y, g.weight(1000, dim), g.const(np.zeros(1000, np.float32), "b")], transB=1)
    return g.save(path, [1, 3, size, size], y, "vit_tiny")


def unet_block(path: Path, size: int = 256, channels: int = 64) -> Path:
    """A UNet double-conv block: (3x3 conv + bias + ReLU) twice at ``channels`` channels and ``size``²."""
    g = _Graph(6)
    y = g.op("Relu", [g.conv("input", channels, channels, 3, bias=True)])
    y = g.op("Relu", [g.conv(y, channels, channels, 3, bias=True)])
    return g.save(path, [1, channels, size, size], y, "unet_block")


MODELS: dict[str, Callable[[Path], Path]] = {
    "resnet18": resnet18, "mobilenetv2": mobilenetv2, "bert4l": bert4l, "vit_tiny": vit_tiny, "unet_block": unet_block,
}


def main(argv: list[str]) -> int:
    """Write the named models (default: all) as OUT_DIR/<name>.onnx."""
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    for name in argv[1:] or list(MODELS):
        path = MODELS[name](out / f"{name}.onnx")
        print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
