"""CPU Attention: the blocked online-softmax kernel against numpy, and its memory plan against sequence length."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import attention as blocked
from mnnpy.converter.graph import Graph, InputSpec
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net
from support import references

import mnnpy


@pytest.mark.parametrize(("shape", "kv", "mask_shape", "causal", "blocks"), [
    ((1, 13, 3, 8), (1, 13, 3, 8), None, False, (4, 5)),
    ((2, 9, 4, 4), (2, 9, 2, 4), (2, 1, 1, 9), False, (4, 4)),
    ((1, 7, 2, 8), (1, 11, 2, 8), (1, 2, 7, 11), False, (3, 4)),
    ((1, 16, 2, 8), (1, 16, 2, 8), None, True, (5, 3)),
    ((3, 6, 1, 4), (1, 6, 1, 4), (6, 6), False, (128, 512)),
    ((1, 10, 2, 4), (1, 12, 2, 4), None, True, (4, 512)),
])
def test_blocked_attention_matches_numpy(shape: tuple, kv: tuple, mask_shape: tuple | None, causal: bool,
                                         blocks: tuple[int, int]) -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal(shape).astype(np.float32)
    k, v = (rng.standard_normal(kv).astype(np.float32) for _ in range(2))
    mask = None if mask_shape is None else (rng.standard_normal(mask_shape) * 3).astype(np.float32)
    mask4 = None if mask is None else mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
    plan = blocked.plan(q.shape, k.shape, v.shape, *blocks)
    out = np.full((shape[0], shape[1], shape[2] * kv[3]), np.nan, np.float32)
    blocked.run(q, k, v, out, plan, blocked.Scratch(plan), mask4, causal, 1.0 / np.sqrt(shape[3]))
    np.testing.assert_allclose(out, references.attention(q, k, v, mask4, causal), rtol=1e-5, atol=1e-5)


def test_masked_positions_with_minus_infinity_stay_finite() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 6, 1, 4)).astype(np.float32) for _ in range(3))
    mask = np.zeros((1, 1, 6, 6), np.float32)
    mask[..., :3] = -np.inf  # a whole key block is hidden from every query
    for blocks in ((2, 3), (4, 8)):  # online softmax over blocks, and the one-block path
        plan = blocked.plan(q.shape, k.shape, v.shape, *blocks)
        out = np.empty((1, 6, 4), np.float32)
        blocked.run(q, k, v, out, plan, blocked.Scratch(plan), mask, False, 0.5)
        np.testing.assert_allclose(out, references.attention(q, k, v, mask, False), rtol=1e-5, atol=1e-6)


def _attention_model(path: Path, seq: int, heads: int = 4, head_dim: int = 16, fused: bool = True) -> Path:
    """q, k, v [1, S, H, D] -> Attention (zero mask, mnnpy's broadcast form), or the unfused ops."""
    graph = Graph()
    for name in "qkv":
        graph.inputs[name] = InputSpec([1, seq, heads, head_dim])
    if fused:
        mask = graph.add_const(np.zeros((1, 1, 1, 1), np.float32), "mask")
        param = fb.AttentionParamT()
        param.kv_cache = False
        graph.add(fb.OpType.Attention, ["q", "k", "v", mask], ["y"], fb.OpParameter.AttentionParam, param)
    else:
        def permute(x: str, dims: list[int]) -> str:
            p = fb.PermuteT()
            p.dims = dims
            return graph.add(fb.OpType.Permute, [x], None, fb.OpParameter.Permute, p).outputs[0]

        scores = graph.add(fb.OpType.MatMul, [permute("q", [0, 2, 1, 3]), permute("k", [0, 2, 3, 1])], None,
                           fb.OpParameter.MatMul, fb.MatMulT()).outputs[0]
        axis = fb.AxisT()
        axis.axis = -1
        probs = graph.add(fb.OpType.Softmax, [scores], None, fb.OpParameter.Axis, axis).outputs[0]
        ctx = graph.add(fb.OpType.MatMul, [probs, permute("v", [0, 2, 1, 3])], None, fb.OpParameter.MatMul,
                        fb.MatMulT()).outputs[0]
        reshape = fb.ReshapeT()
        reshape.dims = [1, seq, heads * head_dim]
        graph.add(fb.OpType.Reshape, [permute(ctx, [0, 2, 1, 3])], ["y"], fb.OpParameter.Reshape, reshape)
    graph.outputs = ["y"]
    save_net(graph_to_net(graph), str(path))
    return path


def _planned_bytes(path: Path) -> tuple[int, int]:
    """(arena bytes, arena + kernel scratch bytes) of a CPU session for the model."""
    interp = mnnpy.Interpreter(str(path))
    session = interp.createSession({})
    info = session.info()
    arena = int(info["memory"]["arena_bytes"])
    scratch = sum(int(c.get("scratch_bytes", 0)) for c in info["commands"])
    return arena, arena + scratch


def test_attention_memory_plan_grows_linearly(tmp_path: Path) -> None:
    totals = {}
    for seq in (128, 512, 2048):
        _, totals[seq] = _planned_bytes(_attention_model(tmp_path / f"a{seq}.mnn", seq))
    # linear growth: x4 tokens -> about x4 bytes (quadratic would be x16)
    assert totals[512] / totals[128] < 4.5
    assert totals[2048] / totals[512] < 4.5
    assert totals[2048] / totals[128] < 18
    unfused = {seq: _planned_bytes(_attention_model(tmp_path / f"u{seq}.mnn", seq, fused=False))[0]
               for seq in (128, 512)}
    assert unfused[512] / unfused[128] > 10  # the unfused graph materialises [H, S, S] scores and probabilities
    assert totals[512] < unfused[512] / 4


def test_attention_scratch_is_planned_in_the_arena(tmp_path: Path) -> None:
    session = mnnpy.Interpreter(str(_attention_model(tmp_path / "a.mnn", 256))).createSession({})
    info = session.info()
    att = next(c for c in info["commands"] if c["type"] == "Attention")
    plan = blocked.plan((1, 256, 4, 16), (1, 256, 4, 16), (1, 256, 4, 16))
    assert att["scratch"] == "arena" and att["scratch_bytes"] == 0
    assert info["memory"]["arena_bytes"] >= plan.scratch_bytes
