"""token_moves / token-reorder on small ONNX graphs: the mappings found, when the rewrite applies or is undone, and
the outputs against onnxruntime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.passes import OPT_IN, run_pipeline, token_moves, token_reorder
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import save_net

from .helpers import rel_diff, run_ort
from .test_transformer_models import run_mnnpy
from .transformer_models import _Builder

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402

SIZE, WINDOW, DIM = 8, 4, 8
GRID = SIZE // WINDOW


def _partition(g: _Builder, z: str) -> str:
    z = g.op("Reshape", [z, g.ints(1, GRID, WINDOW, GRID, WINDOW, DIM)])
    return g.op("Reshape", [g.op("Transpose", [z], perm=[0, 1, 3, 2, 4, 5]), g.ints(GRID * GRID, WINDOW ** 2, DIM)])


def _reverse(g: _Builder, z: str) -> str:
    z = g.op("Reshape", [z, g.ints(1, GRID, GRID, WINDOW, WINDOW, DIM)])
    return g.op("Reshape", [g.op("Transpose", [z], perm=[0, 1, 3, 2, 4, 5]), g.ints(1, SIZE * SIZE, DIM)])


def _model(g: _Builder, y: str) -> tuple[Any, dict[str, np.ndarray]]:
    g.nodes.append(oh.make_node("Identity", [y], ["y"], name="output"))
    graph = oh.make_graph(g.nodes, "t", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, SIZE * SIZE, DIM])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)], g.inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    return model, {"x": np.random.default_rng(2).standard_normal((1, SIZE * SIZE, DIM)).astype(np.float32)}


def _window_block(g: _Builder, y: str, shift: int) -> str:
    """LayerNorm, (roll), partition, Linear, a token mixer inside each window (Softmax over the window's tokens),
    reverse, (roll back), residual Add."""
    z = g.op("Reshape", [g.layer_norm(y, DIM), g.ints(1, SIZE, SIZE, DIM)])
    if shift:
        z = g.roll(g.roll(z, -shift, SIZE, 1), -shift, SIZE, 2)
    z = g.op("Softmax", [g.linear(_partition(g, z), DIM, DIM)], axis=1)
    z = g.op("Reshape", [_reverse(g, z), g.ints(1, SIZE, SIZE, DIM)])
    if shift:
        z = g.roll(g.roll(z, shift, SIZE, 1), shift, SIZE, 2)
    return g.op("Add", [y, g.op("Reshape", [z, g.ints(1, SIZE * SIZE, DIM)])])


def _convert(model: Any, tmp_path: Path, feeds: dict[str, np.ndarray]) -> tuple[int, int, dict[str, int]]:
    """(moves without token-reorder, moves with it, pass counts), after checking the output against onnxruntime."""
    before = load_onnx(model)
    run_pipeline(before, skip={token_reorder.NAME}, enable=OPT_IN)
    after = load_onnx(model)
    counts = run_pipeline(after, enable=OPT_IN)
    path = tmp_path / "m.mnn"
    save_net(graph_to_net(after), str(path))
    assert rel_diff(run_mnnpy(path, feeds, ["y"])[0], run_ort(model, feeds)[0]) <= 1e-4
    return token_reorder.count_moves(before), token_reorder.count_moves(after), counts


def test_token_moves_computes_roll_then_partition() -> None:
    g = _Builder(1)
    z = g.op("Reshape", [g.op("Relu", ["x"]), g.ints(1, SIZE, SIZE, DIM)])
    z = _partition(g, g.roll(g.roll(z, -2, SIZE, 1), -2, SIZE, 2))
    model, _ = _model(g, g.op("Relu", [z]))
    moves = token_moves.find(load_onnx(model))
    grid = np.roll(np.arange(SIZE * SIZE).reshape(SIZE, SIZE), (-2, -2), (0, 1))
    expected = grid.reshape(GRID, WINDOW, GRID, WINDOW).transpose(0, 2, 1, 3).ravel()
    assert len(moves) == 1 and moves[0].channels == DIM and moves[0].shape == [GRID * GRID, WINDOW ** 2, DIM]
    np.testing.assert_array_equal(moves[0].index, expected)


def test_token_moves_rejects_a_chain_that_drops_tokens() -> None:
    g = _Builder(1)
    z = g.op("Reshape", [g.op("Relu", ["x"]), g.ints(1, SIZE, SIZE, DIM)])
    z = g.op("Slice", [z, g.ints(0), g.ints(SIZE // 2), g.ints(1)])  # half the rows: not a reordering
    z = g.op("Transpose", [g.op("Reshape", [z, g.ints(1, SIZE // 2, GRID, WINDOW, DIM)])], perm=[0, 2, 1, 3, 4])
    model, _ = _model(g, g.op("Relu", [z]))
    assert token_moves.find(load_onnx(model)) == []


def test_single_block_is_left_alone(tmp_path: Path) -> None:
    """One block with the output in image order: holding the order back cannot save a move (in + out = 2), so the
    rewrite is undone."""
    g = _Builder(3)
    model, feeds = _model(g, _window_block(g, "x", 0))
    before, after, counts = _convert(model, tmp_path, feeds)
    assert before == after == 2 and counts[token_reorder.NAME] == 0


def test_shifted_blocks_keep_the_window_order(tmp_path: Path) -> None:
    g = _Builder(4)
    y = _window_block(g, _window_block(g, "x", 0), 2)
    model, feeds = _model(g, g.op("Mul", [y, g.const(np.float32(0.5))]))
    before, after, counts = _convert(model, tmp_path, feeds)
    # before: 4 partition / reverse Permutes and the two rolls' 8 Slices and 4 Concats (4 counting Permutes only)
    assert before == 16 and after == 3 and counts[token_reorder.NAME] == before - after


def test_token_mean_drops_the_last_reorder_but_a_channel_mean_keeps_it(tmp_path: Path) -> None:
    for axes, moves in (([1], 1), ([2], 2)):
        g = _Builder(5)
        y = g.op("ReduceMean", [_window_block(g, "x", 0)], axes=axes, keepdims=1)
        model, feeds = _model(g, y)
        before, after, _ = _convert(model, tmp_path, feeds)
        assert (before, after) == (2, moves)


def test_reordered_swin_without_fused_attention_runs_in_official_mnn(tmp_path: Path) -> None:
    """token-reorder alone (the attention left unfused, as official MNN needs): the reorders are plain GatherV2s, so
    official MNN runs the file too."""
    from .helpers import run_mnn
    from .transformer_models import swin_blocks

    pytest.importorskip("MNN")
    model, feeds = swin_blocks(classes=10)
    graph = load_onnx(model)
    counts = run_pipeline(graph, enable={token_reorder.NAME})
    assert counts[token_reorder.NAME] > 0
    path = tmp_path / "swin.mnn"
    save_net(graph_to_net(graph), str(path))
    ref = run_ort(model, feeds)[0]
    assert rel_diff(run_mnnpy(path, feeds, ["y"])[0], ref) <= 1e-4
    assert rel_diff(run_mnn(path, feeds, ["y"])[0], ref) <= 1e-4
