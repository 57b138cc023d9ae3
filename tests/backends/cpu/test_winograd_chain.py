"""Winograd -> Winograd pairs (`Convolution.fuse_after`): the first convolution stores its tiles straight into the
second's zero-bordered NHWC input (a buffer of its own, not the one plain kernels of that geometry share). Checked
against onnxruntime and the same session's plain (callback) run: every unit, channel counts that are not multiples
of 4, batch 2, two lanes, and the links that must not chain (a second reader, a grouped convolution)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.fused import check_against_ort, fused_and_plain

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _model(tmp_path: Path, c: int, mid: int, out: int, hw: tuple[int, int], batch: int = 1, relu: bool = True,
           side: bool = False, group: int = 1) -> Path:
    """x -> conv 3x3 pad 1 (MID, ``group``) [-> Relu] -> conv 3x3 pad 1 (OUT) -> y; ``side``: y + sum of the first
    convolution's output (a second reader of the link)."""
    from mnnpy.converter import convert

    rng = np.random.default_rng(c * 31 + mid + out)
    inits = [nh.from_array((rng.standard_normal((mid, c // group, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), "w1"),
             nh.from_array(rng.standard_normal(mid).astype(np.float32), "b1"),
             nh.from_array((rng.standard_normal((out, mid, 3, 3)) / np.sqrt(9 * mid)).astype(np.float32), "w2"),
             nh.from_array(rng.standard_normal(out).astype(np.float32), "b2")]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group),
             h.make_node("Relu", ["a"], ["r"]) if relu else h.make_node("Identity", ["a"], ["r"]),
             h.make_node("Conv", ["r", "w2", "b2"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    if side:
        nodes += [h.make_node("ReduceSum", ["r"], ["s"], keepdims=1), h.make_node("Add", ["p", "s"], ["y"])]
    else:
        nodes.append(h.make_node("Identity", ["p"], ["y"]))
    graph = h.make_graph(nodes, "pair", [h.make_tensor_value_info("x", T.FLOAT, [batch, c, *hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, [batch, out, *hw])], inits)
    src = tmp_path / "pair.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(src))
    convert(str(src), str(src.with_suffix(".mnn")))
    return src


def _fused_convs(session: object) -> list[object]:
    return [c for c in session.commands if id(c) in session.scheduler.fused]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("unit", "c", "mid", "out", "hw", "batch", "relu"),
                         [(2, 8, 8, 8, (9, 10), 1, True), (4, 5, 6, 7, (17, 13), 2, False),
                          (6, 16, 12, 4, (26, 25), 1, True), (6, 3, 64, 64, (40, 44), 1, True)])
def test_winograd_pair_chains_and_matches(tmp_path: Path, unit: int, c: int, mid: int, out: int,
                                          hw: tuple[int, int], batch: int, relu: bool) -> None:
    src = _model(tmp_path, c, mid, out, hw, batch, relu)
    x = np.random.default_rng(unit).standard_normal((batch, c, *hw)).astype(np.float32)
    fast, plain, session = fused_and_plain(src, x, f"winograd:{unit}")
    fused = _fused_convs(session)
    assert [cmd.op_type for cmd in fused] == [12, 12] and all(cmd.info["unit"] == unit for cmd in fused)
    check_against_ort(src, x, fast, plain)
    consumer = session.scheduler.fused[id(fused[1])].func.__self__
    producer = session.scheduler.fused[id(fused[0])].func.__self__
    assert consumer.xp is not producer.xp, "the chained input is not the buffer plain kernels share"


def test_winograd_pair_row_copies_and_lanes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer skips its per-block input copies (``ROW_COPY_FROM``), with one lane and with two."""
    from mnnpy.backends.cpu.compute import blas, winograd_conv

    monkeypatch.setattr(winograd_conv, "ROW_COPY_FROM", 0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 20000)
    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    src = _model(tmp_path, 12, 16, 8, (30, 28), batch=2)
    x = np.random.default_rng(7).standard_normal((2, 12, 30, 28)).astype(np.float32)
    for threads in (1, 2):
        fast, plain, session = fused_and_plain(src, x, "winograd:4", threads)
        assert len(_fused_convs(session)) == 2
        check_against_ort(src, x, fast, plain)


@pytest.mark.parametrize("case", ["side", "group"])
def test_no_winograd_pair_with_a_second_reader_or_groups(tmp_path: Path, case: str) -> None:
    src = _model(tmp_path, 8, 8, 8, (12, 12), side=case == "side", group=2 if case == "group" else 1)
    x = np.random.default_rng(2).standard_normal((1, 8, 12, 12)).astype(np.float32)
    fast, plain, session = fused_and_plain(src, x, "winograd:2")
    assert not _fused_convs(session)
    check_against_ort(src, x, fast, plain)
