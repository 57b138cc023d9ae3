"""A convolution -> Add of a residual (`Binary._residual`, `Convolution.residual_run`): the convolution's tiles add
the residual to the rows they store (then the Add's ReLU), into the Add's output. Checked against onnxruntime and
the same session's plain (callback) run: Winograd pairs (the second convolution already chained), im2col, a strided
1x1 shortcut, one and two lanes, batch 2, with and without the ReLU; and where it must not fuse (channels that are
not a multiple of 4). Also the other pair a ResNet fuses: the input's NCHW -> NC4HW4 raster into the stem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.fused import check_against_ort, fused_and_plain

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _model(tmp_path: Path, c: int, hw: int, batch: int, down: bool, relu: bool) -> Path:
    """A 1x1 stem x -> s (so that the shortcut is NC4HW4, as in a network), then a ResNet basic block: s -> conv 3x3
    (stride 2 with ``down``) -> Relu -> conv 3x3 -> Add(shortcut) [-> Relu] -> conv 1x1 (so that the Add stays in
    NC4HW4); the shortcut is s, or with ``down`` a 1x1 stride-2 convolution to 2c channels."""
    from mnnpy.converter import convert

    out = 2 * c if down else c
    rng = np.random.default_rng(c * 7 + hw)

    def conv(name: str, cin: int, cout: int, k: int) -> list:
        return [nh.from_array((rng.standard_normal((cout, cin, k, k)) / np.sqrt(k * k * cin)).astype(np.float32),
                              f"w{name}"), nh.from_array(rng.standard_normal(cout).astype(np.float32), f"b{name}")]

    inits = conv("0", c, c, 1) + conv("1", c, out, 3) + conv("2", out, out, 3) + conv("o", out, out, 1) + \
        (conv("s", c, out, 1) if down else [])
    s = 2 if down else 1
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["s"], kernel_shape=[1, 1]),
             h.make_node("Conv", ["s", "w1", "b1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s]),
             h.make_node("Relu", ["a"], ["r"]),
             h.make_node("Conv", ["r", "w2", "b2"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    if down:
        nodes.append(h.make_node("Conv", ["s", "ws", "bs"], ["q"], kernel_shape=[1, 1], strides=[2, 2]))
    nodes.append(h.make_node("Add", ["p", "q" if down else "s"], ["sum"]))
    nodes.append(h.make_node("Relu" if relu else "Identity", ["sum"], ["z"]))
    nodes.append(h.make_node("Conv", ["z", "wo", "bo"], ["y"], kernel_shape=[1, 1]))
    o = -(-hw // s)
    graph = h.make_graph(nodes, "block", [h.make_tensor_value_info("x", T.FLOAT, [batch, c, hw, hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, [batch, out, o, o])], inits)
    src = tmp_path / "block.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(src))
    convert(str(src), str(src.with_suffix(".mnn")))
    return src


def _fused_add(session: object) -> bool:
    from mnnpy.backends.cpu.ops.binary import _done

    fused = session.scheduler.fused  # type: ignore[attr-defined]
    return any(fused.get(id(c)) is _done for c in session.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("algorithm", "down", "batch", "relu", "c"),
                         [("winograd:2", False, 1, True, 8), ("winograd:4", False, 2, False, 8),
                          ("im2col", False, 1, True, 8), ("winograd:2", True, 1, True, 8), ("im2col", True, 2, True, 8),
                          ("winograd:4", False, 2, True, 16)])  # (16: whole vectors, the compiled transforms' store)
def test_residual_add_fused_and_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algorithm: str,
                                        down: bool, batch: int, relu: bool, c: int, threads: int) -> None:
    from mnnpy.backends.cpu.compute import blas, packed_gemm

    if threads > 1:  # small layers: lanes anyway
        monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    src = _model(tmp_path, c, 14, batch, down, relu)
    x = np.random.default_rng(threads).standard_normal((batch, c, 14, 14)).astype(np.float32)
    fast, plain, session = fused_and_plain(src, x, algorithm, threads)
    check_against_ort(src, x, fast, plain)
    # with lanes a 3x3 im2col kernel reads its input rows as it goes, so where the arena put the Add's output over
    # that input it must not fuse; the chained Winograd consumer reads its own buffer, and the 1x1 shortcut (the last
    # producer with ``down``) reading NC4HW4 in place through the packed GEMM stores only after all its lanes' reads
    if threads == 1 or (algorithm != "im2col" and not down) or (down and packed_gemm.available()):
        assert _fused_add(session)


def test_no_residual_fusion_for_a_channel_tail(tmp_path: Path) -> None:
    src = _model(tmp_path, 6, 10, 1, False, True)
    x = np.random.default_rng(3).standard_normal((1, 6, 10, 10)).astype(np.float32)
    fast, plain, session = fused_and_plain(src, x, "im2col", 1)
    assert not _fused_add(session)
    check_against_ort(src, x, fast, plain)


@pytest.mark.parametrize(("threads", "batch", "channels"), [(1, 1, 3), (2, 1, 3), (2, 2, 1)])
def test_input_pack_fused_into_the_stem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int, batch: int,
                                        channels: int) -> None:
    """The model input's NCHW -> NC4HW4 raster before a stem of few channels (the im2col kernel's C-channel buffer):
    the stem copies from the NCHW input itself and the raster does nothing (`Convolution.fuse_after`); one and two
    lanes (each lane copies its rows), batch 2; against onnxruntime and the plain run."""
    from mnnpy.backends.cpu.compute import blas
    from mnnpy.backends.cpu.ops.conv import _nothing
    from mnnpy.converter import convert

    if threads > 1:
        monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    rng = np.random.default_rng(channels)
    w = nh.from_array(rng.standard_normal((8, channels, 7, 7)).astype(np.float32), "w")
    b = nh.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[7, 7], pads=[3, 3, 3, 3], strides=[2, 2]),
             h.make_node("Relu", ["c"], ["y"])]
    graph = h.make_graph(nodes, "stem", [h.make_tensor_value_info("x", T.FLOAT, [batch, channels, 30, 30])],
                         [h.make_tensor_value_info("y", T.FLOAT, [batch, 8, 15, 15])], [w, b])
    src = tmp_path / "stem.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(src))
    convert(str(src), str(src.with_suffix(".mnn")))
    x = rng.standard_normal((batch, channels, 30, 30)).astype(np.float32)
    fast, plain, session = fused_and_plain(src, x, "im2col", threads)
    check_against_ort(src, x, fast, plain)
    fused = session.scheduler.fused  # type: ignore[attr-defined]
    assert [fused.get(id(c)) is _nothing for c in session.commands][:2] == [True, False]  # type: ignore[attr-defined]
