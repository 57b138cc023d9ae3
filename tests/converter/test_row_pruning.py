"""prune-rows (ops before a constant-index row selection run on the selected rows) and fold-layer-norm-affine
(gamma / beta of a LayerNorm read only by constant-weight MatMuls folded into them), on ViT-like (pre-norm) and
BERT-like (post-norm) models built with onnx.helper: outputs vs onnxruntime within 1e-4 in mnnpy and in official MNN,
and the cases the passes must leave alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.graph import Graph
from mnnpy.converter.passes import fold_layer_norm_affine, prune_rows, run_pipeline
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import runners

from .helpers import make_model, rel_diff, run_mnn, run_ort
from .transformer_models import bench_models

onnx = pytest.importorskip("onnx")
from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402

OP = fb.OpType
TOKENS, DIM, HEADS = 9, 24, 3


def _builder(seed: int) -> Any:
    """tools/bench_models.py's graph builder with random LayerNorm gamma / beta (the bench models use 1 and 0)."""
    bench = bench_models()

    class Builder(bench._Graph):
        def layer_norm(self, x: str, c: int) -> str:
            gamma = (1.0 + 0.3 * self.rng.standard_normal(c)).astype(np.float32)
            beta = (0.2 * self.rng.standard_normal(c)).astype(np.float32)
            return self.op("LayerNormalization", [x, self.const(gamma), self.const(beta)], axis=-1, epsilon=1e-5)

    return Builder(seed), bench._attention


def _finish(g: Any, out: str, index: Any, head: bool = True) -> Any:
    """`out[:, index]` (Gather) or, for a `slice`, `out[:, start:stop:step]` (Slice), then a linear head."""
    if isinstance(index, slice):
        bounds = (np.array([v], np.int64) for v in (index.start, index.stop, 1, index.step or 1))
        y = g.op("Slice", [out, *(g.const(v) for v in bounds)])
        index = [0]
    else:
        y = g.op("Gather", [out, g.const(np.asarray(index, np.int64))], axis=1)
    if head:
        y = g.op("Gemm", [y if np.ndim(index) == 0 else g.op("Reshape", [y, g.const(np.array([-1, DIM], np.int64))]),
                          g.weight(10, DIM), g.const(np.full(10, 0.1, np.float32))], transB=1)
    return make_model(g.nodes, [("input", TensorProto.FLOAT, [1, TOKENS, DIM])], [y],
                      {i.name: onnx.numpy_helper.to_array(i) for i in g.inits})


def vit_like(index: Any = 0, layers: int = 2, head: bool = True) -> Any:
    """Pre-norm blocks (x + attn(LN(x)), x + mlp(LN(x))), final LayerNorm, `x[:, index]`, linear head."""
    g, attention = _builder(11)
    y = "input"
    for _ in range(layers):
        y = g.op("Add", [y, attention(g, g.layer_norm(y, DIM), TOKENS, DIM, HEADS)])
        y = g.op("Add", [y, g.linear(g.gelu(g.linear(g.layer_norm(y, DIM), DIM, 4 * DIM)), 4 * DIM, DIM)])
    return _finish(g, g.layer_norm(y, DIM), index, head)


def bert_like(index: Any = 0, layers: int = 2) -> Any:
    """Post-norm blocks (LN(x + attn(x)), LN(x + mlp(x))), then `x[:, index]` and a linear head."""
    g, attention = _builder(12)
    y = "input"
    for _ in range(layers):
        y = g.layer_norm(g.op("Add", [y, attention(g, y, TOKENS, DIM, HEADS)]), DIM)
        y = g.layer_norm(g.op("Add", [y, g.linear(g.gelu(g.linear(y, DIM, 4 * DIM)), 4 * DIM, DIM)]), DIM)
    return _finish(g, y, index)


def convert(model: Any, skip: set[str] | None = None) -> tuple[Graph, dict[str, int]]:
    graph = load_onnx(model)
    return graph, run_pipeline(graph, skip=skip)


def check(model: Any, tmp_path: Path, official: bool = True) -> dict[str, int]:
    """Convert with the default pipeline; mnnpy's (and official MNN's) outputs must match onnxruntime's."""
    graph, counts = convert(model)
    path = tmp_path / "pruned.mnn"
    save_net(graph_to_net(graph), str(path))
    feeds = {"input": np.random.default_rng(3).standard_normal((1, TOKENS, DIM)).astype(np.float32)}
    names = [o.name for o in model.graph.output]
    refs = run_ort(model, feeds)
    for got, ref in zip(runners.run_list(path, feeds, names), refs, strict=True):
        assert list(got.shape) == list(ref.shape)
        assert rel_diff(got, ref) <= 1e-4
    if official:
        pytest.importorskip("MNN")
        for got, ref in zip(run_mnn(path, feeds, names), refs, strict=True):
            assert rel_diff(got, ref) <= 1e-4
    return counts


def test_vit_last_block_runs_on_the_class_token(tmp_path: Path) -> None:
    counts = check(vit_like(), tmp_path)
    # the last block after its Attention: context Reshape, output projection + bias, residual Add, LayerNorm, MLP
    # (2 MatMuls + 2 biases, GELU), residual Add, final LayerNorm
    assert counts[prune_rows.NAME] == 12
    assert counts[fold_layer_norm_affine.NAME] == 4  # the pre-attention and pre-MLP LayerNorms of both blocks


@pytest.mark.parametrize("index", [[0, 4], -1, [2], [3, 3], slice(1, 6, 2), slice(-1, TOKENS),
                                   slice(TOKENS - 1, 2, -3)])
def test_vit_row_lists_and_negative_index(tmp_path: Path, index: Any) -> None:
    assert check(vit_like(index), tmp_path)[prune_rows.NAME] == 12


def test_bert_last_block_pruned_norms_not_folded(tmp_path: Path) -> None:
    counts = check(bert_like(), tmp_path)
    # after the last Attention: context Reshape, projection + bias, residual Add, LayerNorm, MLP (5 ops), Add, LN
    assert counts[prune_rows.NAME] == 12
    assert counts[fold_layer_norm_affine.NAME] == 0  # every LayerNorm output also feeds a residual Add


def test_bench_vit_pruned(tmp_path: Path) -> None:
    path = bench_models().vit_tiny(tmp_path / "vit.onnx", size=32, patch=8, dim=24, heads=3, layers=2)
    graph, counts = convert(onnx.load(str(path)))
    assert counts[prune_rows.NAME] == 12
    gathers = [n for n in graph.nodes if n.op_type == OP.GatherV2]
    assert len(gathers) == 2 and all(graph.constants[n.inputs[1]].tolist() == [0] for n in gathers)


def _small(nodes: list[Any], inits: dict[str, np.ndarray], extra: list[tuple[str, int, list[int]]] | None = None
           ) -> Any:
    return make_model(nodes, [("input", TensorProto.FLOAT, [1, TOKENS, DIM]), *(extra or [])], ["y"], inits)


def _norm_inits(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"g": (1 + 0.3 * rng.standard_normal(DIM)).astype(np.float32),
            "b": (0.2 * rng.standard_normal(DIM)).astype(np.float32),
            "w": rng.standard_normal((DIM, DIM)).astype(np.float32), "i0": np.array(0, np.int64)}


def test_token_mixing_op_stops_pruning(tmp_path: Path) -> None:
    """A Softmax over the token axis right before the selection: nothing may move above it."""
    nodes = [oh.make_node("Softmax", ["input"], ["s"], axis=1),
             oh.make_node("Gather", ["s", "i0"], ["y"], axis=1)]
    model = _small(nodes, {"i0": np.array(0, np.int64)})
    assert check(model, tmp_path)[prune_rows.NAME] == 0
    # a MatMul of two activations (x x^T: rows mix) in front of per-token ops: pruned down to the MatMul only
    nodes = [oh.make_node("Transpose", ["input"], ["t"], perm=[0, 2, 1]), oh.make_node("MatMul", ["input", "t"], ["m"]),
             oh.make_node("Relu", ["m"], ["r"]), oh.make_node("Gather", ["r", "i0"], ["y"], axis=1)]
    assert check(_small(nodes, {"i0": np.array(0, np.int64)}), tmp_path)[prune_rows.NAME] == 1


def test_runtime_index_and_channel_axis_left_alone(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    nodes = [oh.make_node("LayerNormalization", ["input", "g", "b"], ["n"], axis=-1),
             oh.make_node("Gather", ["n", "idx"], ["y"], axis=1)]
    model = _small(nodes, _norm_inits(rng), [("idx", TensorProto.INT64, [])])
    assert convert(model)[1][prune_rows.NAME] == 0
    nodes = [oh.make_node("LayerNormalization", ["input", "g", "b"], ["n"], axis=-1),
             oh.make_node("Gather", ["n", "i0"], ["y"], axis=2)]
    assert check(_small(nodes, _norm_inits(rng)), tmp_path)[prune_rows.NAME] == 0


def test_norm_feeding_an_add_keeps_its_affine(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    nodes = [oh.make_node("LayerNormalization", ["input", "g", "b"], ["n"], axis=-1),
             oh.make_node("MatMul", ["n", "w"], ["m"]), oh.make_node("Add", ["m", "n"], ["y"])]
    assert check(_small(nodes, _norm_inits(rng)), tmp_path)[fold_layer_norm_affine.NAME] == 0


def test_norm_folded_into_matmuls_without_bias(tmp_path: Path) -> None:
    """Two MatMuls (one with a bias Add, one without) read the LayerNorm: both get gamma, both beta W."""
    rng = np.random.default_rng(7)
    inits = {**_norm_inits(rng), "w2": rng.standard_normal((DIM, 8)).astype(np.float32),
             "bias": rng.standard_normal(DIM).astype(np.float32)}
    nodes = [oh.make_node("LayerNormalization", ["input", "g", "b"], ["n"], axis=-1),
             oh.make_node("MatMul", ["n", "w"], ["m"]), oh.make_node("Add", ["m", "bias"], ["a"]),
             oh.make_node("MatMul", ["n", "w2"], ["m2"]), oh.make_node("Concat", ["a", "m2"], ["y"], axis=-1)]
    graph, counts = convert(_small(nodes, inits))
    assert counts[fold_layer_norm_affine.NAME] == 1
    norm = next(n for n in graph.nodes if n.op_type == OP.LayerNorm)
    assert norm.param.gamma is None and norm.param.beta is None
    check(_small(nodes, inits), tmp_path)


@pytest.mark.parametrize("skip", [prune_rows.NAME, fold_layer_norm_affine.NAME])
def test_each_pass_alone(tmp_path: Path, skip: str) -> None:
    """With either pass skipped the other alone keeps the outputs (mnnpy vs onnxruntime)."""
    model = vit_like([1, 3])
    feeds = {"input": np.random.default_rng(8).standard_normal((1, TOKENS, DIM)).astype(np.float32)}
    ref = run_ort(model, feeds)[0]
    graph, counts = convert(model, {skip})
    assert skip not in counts and sum(counts[n] for n in (prune_rows.NAME, fold_layer_norm_affine.NAME)
                                      if n != skip) > 0
    path = tmp_path / "one.mnn"
    save_net(graph_to_net(graph), str(path))
    got = runners.run_list(path, feeds, [model.graph.output[0].name])[0]
    assert list(got.shape) == [2, 10] and rel_diff(got, ref) <= 1e-4


def test_shapes_through_patch_convolution(tmp_path: Path) -> None:
    """torch's `conv(x).flatten(2).transpose(1, 2)` (Reshape [1, C, -1]): the token count comes from the
    convolution's output size, so the LayerNorm, MatMul and ReLU after it run on the selected row."""
    rng = np.random.default_rng(9)
    inits = {**_norm_inits(rng), "cw": rng.standard_normal((DIM, 3, 4, 4)).astype(np.float32),
             "flat": np.array([1, DIM, -1], np.int64)}
    nodes = [oh.make_node("Conv", ["image", "cw"], ["c"], kernel_shape=[4, 4], strides=[4, 4]),
             oh.make_node("Reshape", ["c", "flat"], ["r"]), oh.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
             oh.make_node("LayerNormalization", ["t", "g", "b"], ["n"], axis=-1),
             oh.make_node("MatMul", ["n", "w"], ["m"]), oh.make_node("Relu", ["m"], ["a"]),
             oh.make_node("Gather", ["a", "i0"], ["y"], axis=1)]
    model = make_model(nodes, [("image", TensorProto.FLOAT, [1, 3, 12, 16])], ["y"], inits)
    graph, counts = convert(model)
    assert counts[prune_rows.NAME] == 3
    path = tmp_path / "patch.mnn"
    save_net(graph_to_net(graph), str(path))
    feeds = {"image": rng.standard_normal((1, 3, 12, 16)).astype(np.float32)}
    ref = run_ort(model, feeds)[0]
    assert rel_diff(runners.run_list(path, feeds, ["y"])[0], ref) <= 1e-4
    pytest.importorskip("MNN")
    assert rel_diff(run_mnn(path, feeds, ["y"])[0], ref) <= 1e-4


@pytest.mark.parametrize("backend", ["opencl", "vulkan"])
def test_pruned_folded_vit_on_gpu_backends(tmp_path: Path, backend: str) -> None:
    """The one-row ops, the row Gathers and the LayerNorms without gamma / beta on mnnpy's GPU backends."""

    runners.require_backend(backend)
    model = vit_like([0, 5])
    graph, counts = convert(model)
    assert counts[prune_rows.NAME] == 12 and counts[fold_layer_norm_affine.NAME] == 4
    path = tmp_path / "gpu.mnn"
    save_net(graph_to_net(graph), str(path))
    feeds = {"input": np.random.default_rng(10).standard_normal((1, TOKENS, DIM)).astype(np.float32)}
    name = model.graph.output[0].name
    got = runners.run_list(path, feeds, [name], config={"backend": backend})[0]
    assert rel_diff(got, run_ort(model, feeds)[0]) <= 1e-4


def test_rank2_rows(tmp_path: Path) -> None:
    """[L, C] without a batch axis: rows are axis 0."""
    rng = np.random.default_rng(11)
    inits = {**_norm_inits(rng), "flat": np.array([TOKENS, DIM], np.int64), "rows": np.array([1, 7], np.int64)}
    nodes = [oh.make_node("Reshape", ["input", "flat"], ["x"]),
             oh.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
             oh.make_node("MatMul", ["n", "w"], ["m"]), oh.make_node("Sigmoid", ["m"], ["s"]),
             oh.make_node("Add", ["s", "x"], ["a"]), oh.make_node("Gather", ["a", "rows"], ["y"], axis=0)]
    assert check(_small(nodes, inits), tmp_path)[prune_rows.NAME] == 4
