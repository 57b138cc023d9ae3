"""Write small example ONNX models (random weights, fixed seed) into examples/ with onnx.helper.

    python tools/make_examples.py            # writes examples/*.onnx
    mnnpy convert -f ONNX --modelFile examples/mobilenet_v2_block.onnx --MNNModel /tmp/m.mnn
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

ROOT = Path(__file__).resolve().parents[1]
F = TensorProto.FLOAT


def _model(nodes: list[Any], inputs: list[tuple[str, list[int]]], inits: dict[str, np.ndarray], opset: int) -> Any:
    graph = oh.make_graph(nodes, "example", [oh.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [oh.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], producer_name="mnnpy/tools/make_examples")
    model.ir_version = 8
    return model


def mobilenet_v2_block(rng: np.random.Generator) -> Any:
    """Expand 1x1 + BN + ReLU6, depthwise 3x3 + BN + ReLU6, project 1x1 + BN, residual Add."""
    nodes, inits = [], {}

    def conv_bn(x: str, cin: int, cout: int, k: int, group: int, act: bool, tag: str) -> str:
        inits[f"{tag}_w"] = rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)
        for part, lo, hi in (("s", 0.5, 1.5), ("b", -0.1, 0.1), ("m", -0.1, 0.1), ("v", 0.5, 1.5)):
            inits[f"{tag}_{part}"] = rng.uniform(lo, hi, cout)
        nodes.append(oh.make_node("Conv", [x, f"{tag}_w"], [f"{tag}_c"], kernel_shape=[k, k], pads=[k // 2] * 4,
                                  group=group))
        nodes.append(oh.make_node("BatchNormalization", [f"{tag}_c", *(f"{tag}_{p}" for p in "sbmv")],
                                  [f"{tag}_bn"]))
        if not act:
            return f"{tag}_bn"
        inits[f"{tag}_lo"], inits[f"{tag}_hi"] = np.float32(0), np.float32(6)
        nodes.append(oh.make_node("Clip", [f"{tag}_bn", f"{tag}_lo", f"{tag}_hi"], [f"{tag}_r"]))
        return f"{tag}_r"

    y = conv_bn("x", 16, 64, 1, 1, True, "expand")
    y = conv_bn(y, 64, 64, 3, 64, True, "dw")
    y = conv_bn(y, 64, 16, 1, 1, False, "project")
    nodes.append(oh.make_node("Add", ["x", y], ["y"]))
    return _model(nodes, [("x", [1, 16, 28, 28])], inits, 13)


def attention_block(rng: np.random.Generator) -> Any:
    """Single-head self-attention with LayerNormalization and an Erf-GELU feed-forward."""
    h = 32
    inits = {name: rng.standard_normal(shape) * 0.2 for name, shape in
             (("wq", (h, h)), ("wk", (h, h)), ("wv", (h, h)), ("w1", (h, 2 * h)), ("w2", (2 * h, h)))}
    inits.update({"g": np.ones(h), "b": np.zeros(h), "scale": np.float32(1 / np.sqrt(h)),
                  "r2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)})
    nodes = [
        oh.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
        oh.make_node("MatMul", ["n", "wq"], ["q"]), oh.make_node("MatMul", ["n", "wk"], ["k"]),
        oh.make_node("MatMul", ["n", "wv"], ["v"]), oh.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        oh.make_node("MatMul", ["q", "kt"], ["s"]), oh.make_node("Mul", ["s", "scale"], ["ss"]),
        oh.make_node("Softmax", ["ss"], ["p"], axis=-1), oh.make_node("MatMul", ["p", "v"], ["a"]),
        oh.make_node("Add", ["x", "a"], ["r"]), oh.make_node("MatMul", ["r", "w1"], ["f"]),
        oh.make_node("Div", ["f", "r2"], ["fd"]), oh.make_node("Erf", ["fd"], ["fe"]),
        oh.make_node("Add", ["fe", "one"], ["fa"]), oh.make_node("Mul", ["f", "fa"], ["fm"]),
        oh.make_node("Mul", ["fm", "half"], ["gelu"]), oh.make_node("MatMul", ["gelu", "w2"], ["o"]),
        oh.make_node("Add", ["r", "o"], ["y"]),
    ]
    return _model(nodes, [("x", [1, 16, h])], inits, 17)


def main(argv: list[str]) -> int:
    """Write every example; prints each path and size."""
    out = ROOT / "examples"
    out.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for name, build in (("mobilenet_v2_block", mobilenet_v2_block), ("attention_block", attention_block)):
        path = out / f"{name}.onnx"
        onnx.save(build(rng), str(path))
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
