"""TF frontend data-movement ops (reshape, concat, strided slice, pad, pack, gather, resize ...) and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.tensorflow import load_graph_def
from mnnpy.converter.graph import ConvertError

from .tf_build import GraphBuilder, check, conv2d

RNG = np.random.default_rng(1)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _i32(values: list[int]) -> np.ndarray:
    return np.asarray(values, np.int32)


def test_reshape_concat_strided_slice(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 6, 6, 4)
    w = _x(1, 1, 4, 3)
    inp = g.placeholder("input", [1, 6, 6, 4])
    conv = g.op("Conv2D", [inp, g.const(w)], strides=[1, 1, 1, 1], padding="SAME", T=1)
    cat = g.op("ConcatV2", [conv, inp, g.const(3, dtype=np.int32)], name="cat", N=2, T=1, Tidx=3)
    sl = g.op("StridedSlice", [cat, g.const(_i32([0, 1, 0, 2]), dtype=np.int32),
                               g.const(_i32([0, 5, 6, 6]), dtype=np.int32), g.const(_i32([1, 2, 1, 1]),
                                                                                   dtype=np.int32)],
              name="slice", begin_mask=1, end_mask=1, T=1, Index=3)
    g.op("Reshape", [sl, g.const(_i32([1, -1]), dtype=np.int32)], name="flat", T=1, Tshape=3)
    c = np.concatenate([conv2d(x, w), x], axis=3)
    s = c[:, 1:5:2, :, 2:6]
    refs = {"cat": c, "slice": s, "flat": s.reshape(1, -1)}
    check(g, {"input": x}, refs, tmp_path)


def test_strided_slice_ellipsis_and_new_axis(tmp_path: Path) -> None:
    """x[..., None, 1:3] and x[:, None, 0] are expanded to plain slices plus Unsqueeze (mnnpy and MNN agree)."""
    g = GraphBuilder()
    x = _x(2, 3, 4)
    inp = g.placeholder("input", [2, 3, 4])

    def spec(values: list[int]) -> str:
        return g.const(_i32(values), dtype=np.int32)

    g.op("StridedSlice", [inp, spec([0, 0, 1]), spec([0, 0, 3]), spec([1, 1, 1])], name="a", ellipsis_mask=1,
         new_axis_mask=2, T=1, Index=3)
    g.op("StridedSlice", [inp, spec([0, 0, 0]), spec([0, 0, 1]), spec([1, 1, 1])], name="b", begin_mask=1,
         end_mask=1, new_axis_mask=2, shrink_axis_mask=4, T=1, Index=3)
    check(g, {"input": x}, {"a": x[..., None, 1:3], "b": x[:, None, 0]}, tmp_path)


def test_shape_driven_flatten(tmp_path: Path) -> None:
    """Keras' Flatten: Shape -> StridedSlice(shrink) -> Pack -> Reshape, folded to constants."""
    g = GraphBuilder()
    x = _x(2, 3, 3, 5)
    inp = g.placeholder("input", [2, 3, 3, 5])
    relu = g.op("Relu", [g.op("MaxPool", [inp], ksize=[1, 1, 1, 1], strides=[1, 1, 1, 1], padding="VALID", T=1)],
                T=1)
    shape = g.op("Shape", [relu], T=1, out_type=3)
    batch = g.op("StridedSlice", [shape, g.const(_i32([0]), dtype=np.int32), g.const(_i32([1]), dtype=np.int32),
                                  g.const(_i32([1]), dtype=np.int32)], shrink_axis_mask=1, T=3, Index=3)
    target = g.op("Pack", [batch, g.const(-1, dtype=np.int32)], axis=0, N=2, T=3)
    g.op("Reshape", [relu, target], name="out", T=1, Tshape=3)
    net = check(g, {"input": x}, {"out": np.maximum(x, 0).reshape(2, -1)}, tmp_path)
    assert not any(op.type in (80, 91) for op in net.oplists), "Shape/StridedSlice fold away on static shapes"


def test_dynamic_batch_flatten(tmp_path: Path) -> None:
    """A Placeholder with an unknown batch: Shape/StridedSlice/Pack stay run-time ops and the session resizes."""
    g = GraphBuilder()
    x = _x(2, 6, 6, 3)
    w = _x(3, 3, 3, 4)
    inp = g.placeholder("input", [-1, 6, 6, 3])
    relu = g.op("Relu", [g.op("Conv2D", [inp, g.const(w)], strides=[1, 1, 1, 1], padding="SAME", T=1)], T=1)
    shape = g.op("Shape", [relu], T=1, out_type=3)
    one = [g.const(_i32([v]), dtype=np.int32) for v in (0, 1, 1)]
    batch = g.op("StridedSlice", [shape, *one], shrink_axis_mask=1, T=3, Index=3)
    target = g.op("Pack", [batch, g.const(-1, dtype=np.int32)], axis=0, N=2, T=3)
    g.op("Reshape", [relu, target], name="out", T=1, Tshape=3)
    net = check(g, {"input": x}, {"out": np.maximum(conv2d(x, w), 0).reshape(2, -1)}, tmp_path)
    assert any(op.type == 80 for op in net.oplists), "the batch size is read at run time"


def test_pad_transpose_squeeze_expand(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 5, 4, 3)
    w = _x(3, 3, 3, 2)
    inp = g.placeholder("input", [1, 5, 4, 3])
    padded = g.op("Pad", [inp, g.const(_i32([[0, 0], [1, 2], [2, 1], [0, 0]]), dtype=np.int32)], T=1, Tpaddings=3)
    conv = g.op("Conv2D", [padded, g.const(w)], name="conv", strides=[1, 1, 1, 1], padding="VALID", T=1)
    g.op("MirrorPad", [inp, g.const(_i32([[0, 0], [1, 1], [2, 2], [0, 0]]), dtype=np.int32)], name="mirror",
         mode="REFLECT", T=1, Tpaddings=3)
    g.op("PadV2", [inp, g.const(_i32([[0, 0], [0, 0], [0, 0], [1, 1]]), dtype=np.int32), g.const(2.5)],
         name="padv2", T=1, Tpaddings=3)
    g.op("Transpose", [conv, g.const(_i32([0, 3, 1, 2]), dtype=np.int32)], name="nchw", T=1, Tperm=3)
    g.op("Transpose", [inp, g.const(_i32([2, 1, 0, 3]), dtype=np.int32)], name="perm", T=1, Tperm=3)
    expanded = g.op("ExpandDims", [inp, g.const(-1, dtype=np.int32)], name="expand", T=1, Tdim=3)
    g.op("Squeeze", [expanded], name="squeeze", squeeze_dims=[0, 4], T=1)
    p = np.pad(x, [(0, 0), (1, 2), (2, 1), (0, 0)])
    y = conv2d(p, w, padding="VALID")
    refs = {"conv": y, "mirror": np.pad(x, [(0, 0), (1, 1), (2, 2), (0, 0)], mode="reflect"),
            "padv2": np.pad(x, [(0, 0), (0, 0), (0, 0), (1, 1)], constant_values=2.5),
            "nchw": y.transpose(0, 3, 1, 2), "perm": x.transpose(2, 1, 0, 3), "expand": x[..., None],
            "squeeze": x[0]}
    check(g, {"input": x}, refs, tmp_path)


def test_pack_unpack_slice_gather_fill_cast(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(3, 4, 5)
    inp = g.placeholder("input", [3, 4, 5])
    g.op("Unpack", [inp], name="unpack", num=3, axis=0, T=1)
    g.op("Pack", ["unpack:2", "unpack:0"], name="pack", axis=1, N=2, T=1)
    g.op("Slice", [inp, g.const(_i32([1, 0, 2]), dtype=np.int32), g.const(_i32([2, -1, 2]), dtype=np.int32)],
         name="slice", T=1, Index=3)
    g.op("GatherV2", [inp, g.const(_i32([3, 0, 3]), dtype=np.int32), g.const(1, dtype=np.int32)], name="gather",
         Tparams=1, Tindices=3, Taxis=3, batch_dims=0)
    filled = g.op("Fill", [g.const(_i32([3, 4, 5]), dtype=np.int32), g.const(0.5)], T=1, index_type=3)
    g.op("Mul", [inp, filled], name="half", T=1)
    floor = g.op("Floor", [g.op("Mul", [inp, g.const(3.0)], T=1)], T=1)
    g.op("Cast", [g.op("Cast", [floor], SrcT=1, DstT=3)], name="cast", SrcT=3, DstT=1)
    refs = {"unpack:1": x[1], "pack": np.stack([x[2], x[0]], axis=1), "slice": x[1:3, 0:, 2:4],
            "gather": x[:, [3, 0, 3]], "half": x * 0.5, "cast": np.floor(x * 3)}
    check(g, {"input": x}, refs, tmp_path)


def test_reductions_and_resize(tmp_path: Path) -> None:
    g = GraphBuilder()
    x = _x(1, 4, 6, 3)
    w = _x(1, 1, 3, 5)
    inp = g.placeholder("input", [1, 4, 6, 3])
    conv = g.op("Conv2D", [inp, g.const(w)], strides=[1, 1, 1, 1], padding="SAME", T=1)
    g.op("Mean", [conv, g.const(_i32([1, 2]), dtype=np.int32)], name="gap", keep_dims=True, T=1, Tidx=3)
    g.op("Sum", [conv, g.const(_i32([1]), dtype=np.int32)], name="sum_h", keep_dims=False, T=1, Tidx=3)
    g.op("Max", [conv, g.const(_i32([-1]), dtype=np.int32)], name="max_c", keep_dims=False, T=1, Tidx=3)
    g.op("ResizeNearestNeighbor", [conv, g.const(_i32([8, 12]), dtype=np.int32)], name="nearest",
         align_corners=False, half_pixel_centers=False, T=1)
    g.op("ResizeBilinear", [inp, g.const(_i32([8, 12]), dtype=np.int32)], name="bilinear",
         align_corners=False, half_pixel_centers=True, T=1)
    y = conv2d(x, w)
    refs = {"gap": y.mean(axis=(1, 2), keepdims=True), "sum_h": y.sum(axis=1), "max_c": y.max(axis=-1),
            "nearest": y.repeat(2, axis=1).repeat(2, axis=2), "bilinear": _bilinear_half_pixel(x, 8, 12)}
    check(g, {"input": x}, refs, tmp_path)


def _bilinear_half_pixel(x: np.ndarray, oh: int, ow: int) -> np.ndarray:
    def coords(out: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = np.clip((np.arange(out) + 0.5) * size / out - 0.5, 0, size - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, size - 1)
        return lo, hi, src - lo

    y0, y1, fy = coords(oh, x.shape[1])
    x0, x1, fx = coords(ow, x.shape[2])
    top = x[:, y0][:, :, x0] * (1 - fx[:, None]) + x[:, y0][:, :, x1] * fx[:, None]
    bottom = x[:, y1][:, :, x0] * (1 - fx[:, None]) + x[:, y1][:, :, x1] * fx[:, None]
    return top * (1 - fy[:, None, None]) + bottom * fy[:, None, None]


def test_unsupported_ops_listed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One error naming every unsupported op type with its nodes; `mnnpy convert -f TF` writes nothing (and keeps
    an existing output file), printing the error without a traceback."""
    from mnnpy.cli.main import main

    g = GraphBuilder()
    inp = g.placeholder("input", [1, 4])
    a = g.op("Bogus", [inp], name="b1")
    b = g.op("Relu", [g.op("Bogus", [a], name="b2")], T=1)
    g.op("Wat", [b], name="w1")
    pb_path = tmp_path / "m.pb"
    pb_path.write_bytes(g.graph.SerializeToString())
    with pytest.raises(ConvertError) as info:
        load_graph_def(str(pb_path))
    message = str(info.value)
    assert "2 unsupported TensorFlow op type(s)" in message
    assert "Bogus: b1, b2" in message and "Wat: w1" in message
    dst, kept = tmp_path / "m.mnn", tmp_path / "kept.mnn"
    kept.write_bytes(b"precious")
    assert main(["convert", "-f", "TF", "--modelFile", str(pb_path), "--MNNModel", str(dst)]) == 2
    err = capsys.readouterr().err
    assert "Bogus: b1, b2" in err and "Wat: w1" in err and "Traceback" not in err
    assert not dst.exists()
    assert main(["convert", "-f", "TF", "--modelFile", str(pb_path), "--MNNModel", str(kept)]) == 2
    assert kept.read_bytes() == b"precious"


def test_not_a_graph_def(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xff\xff\xff garbage")
    with pytest.raises(ConvertError, match="GraphDef"):
        load_graph_def(str(bad))
