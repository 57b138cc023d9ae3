"""split-qkv on onnx.helper models: a fused QKV projection read through Gathers (torch's qkv[0..2] after the
[..., 3, heads, d] reshape), a Split or Slices on the channel axis becomes one projection per piece and no data
selection is left; selections it cannot express as column ranges leave the graph alone. Outputs are checked
against onnxruntime in mnnpy and in official MNN (the default pipeline: split-qkv is on by default)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.graph import Graph
from mnnpy.converter.passes import data_moves, run_pipeline, split_qkv
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net

from .helpers import rel_diff, run_mnn, run_ort
from .test_transformer_models import run_mnnpy
from .transformer_models import _Builder

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402

OP = fb.OpType
N, C, HEADS = 6, 8, 2


def _qkv(g: _Builder, x: str, bias_first: bool = False) -> str:
    w = g.const((g.rng.standard_normal((C, 3 * C)) / np.sqrt(C)).astype(np.float32))
    b = g.const(g.rng.standard_normal(3 * C).astype(np.float32))
    mm = g.op("MatMul", [x, w])
    return g.op("Add", [b, mm] if bias_first else [mm, b])


def _combine(g: _Builder, q: str, k: str, v: str) -> str:
    """q * k + v: every piece reaches the output, in its own role."""
    return g.op("Add", [g.op("Mul", [q, k]), v])


def _convert(g: _Builder, y: str, tmp_path: Path, official: bool = True) -> tuple[Graph, dict[str, int]]:
    g.nodes.append(oh.make_node("Identity", [y], ["y"], name="output"))
    graph = oh.make_graph(g.nodes, "qkv", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, N, C])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)], g.inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": np.random.default_rng(1).standard_normal((1, N, C)).astype(np.float32)}
    converted = load_onnx(model)
    counts = run_pipeline(converted)
    path = tmp_path / "qkv.mnn"
    save_net(graph_to_net(converted), str(path))
    ref = run_ort(model, feeds)[0]
    assert rel_diff(run_mnnpy(path, feeds, ["y"])[0], ref) <= 1e-4
    if official:
        pytest.importorskip("MNN")
        assert rel_diff(run_mnn(path, feeds, ["y"])[0], ref) <= 1e-4
    return converted, counts


def _projections(graph: Graph) -> int:
    return sum(n.op_type in (OP.MatMul, OP.Convolution) for n in graph.nodes)


@pytest.mark.parametrize("unbind", ["gather", "split"])
def test_torch_heads_layout_split_into_three_projections(tmp_path: Path, unbind: str) -> None:
    """Reshape [1, N, 3, H, d] -> Transpose(2, 0, 3, 1, 4) -> q, k, v (Gathers, or Split + Squeeze): three
    projections, each [1, N, H, d] -> Permute; the only data moves left are those three Permutes."""
    from .transformer_models import _unbind

    g = _Builder(2)
    qkv = g.op("Reshape", [_qkv(g, "x"), g.ints(1, N, 3, HEADS, C // HEADS)])
    q, k, v = _unbind(g, g.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4]), unbind)
    graph, counts = _convert(g, _combine(g, q, k, v), tmp_path)
    assert counts[split_qkv.NAME] == 1 and _projections(graph) == 3
    assert [n.op_type for n in data_moves.moves(graph)] == [OP.Permute] * 3


def test_chunk_on_channels_with_the_bias_first(tmp_path: Path) -> None:
    """`q, k, v = qkv.chunk(3, -1)` (Split on the last axis, no Reshape) with Add(bias, MatMul)."""
    g = _Builder(3)
    g.count += 1
    parts = [f"chunk_{i}" for i in range(3)]
    g.nodes.append(oh.make_node("Split", [_qkv(g, "x", bias_first=True), g.ints(C, C, C)], parts, axis=-1))
    graph, counts = _convert(g, _combine(g, *parts), tmp_path)
    assert counts[split_qkv.NAME] == 1 and _projections(graph) == 3 and data_moves.count(graph) == 0


def test_slices_on_channels(tmp_path: Path) -> None:
    """`qkv[..., :C]`, `qkv[..., C:2C]`, `qkv[..., 2C:]` (ONNX Slice -> StridedSlice)."""
    g = _Builder(4)
    y = _qkv(g, "x")
    q, k, v = (g.op("Slice", [y, g.ints(i * C), g.ints((i + 1) * C), g.ints(-1)]) for i in range(3))
    graph, counts = _convert(g, _combine(g, q, k, v), tmp_path)
    assert counts[split_qkv.NAME] == 1 and _projections(graph) == 3 and data_moves.count(graph) == 0


def _left_alone(g: _Builder, y: str, tmp_path: Path) -> None:
    graph, counts = _convert(g, y, tmp_path)
    assert counts[split_qkv.NAME] == 0 and _projections(graph) == 1


def test_strided_selection_is_left_alone(tmp_path: Path) -> None:
    """Every other column is no column range."""
    g = _Builder(5)
    y = _qkv(g, "x")
    q = g.op("Slice", [y, g.ints(0), g.ints(2 * C), g.ints(-1), g.ints(2)])
    k = g.op("Slice", [y, g.ints(1), g.ints(2 * C), g.ints(-1), g.ints(2)])
    _left_alone(g, g.op("Mul", [q, k]), tmp_path)


def test_selection_across_tokens_is_left_alone(tmp_path: Path) -> None:
    """A Gather on the token axis of the [1, N, 3, C] view reads rows, not columns."""
    g = _Builder(6)
    qkv = g.op("Reshape", [_qkv(g, "x"), g.ints(1, N, 3, C)])
    rows = [g.op("Gather", [qkv, g.const(np.array(i, np.int64))], axis=1) for i in range(2)]
    _left_alone(g, g.op("Add", rows), tmp_path)


def test_projection_read_whole_is_left_alone(tmp_path: Path) -> None:
    """Another reader needs the whole projection: splitting would compute it twice."""
    g = _Builder(7)
    y = _qkv(g, "x")
    q, k, v = (g.op("Slice", [y, g.ints(i * C), g.ints((i + 1) * C), g.ints(-1)]) for i in range(3))
    whole = g.op("ReduceSum", [y, g.ints(-1)], keepdims=1)
    _left_alone(g, g.op("Add", [_combine(g, q, k, v), whole]), tmp_path)
