"""End-to-end: small models built with onnx.helper, converted by the official converter, run on mnnpy's CPU
backend and compared with onnxruntime (1e-4 relative)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from support.models import attention_nodes


def _w(rng: np.random.Generator, name: str, *shape: int, scale: float = 0.3) -> object:
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _model(nodes: list, inputs: list, outputs: list, inits: list, opset: int = 17) -> object:
    graph = h.make_graph(nodes, "m", inputs, outputs, inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def mobilenet_v2_block(c: int = 13, expand: int = 4) -> object:
    rng = np.random.default_rng(1)
    e = c * expand
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["e1"]),
        h.make_node("Clip", ["e1", "lo", "hi"], ["e2"]),
        h.make_node("Conv", ["e2", "wd", "bd"], ["d1"], group=e, pads=[1, 1, 1, 1]),
        h.make_node("Clip", ["d1", "lo", "hi"], ["d2"]),
        h.make_node("Conv", ["d2", "w2", "b2"], ["p1"]),
        h.make_node("Add", ["p1", "x"], ["r"]),
        h.make_node("Conv", ["r", "ws", "bs"], ["s"], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("AveragePool", ["s"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("Resize", ["ap", "", "sc"], ["up"], mode="nearest"),
        h.make_node("Concat", ["up", "up"], ["y"], axis=1),
    ]
    inits = [_w(rng, "w1", e, c, 1, 1), _w(rng, "b1", e), _w(rng, "wd", e, 1, 3, 3), _w(rng, "bd", e),
             _w(rng, "w2", c, e, 1, 1), _w(rng, "b2", c), _w(rng, "ws", 3, c, 3, 3), _w(rng, "bs", 3),
             nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi"),
             nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [1, c, 11, 11])],
                  [h.make_tensor_value_info("y", T.FLOAT, None)], inits)


def transformer_layer(d: int = 16, heads: int = 2, seq: int = 5) -> object:
    rng = np.random.default_rng(2)
    hd = d // heads
    nodes = [
        h.make_node("LayerNormalization", ["x", "g1", "be1"], ["ln1"], axis=-1),
        *attention_nodes("ln1", "x", "r1"),
        h.make_node("LayerNormalization", ["r1", "g2", "be2"], ["ln2"], axis=-1),
        h.make_node("MatMul", ["ln2", "wf1"], ["f1"]),
        h.make_node("Add", ["f1", "bf1"], ["f2"]),
        h.make_node("Erf", ["f2"], ["f3"]),
        h.make_node("MatMul", ["f3", "wf2"], ["f4"]),
        h.make_node("Add", ["f4", "r1"], ["y"]),
        h.make_node("ReduceMean", ["y"], ["ym"], axes=[1], keepdims=0),
        h.make_node("Gather", ["y", "idx"], ["yg"], axis=1),
    ]
    inits = [_w(rng, n, d, d) for n in ("wq", "wk", "wv", "wo")]
    inits += [_w(rng, "g1", d), _w(rng, "be1", d), _w(rng, "g2", d), _w(rng, "be2", d), _w(rng, "wf1", d, 2 * d),
              _w(rng, "bf1", 2 * d), _w(rng, "wf2", 2 * d, d),
              nh.from_array(np.array([0, 0, heads, hd], np.int64), "hs"),
              nh.from_array(np.array([0, 0, d], np.int64), "ms"),
              nh.from_array(np.array(1 / np.sqrt(hd), np.float32), "scale"),
              nh.from_array(np.array([0, -1], np.int64), "idx")]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2, seq, d])],
                  [h.make_tensor_value_info(n, T.FLOAT, None) for n in ("y", "ym", "yg")], inits, opset=13)


def test_mobilenet_v2_block(e2e: object) -> None:
    x = np.random.default_rng(3).standard_normal((1, 13, 11, 11)).astype(np.float32)
    e2e.check(mobilenet_v2_block(), {"x": x}, official=True)


def test_transformer_layer(e2e: object) -> None:
    x = np.random.default_rng(4).standard_normal((2, 5, 16)).astype(np.float32)
    e2e.check(transformer_layer(), {"x": x}, official=True)


def bert_embedding_and_mask(vocab: int = 30, d: int = 8, seq: int = 6) -> object:
    rng = np.random.default_rng(6)
    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
        h.make_node("Shape", ["ids"], ["shp"]),
        h.make_node("Gather", ["shp", "one"], ["n"], axis=0),
        h.make_node("Range", ["zero", "n", "one"], ["pos"]),
        h.make_node("Gather", ["pemb", "pos"], ["pe"], axis=0),
        h.make_node("Add", ["e", "pe"], ["x"]),
        h.make_node("LayerNormalization", ["x", "g", "b"], ["xn"], axis=-1),
        h.make_node("Transpose", ["xn"], ["xt"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["xn", "xt"], ["scores"]),
        h.make_node("Unsqueeze", ["mask", "ax1"], ["m1"]),
        h.make_node("Cast", ["m1"], ["mf"], to=T.FLOAT),
        h.make_node("Sub", ["fone", "mf"], ["inv"]),
        h.make_node("Mul", ["inv", "big"], ["bias"]),
        h.make_node("Add", ["scores", "bias"], ["sb"]),
        h.make_node("Softmax", ["sb"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "xn"], ["ctx"]),
        h.make_node("Slice", ["ctx", "s0", "s1", "ax1"], ["cls"]),
        h.make_node("Squeeze", ["cls", "ax1"], ["y"]),
    ]
    inits = [_w(rng, "emb", vocab, d), _w(rng, "pemb", 16, d), _w(rng, "g", d), _w(rng, "b", d),
             nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array(1, np.int64), "one"),
             nh.from_array(np.array([1], np.int64), "ax1"), nh.from_array(np.array(1.0, np.float32), "fone"),
             nh.from_array(np.array(-10000.0, np.float32), "big"), nh.from_array(np.array([0], np.int64), "s0"),
             nh.from_array(np.array([1], np.int64), "s1")]
    ins = [h.make_tensor_value_info("ids", T.INT64, [1, seq]), h.make_tensor_value_info("mask", T.INT64, [1, seq])]
    return _model(nodes, ins, [h.make_tensor_value_info("y", T.FLOAT, None)], inits, opset=13)


def test_bert_embedding_and_mask(e2e: object) -> None:
    ids = np.array([[3, 7, 29, 0, 5, 5]], np.int64)
    mask = np.array([[1, 1, 1, 1, 0, 0]], np.int64)
    e2e.check(bert_embedding_and_mask(), {"ids": ids, "mask": mask})


def recurrent(kind: str, hidden: int = 4, features: int = 3, seq: int = 5) -> object:
    rng = np.random.default_rng(8)
    gates = 4 if kind == "LSTM" else 3
    inits = [_w(rng, "W", 1, gates * hidden, features), _w(rng, "R", 1, gates * hidden, hidden),
             _w(rng, "B", 1, 2 * gates * hidden)]
    attrs = {"hidden_size": hidden} if kind == "LSTM" else {"hidden_size": hidden, "linear_before_reset": 1}
    outs = ["y", "yh", "yc"] if kind == "LSTM" else ["y", "yh"]
    node = h.make_node(kind, ["x", "W", "R", "B"], outs, **attrs)
    return _model([node], [h.make_tensor_value_info("x", T.FLOAT, [seq, 1, features])],
                  [h.make_tensor_value_info(o, T.FLOAT, None) for o in outs], inits, opset=13)


def test_lstm_and_gru_run_as_while(e2e: object) -> None:
    """The converter writes LSTM/GRU as While + body subgraph (ONNX Loop form); GRU with linear_before_reset=1
    (the form its body computes)."""
    x = np.random.default_rng(9).standard_normal((5, 1, 3)).astype(np.float32)
    e2e.check(recurrent("LSTM"), {"x": x})
    e2e.check(recurrent("GRU"), {"x": x})


def if_model() -> object:
    two = nh.from_array(np.array(2, np.float32), "two")
    then_g = h.make_graph([h.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                          [h.make_tensor_value_info("t", T.FLOAT, None)], [two])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", T.FLOAT, None)])
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                  [h.make_tensor_value_info("y", T.FLOAT, None)], [nh.from_array(np.array(0, np.float32), "zero")],
                  opset=13)


def test_if_with_runtime_condition(e2e: object) -> None:
    x = np.abs(np.random.default_rng(10).standard_normal((2, 3))).astype(np.float32)
    e2e.check(if_model(), {"x": x})
    e2e.check(if_model(), {"x": -x})
