"""Acceptance for the transformer passes on whole models built with onnx.helper: BERT-4L and ViT-tiny (small sizes,
tools/bench_models.py's builders) and two Swin-style blocks (alone, and as Swin-T's classifier ends: pooled). After
the passes the data moves (every op that moves tensor data: Permute / Transpose / Raster, and Slices, Concats and
constant-index Gathers of data tensors such as torch.roll's halves and the q/k/v selections; data_moves.py, via
token_reorder.count_moves) must drop to <= 25% of before, and mnnpy's outputs must match onnxruntime within 1e-4;
the BERT and ViT files (compatible mode) must also run in official MNN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.graph import Graph
from mnnpy.converter.passes import (
    OPT_IN,
    data_moves,
    fuse_attention,
    fuse_gelu_tanh,
    fuse_group_norm,
    fuse_rms_norm,
    hoist_transpose_above_split,
    run_pipeline,
    split_before_transpose,
    split_qkv,
    token_reorder,
)
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import runners

import mnnpy

from .helpers import make_model, rel_diff, run_mnn, run_ort
from .transformer_models import bench_models, swin_blocks

onnx = pytest.importorskip("onnx")

OP = fb.OpType
NEW = {fuse_attention.NAME, fuse_attention.EXTENDED_NAME, fuse_gelu_tanh.NAME, fuse_group_norm.NAME,
       fuse_rms_norm.NAME, split_before_transpose.NAME, split_qkv.NAME, hoist_transpose_above_split.NAME}


def optimise(graph: Graph, fused: bool, extended: bool = False) -> Graph:
    """The converter's pipeline without the transformer passes (`fused=False`), with its default ones, or with the
    opt-in ones too (`extended`: what `mnnpy convert --transformerFuse` runs)."""
    if not fused:
        run_pipeline(graph, skip=NEW)
    else:
        run_pipeline(graph, enable=OPT_IN if extended else None)
    return graph


def moves(graph: Graph) -> int:
    """The data-moving ops of a graph (data_moves.py)."""
    return token_reorder.count_moves(graph)


def run_mnnpy(path: Path, feeds: dict[str, np.ndarray], outputs: list[str]) -> list[np.ndarray]:
    return runners.run_list(path, feeds, outputs)


def _check(model: Any, feeds: dict[str, np.ndarray], tmp_path: Path, extended: bool = False,
           official: bool = True) -> tuple[int, int, Graph]:
    """Convert without and with the passes; returns (moves before, moves after, fused graph) after checking
    the fused file against onnxruntime in mnnpy (and official MNN)."""
    before = optimise(load_onnx(model), fused=False)
    after = optimise(load_onnx(model), fused=True, extended=extended)
    path = tmp_path / "fused.mnn"
    save_net(graph_to_net(after), str(path))
    names = [o.name for o in model.graph.output]
    refs = run_ort(model, feeds)
    for got, ref in zip(run_mnnpy(path, feeds, names), refs, strict=True):
        assert rel_diff(got, ref) <= 1e-4
    if official:
        pytest.importorskip("MNN")
        for got, ref in zip(run_mnn(path, feeds, names), refs, strict=True):
            assert rel_diff(got, ref) <= 1e-4
    return moves(before), moves(after), after


def _bench_model(tmp_path: Path, name: str, **sizes: Any) -> Any:
    path = getattr(bench_models(), name)(tmp_path / f"{name}.onnx", **sizes)
    return onnx.load(str(path))


def test_bert_attention_fused_and_transposes_gone(tmp_path: Path) -> None:
    model = _bench_model(tmp_path, "bert4l", seq=16, dim=32, heads=2, layers=4)
    feeds = {"input": np.random.default_rng(0).standard_normal((1, 16, 32)).astype(np.float32)}
    before, after, graph = _check(model, feeds, tmp_path)
    assert [n.op_type for n in graph.nodes].count(OP.Attention) == 4
    assert before == 16 and after == 0  # the q/k/v/context Permutes of 4 layers (the same counting Permutes only)


def test_vit_attention_fused_and_transposes_gone(tmp_path: Path) -> None:
    model = _bench_model(tmp_path, "vit_tiny", size=32, patch=8, dim=24, heads=3, layers=3)
    feeds = {"input": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    before, after, graph = _check(model, feeds, tmp_path)
    assert [n.op_type for n in graph.nodes].count(OP.Attention) == 3
    # before: 13 Permutes (the patch embedding's [1, C, T] -> [1, T, C], q/k/v/context of 3 layers), the class
    # token Concat and the class-token selection, which prune-rows (on in both) turns into two one-row Gathers (of
    # the last Attention's output and of the residual stream before it); after: the patch Permute, the Concat and
    # those two Gathers (Permutes only: 13 -> 1)
    assert (before, after) == (16, 4) and after <= before / 4


@pytest.mark.parametrize("unbind", ["gather", "split"])
def test_swin_blocks_window_attention(tmp_path: Path, unbind: str) -> None:
    """Window attention over a batch of windows with per-head relative position bias and the shifted-window mask:
    official MNN's Attention cannot run that (batch > 1, per-head mask), so the extended mode is used (mnnpy only).
    The fused QKV projection is split in three (split-qkv: no q/k/v selections), the q/k/v and context transposes
    go into the Attention op, and token-reorder keeps the residual stream in window order (the rolls go with the
    partitions): one reorder into block 1's windows, one from block 1's to block 2's shifted windows, one back at
    the output. Fewer reorders are impossible while Attention needs each window's tokens contiguous: every path
    input -> attention 1 -> attention 2 -> output changes the order three times. Before: 8 Permutes, the rolls'
    8 Slices and 4 Concats, and the q/k/v selections (6 Gathers, or 2 Splits into 3): 26 -> 3; counting Permutes
    only: 8 -> 3."""
    model, feeds = swin_blocks(unbind=unbind)
    before, after, graph = _check(model, feeds, tmp_path, extended=True, official=False)
    ops = [n.op_type for n in graph.nodes]
    assert ops.count(OP.Attention) == 2 and ops.count(OP.UnaryOp) == 2  # the tanh GELUs
    assert not any(op in (OP.Permute, OP.Transpose, OP.Raster) for op in ops)
    assert sum(token_reorder.token_gather(graph, n) for n in graph.nodes) == 3
    assert all(token_reorder.token_gather(graph, n) for n in data_moves.moves(graph))  # rolls gone, QKV split
    assert before == 26 and after == 3 and after <= before / 4


@pytest.mark.parametrize("unbind", ["gather", "split"])
def test_swin_classifier_moves_quartered(tmp_path: Path, unbind: str) -> None:
    """The same blocks ending as Swin-T's classifier (LayerNorm, mean over tokens, Linear head): the mean ignores
    the token order, so the reorder back to image order goes too (counting Permutes only: 8 -> 2)."""
    model, feeds = swin_blocks(unbind=unbind, classes=10)
    before, after, graph = _check(model, feeds, tmp_path, extended=True, official=False)
    assert [n.op_type for n in graph.nodes].count(OP.Attention) == 2
    assert before == 26 and after == 2 and after <= before / 4


def test_group_norm_swish_end_to_end(tmp_path: Path) -> None:
    from onnx import TensorProto
    from onnx import helper as oh

    rng = np.random.default_rng(5)
    nodes = [oh.make_node("GroupNormalization", ["x", "g", "b"], ["n"], num_groups=4, epsilon=1e-5),
             oh.make_node("Sigmoid", ["n"], ["s"]), oh.make_node("Mul", ["n", "s"], ["y"])]
    inits = {"g": rng.standard_normal(8).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32)}
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 8, 5, 6])], ["y"], inits, opset=21)
    feeds = {"x": rng.standard_normal((1, 8, 5, 6)).astype(np.float32)}
    _, _, graph = _check(model, feeds, tmp_path, extended=True, official=False)
    assert [n.op_type for n in graph.nodes] == [OP.GroupNorm] and graph.nodes[0].param.bSwish == 1


@pytest.mark.parametrize("backend", ["opencl", "vulkan"])
def test_fused_models_on_gpu_backends(tmp_path: Path, backend: str) -> None:
    """The fused BERT (compatible) and Swin (extended) files run their Attention ops on the GPU backends."""

    runners.require_backend(backend)
    bert = _bench_model(tmp_path, "bert4l", seq=16, dim=32, heads=2, layers=1)
    bert_feeds = {"input": np.random.default_rng(0).standard_normal((1, 16, 32)).astype(np.float32)}
    for (model, feeds), extended in (((bert, bert_feeds), False), (swin_blocks(), True)):
        path = tmp_path / "gpu.mnn"
        save_net(graph_to_net(optimise(load_onnx(model), fused=True, extended=extended)), str(path))
        interp = mnnpy.Interpreter(str(path))
        session = interp.createSession({"backend": backend})
        for name, x in feeds.items():
            tensor = interp.getSessionInput(session, name)
            tensor.copyFrom(mnnpy.Tensor(list(x.shape), mnnpy.Halide_Type_Float, x, mnnpy.Tensor_DimensionType_Caffe))
        interp.runSession(session)
        out = model.graph.output[0].name
        assert rel_diff(interp.getSessionOutput(session, out).getNumpyData(), run_ort(model, feeds)[0]) <= 1e-4
        ran = {c.get("backend") for c in session.info()["commands"] if c["type"] == "Attention"}
        assert ran == {backend}


def test_rms_norm_end_to_end(tmp_path: Path) -> None:
    """LLaMA's RMSNorm as torch exports it -> one LayerNorm(useRMSNorm), also run by official MNN."""
    from onnx import TensorProto
    from onnx import helper as oh

    rng = np.random.default_rng(6)
    nodes = [oh.make_node("Pow", ["x", "two"], ["sq"]),
             oh.make_node("ReduceMean", ["sq", "axes"], ["ms"], keepdims=1),
             oh.make_node("Add", ["ms", "eps"], ["v"]), oh.make_node("Sqrt", ["v"], ["r"]),
             oh.make_node("Reciprocal", ["r"], ["inv"]), oh.make_node("Mul", ["x", "inv"], ["n"]),
             oh.make_node("Mul", ["w", "n"], ["y"])]
    inits = {"two": np.float32(2.0), "axes": np.array([-1], np.int64), "eps": np.float32(1e-6),
             "w": rng.standard_normal(16).astype(np.float32)}
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 7, 16])], ["y"], inits, opset=18)
    feeds = {"x": rng.standard_normal((1, 7, 16)).astype(np.float32)}
    _, _, graph = _check(model, feeds, tmp_path)
    assert [n.op_type for n in graph.nodes] == [OP.LayerNorm] and graph.nodes[0].param.useRmsnorm


def test_swin_blocks_compatible_mode_costs_no_transposes(tmp_path: Path) -> None:
    """Without --transformerFuse the windowed attention stays unfused (official MNN cannot run it as Attention): the
    default passes still split the QKV projection (split-qkv), so per block one Permute of each of q, k and v
    replaces the 5-D Permute and the Split into three (4 moves -> 3; 26 -> 24 in all); the file runs in official
    MNN."""
    model, feeds = swin_blocks(unbind="split")
    before, after, graph = _check(model, feeds, tmp_path)
    assert OP.Attention not in [n.op_type for n in graph.nodes]
    assert (before, after) == (26, 24)


def test_convert_cli_transformer_fuse_flag(tmp_path: Path) -> None:
    """`mnnpy convert` fuses Swin's window attention only with --transformerFuse (the file is then mnnpy-only)."""
    from mnnpy.schema.io import load_net

    from mnnpy.cli.main import main

    model, _ = swin_blocks()
    src = tmp_path / "swin.onnx"
    onnx.save(model, str(src))
    counts = {}
    for flag in ([], ["--transformerFuse"]):
        dst = tmp_path / f"swin{len(flag)}.mnn"
        assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst), "-q", *flag]) == 0
        counts[bool(flag)] = sum(op.type == OP.Attention for op in load_net(dst).oplists)
    assert counts == {False: 0, True: 2}
