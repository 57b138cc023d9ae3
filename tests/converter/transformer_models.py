"""Transformer test models built with onnx.helper: small BERT and ViT from tools/bench_models.py, and a Swin-style
pair of blocks (window attention, then shifted windows with the attention mask) written the way torch exports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx import helper as oh
from support.models import bench_models  # noqa: F401 - re-exported for the converter tests

ROOT = Path(__file__).resolve().parents[2]


class _Builder:
    """Nodes and initializers with generated names (seeded random weights)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def const(self, value: Any, dtype: Any = None) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(np.array(values, np.int64))

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(oh.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def linear(self, x: str, cin: int, cout: int) -> str:
        w = self.const((self.rng.standard_normal((cin, cout)) / np.sqrt(cin)).astype(np.float32))
        b = self.const((self.rng.standard_normal(cout) * 0.1).astype(np.float32))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, c: int) -> str:
        g = self.const((1.0 + 0.1 * self.rng.standard_normal(c)).astype(np.float32))
        b = self.const((0.1 * self.rng.standard_normal(c)).astype(np.float32))
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    def gelu_tanh(self, x: str) -> str:
        """GELU(approximate='tanh') as torch exports it before opset 20."""
        cube = self.op("Pow", [x, self.const(np.float32(3.0))])
        inner = self.op("Add", [x, self.op("Mul", [cube, self.const(np.float32(0.044715))])])
        t = self.op("Tanh", [self.op("Mul", [inner, self.const(np.float32(np.sqrt(2.0 / np.pi)))])])
        half = self.op("Mul", [x, self.const(np.float32(0.5))])
        return self.op("Mul", [half, self.op("Add", [t, self.const(np.float32(1.0))])])

    def roll(self, x: str, shift: int, size: int, axis: int) -> str:
        """torch.roll along one axis: two Slices and a Concat."""
        s = shift % size
        head = self.op("Slice", [x, self.ints(size - s), self.ints(size), self.ints(axis)])
        tail = self.op("Slice", [x, self.ints(0), self.ints(size - s), self.ints(axis)])
        return self.op("Concat", [head, tail], axis=axis)


def _unbind(g: _Builder, x: str, how: str) -> list[str]:
    """torch's `qkv[0], qkv[1], qkv[2]` (three Gathers) or `qkv.unbind(0)` (Split into ones, then Squeezes)."""
    if how == "gather":
        return [g.op("Gather", [x, g.const(np.array(i, np.int64))], axis=0) for i in range(3)]
    g.count += 1
    parts = [f"split_{g.count}_{i}" for i in range(3)]
    g.nodes.append(oh.make_node("Split", [x, g.ints(1, 1, 1)], parts, name=parts[0], axis=0))
    return [g.op("Squeeze", [part, g.ints(0)]) for part in parts]


def _window_attention(g: _Builder, x: str, windows: int, n: int, dim: int, heads: int, mask: np.ndarray | None,
                      window: int, unbind: str) -> str:
    hd = dim // heads
    qkv = g.op("Reshape", [g.linear(x, dim, 3 * dim), g.ints(windows, n, 3, heads, hd)])
    qkv = g.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
    q, k, v = _unbind(g, qkv, unbind)
    q = g.op("Mul", [q, g.const(np.float32(hd ** -0.5))])
    attn = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    table = g.rng.standard_normal(((2 * window - 1) ** 2, heads)).astype(np.float32) * 0.5
    coords = np.stack(np.meshgrid(np.arange(window), np.arange(window), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + window - 1
    index = (rel[..., 0] * (2 * window - 1) + rel[..., 1]).reshape(-1)
    bias = g.op("Reshape", [g.op("Gather", [g.const(table), g.const(index.astype(np.int64))], axis=0),
                            g.ints(n, n, heads)])
    bias = g.op("Unsqueeze", [g.op("Transpose", [bias], perm=[2, 0, 1]), g.ints(0)])
    attn = g.op("Add", [attn, bias])
    if mask is not None:
        attn = g.op("Reshape", [attn, g.ints(1, windows, heads, n, n)])
        attn = g.op("Add", [attn, g.const(mask[None, :, None].astype(np.float32))])
        attn = g.op("Reshape", [attn, g.ints(-1, heads, n, n)])
    out = g.op("MatMul", [g.op("Softmax", [attn], axis=-1), v])
    out = g.op("Reshape", [g.op("Transpose", [out], perm=[0, 2, 1, 3]), g.ints(windows, n, dim)])
    return g.linear(out, dim, dim)


def _shift_mask(size: int, window: int, shift: int) -> np.ndarray:
    """Swin's attention mask for shifted windows: [nW, N, N], 0 within a region and -100 across regions."""
    img = np.zeros((size, size))
    bounds = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
    label = 0
    for hs in bounds:
        for ws in bounds:
            img[hs, ws] = label
            label += 1
    wins = img.reshape(size // window, window, size // window, window).transpose(0, 2, 1, 3).reshape(-1, window ** 2)
    diff = wins[:, None, :] - wins[:, :, None]
    return np.where(diff != 0, -100.0, 0.0)


def swin_blocks(size: int = 8, window: int = 4, dim: int = 32, heads: int = 2, unbind: str = "gather",
                classes: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
    """Two Swin blocks (regular, then shifted windows), input [1, size*size, dim]; returns (model, feeds).

    `unbind`: "gather" (q, k, v = qkv[0], qkv[1], qkv[2]) or "split" (qkv.unbind(0): Split + Squeeze).
    `classes` > 0 ends the model the way Swin-T's classifier does: LayerNorm, mean over the tokens, a Linear head
    (output [1, classes])."""
    g = _Builder(7)
    windows, n, grid = (size // window) ** 2, window * window, size // window
    y = "x"
    for shift in (0, window // 2):
        z = g.op("Reshape", [g.layer_norm(y, dim), g.ints(1, size, size, dim)])
        if shift:
            z = g.roll(g.roll(z, -shift, size, 1), -shift, size, 2)
        z = g.op("Reshape", [z, g.ints(1, grid, window, grid, window, dim)])
        z = g.op("Reshape", [g.op("Transpose", [z], perm=[0, 1, 3, 2, 4, 5]), g.ints(windows, n, dim)])
        mask = _shift_mask(size, window, shift) if shift else None
        z = _window_attention(g, z, windows, n, dim, heads, mask, window, unbind)
        z = g.op("Reshape", [z, g.ints(1, grid, grid, window, window, dim)])
        z = g.op("Reshape", [g.op("Transpose", [z], perm=[0, 1, 3, 2, 4, 5]), g.ints(1, size, size, dim)])
        if shift:
            z = g.roll(g.roll(z, shift, size, 1), shift, size, 2)
        y = g.op("Add", [y, g.op("Reshape", [z, g.ints(1, size * size, dim)])])
        mlp = g.linear(g.gelu_tanh(g.linear(g.layer_norm(y, dim), dim, 4 * dim)), 4 * dim, dim)
        y = g.op("Add", [y, mlp])
    if classes:
        pooled = g.op("ReduceMean", [g.layer_norm(y, dim)], axes=[1], keepdims=0)
        y = g.linear(pooled, dim, classes)
    g.nodes.append(oh.make_node("Identity", [y], ["y"], name="output"))
    graph = oh.make_graph(g.nodes, "swin", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, size * size, dim])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)], g.inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": np.random.default_rng(3).standard_normal((1, size * size, dim)).astype(np.float32)}
    return model, feeds
