"""roi_pooling / roi_align / crop_and_resize: lazy ROIPooling, ROIAlign, CropAndResize ops vs onnxruntime, a
per-pixel TensorFlow-formula reference and official MNN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import load_net, save_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError
from support import official

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use

RNG = np.random.default_rng(11)
OT, PT = fb.OpType, fb.OpParameter


def _rois(n: int, batch: int, h: int, w: int, scale: float) -> np.ndarray:
    x1, y1 = RNG.uniform(-1, w * 0.6, n), RNG.uniform(-1, h * 0.6, n)
    x2, y2 = x1 + RNG.uniform(0.3, w * 0.7, n), y1 + RNG.uniform(0.3, h * 0.7, n)
    return np.stack([RNG.integers(0, batch, n), x1, y1, x2, y2], 1).astype(np.float32) / \
        np.array([1, scale, scale, scale, scale], np.float32)


def _ort_roi_align(x: np.ndarray, rois: np.ndarray, ph: int, pw: int, scale: float, ratio: int,
                   aligned: bool) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    helper = pytest.importorskip("onnx.helper")
    tp = pytest.importorskip("onnx").TensorProto
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], mode="avg", output_height=ph, output_width=pw,
                            sampling_ratio=ratio, spatial_scale=scale,
                            coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tp.FLOAT, x.shape),
                                        helper.make_tensor_value_info("rois", tp.FLOAT, [None, 4]),
                                        helper.make_tensor_value_info("idx", tp.INT64, [None])],
                          [helper.make_tensor_value_info("y", tp.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x, "rois": rois[:, 1:], "idx": rois[:, 0].astype(np.int64)})[0]


@pytest.mark.parametrize(("shape", "ph", "pw", "scale", "ratio"),
                         [((2, 3, 8, 8), 2, 3, 1.0, 2), ((1, 5, 13, 9), 3, 3, 0.5, 0), ((3, 4, 6, 10), 4, 2, 0.25, 1)])
@pytest.mark.parametrize("aligned", [True, False])
def test_roi_align_avg_matches_onnxruntime(shape: tuple, ph: int, pw: int, scale: float, ratio: int,
                                           aligned: bool) -> None:
    x = RNG.normal(size=shape).astype(np.float32)
    rois = _rois(6, shape[0], shape[2], shape[3], scale)
    y = F.roi_align(F.convert(F.const(x, x.shape), F.NC4HW4), F.const(rois, rois.shape), ph, pw, scale, ratio,
                    aligned, F.AVEPOOL)
    assert y.op_type == "ROIAlign" and y.shape == [6, shape[1], ph, pw] and y.data_format == F.NC4HW4
    ref = _ort_roi_align(x, rois, ph, pw, scale, ratio, aligned)
    np.testing.assert_allclose(F.convert(y, F.NCHW).read(), ref, rtol=1e-4, atol=1e-5)


def _official_roi(fn: str, x: np.ndarray, rois: np.ndarray, *args: Any) -> np.ndarray:
    e = official.require_mnn().expr
    xin = e.convert(e.const(x, list(x.shape)), e.NC4HW4)
    return np.asarray(e.convert(getattr(e, fn)(xin, e.const(rois, list(rois.shape)), *args), e.NCHW).read())


@pytest.mark.parametrize("aligned", [True, False])
def test_roi_align_max_matches_official(aligned: bool) -> None:
    mnn = official.require_mnn()
    x = RNG.uniform(-1, 1, (2, 5, 9, 7)).astype(np.float32)
    rois = _rois(5, 2, 9, 7, 1.0)
    theirs = _official_roi("roi_align", x, rois, 3, 2, 1.0, 2, aligned, mnn.expr.MAXPOOL)
    ours = F.roi_align(F.const(x, x.shape), rois, 3, 2, 1.0, 2, aligned, F.MAXPOOL)
    np.testing.assert_allclose(F.convert(ours, F.NCHW).read(), theirs, rtol=1e-5, atol=1e-6)


def _np_roi_pool(x: np.ndarray, rois: np.ndarray, ph: int, pw: int, scale: float) -> np.ndarray:
    """Caffe's ROI pooling, one output element at a time."""
    out = np.zeros((len(rois), x.shape[1], ph, pw), np.float32)
    h, w = x.shape[2:]
    for k, (b, *box) in enumerate(rois):
        x1, y1, x2, y2 = (int(np.sign(v * scale) * np.floor(abs(v * scale) + 0.5)) for v in box)
        bh, bw = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                hs, he = (min(max(int(f) + y1, 0), h) for f in (np.floor(i * bh), np.ceil((i + 1) * bh)))
                ws, we = (min(max(int(f) + x1, 0), w) for f in (np.floor(j * bw), np.ceil((j + 1) * bw)))
                if he > hs and we > ws:
                    out[k, :, i, j] = x[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


@pytest.mark.parametrize(("shape", "ph", "pw", "scale"), [((2, 3, 8, 8), 2, 3, 1.0), ((1, 6, 16, 12), 3, 3, 0.25)])
def test_roi_pooling_matches_reference_and_official(shape: tuple, ph: int, pw: int, scale: float) -> None:
    x = RNG.normal(size=shape).astype(np.float32)
    rois = _rois(7, shape[0], shape[2], shape[3], scale)
    y = F.roi_pooling(F.convert(F.const(x, x.shape), F.NC4HW4), F.const(rois, rois.shape), ph, pw, scale)
    assert y.op_type == "ROIPooling" and y.shape == [7, shape[1], ph, pw]
    ours = F.convert(y, F.NCHW).read()
    np.testing.assert_array_equal(ours, _np_roi_pool(x, rois, ph, pw, scale))
    np.testing.assert_array_equal(ours, _official_roi("roi_pooling", x, rois, ph, pw, scale))


@pytest.mark.parametrize("fn", ["roi_pooling", "roi_align"])
def test_roi_backward_is_the_adjoint_and_matches_official(fn: str) -> None:
    x = RNG.normal(size=(2, 3, 9, 8)).astype(np.float32)
    rois = _rois(4, 2, 9, 8, 1.0)
    diff = RNG.normal(size=(4, 3, 2, 3)).astype(np.float32)
    extra = (1.0, 2, True, F.AVEPOOL) if fn == "roi_align" else (1.0,)
    xin = F.convert(F.const(x, x.shape), F.NC4HW4)
    grad = getattr(F, fn)(xin, F.const(rois, rois.shape), 2, 3, *extra, True, F.const(diff, diff.shape))
    assert grad.shape == list(x.shape)
    g = F.convert(grad, F.NCHW).read()
    pooled = F.convert(getattr(F, fn)(xin, F.const(rois, rois.shape), 2, 3, *extra), F.NCHW).read()
    # both poolings are linear in x around x (max pooling: with the arg-max fixed), so <diff, f(x)> = <grad, x>
    np.testing.assert_allclose(np.vdot(diff, pooled), np.vdot(g, x), rtol=1e-4)
    mnn = official.require_mnn()
    e = mnn.expr
    theirs_extra = (1.0, 2, True, e.AVEPOOL) if fn == "roi_align" else (1.0,)
    ddiff = e.convert(e.const(diff, list(diff.shape)), e.NC4HW4)
    theirs = _official_roi(fn, x, rois, 2, 3, *theirs_extra, True, ddiff)
    np.testing.assert_allclose(g, theirs, rtol=1e-5, atol=1e-6)


def test_roi_bad_input() -> None:
    x = F.const(np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"roi must be \[num_rois, 5\]"):
        F.roi_pooling(x, np.zeros((2, 4), np.float32), 2, 2, 1.0)
    with pytest.raises(ValueError, match="pooled size must be positive"):
        F.roi_align(x, np.zeros((1, 5), np.float32), 0, 2, 1.0, 2, True, F.AVEPOOL)
    with pytest.raises(NotImplementedError, match="max pooling has no backward mode"):
        F.roi_align(x, np.zeros((1, 5), np.float32), 2, 2, 1.0, 2, True, F.MAXPOOL, True, np.zeros((1, 2, 2, 2)))
    with pytest.raises(ValueError, match="output_grad=True needs backward_diff"):
        F.roi_pooling(x, np.zeros((1, 5), np.float32), 2, 2, 1.0, True)
    with pytest.raises(ValueError, match=r"backward_diff must be \[1, 2, 2, 2\]"):
        F.roi_pooling(x, np.zeros((1, 5), np.float32), 2, 2, 1.0, True, np.zeros((1, 2, 3, 2), np.float32))
    with pytest.raises(ModelError, match=r"roi batch index 3 outside \[0, 1\)"):
        F.roi_pooling(x, np.array([[3, 0, 0, 1, 1]], np.float32), 2, 2, 1.0).read()


def _np_crop(img: np.ndarray, boxes: np.ndarray, ind: np.ndarray, ch: int, cw: int, nearest: bool,
             extrapolation: float) -> np.ndarray:
    """tf.image.crop_and_resize, one output pixel at a time."""
    _, h, w, c = img.shape
    out = np.full((len(boxes), ch, cw, c), extrapolation, np.float64)
    for k, (y1, x1, y2, x2) in enumerate(boxes.astype(np.float64)):
        for i in range(ch):
            y = y1 * (h - 1) + i * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else 0.5 * (y1 + y2) * (h - 1)
            for j in range(cw):
                x = x1 * (w - 1) + j * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else 0.5 * (x1 + x2) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    continue
                src = img[ind[k]].astype(np.float64)
                if nearest:
                    out[k, i, j] = src[int(np.floor(y + 0.5)), int(np.floor(x + 0.5))]
                    continue
                t, b, lft, r = int(np.floor(y)), int(np.ceil(y)), int(np.floor(x)), int(np.ceil(x))
                top = src[t, lft] + (src[t, r] - src[t, lft]) * (x - lft)
                bot = src[b, lft] + (src[b, r] - src[b, lft]) * (x - lft)
                out[k, i, j] = top + (bot - top) * (y - t)
    return out.astype(np.float32)


@pytest.mark.parametrize(("shape", "crop"), [((1, 4, 4, 1), (2, 2)), ((2, 7, 5, 3), (3, 4)), ((2, 6, 9, 2), (1, 5))])
@pytest.mark.parametrize(("nearest", "extrapolation"), [(False, 0.0), (False, -3.5), (True, 0.0), (True, 2.25)])
def test_crop_and_resize_matches_reference(shape: tuple, crop: tuple, nearest: bool, extrapolation: float) -> None:
    img = RNG.normal(size=shape).astype(np.float32)
    boxes = RNG.uniform(-0.3, 1.3, (5, 4)).astype(np.float32)
    ind = RNG.integers(0, shape[0], 5).astype(np.int32)
    x = F.placeholder(list(shape), F.NHWC)
    x.write(img)
    y = F.crop_and_resize(x, F.const(boxes, boxes.shape), F.const(ind, ind.shape, F.NCHW, F.int),
                          F.const(np.array(crop, np.int32), [2], F.NCHW, F.int), F.NEAREST if nearest else F.BILINEAR,
                          extrapolation)
    assert y.op_type == "CropAndResize" and y.shape == [5, *crop, shape[3]] and y.data_format == F.NHWC
    np.testing.assert_allclose(y.read(), _np_crop(img, boxes, ind, *crop, nearest, extrapolation),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nearest", [False, True])
def test_crop_and_resize_matches_official(nearest: bool) -> None:
    e = official.require_mnn().expr
    img = RNG.normal(size=(2, 6, 7, 3)).astype(np.float32)
    boxes = RNG.uniform(-0.2, 1.2, (4, 4)).astype(np.float32)
    ind = np.array([0, 1, 1, 0], np.int32)

    def run(mod: Any) -> np.ndarray:
        x = mod.const(img, [2, 6, 7, 3], mod.NHWC)
        y = mod.crop_and_resize(x, mod.const(boxes, [4, 4]), mod.const(ind, [4], mod.NCHW, mod.int),
                                mod.const(np.array([3, 2], np.int32), [2], mod.NCHW, mod.int),
                                mod.NEAREST if nearest else mod.BILINEAR, 1.5)
        return np.asarray(mod.convert(y, mod.NHWC).read())

    np.testing.assert_allclose(run(F), run(e), rtol=1e-5, atol=1e-5)


def test_crop_and_resize_bad_input() -> None:
    img = F.const(np.zeros((1, 4, 4, 1), np.float32), [1, 4, 4, 1], F.NHWC)
    ind, size = F.const([0], [1], F.NCHW, F.int), F.const([2, 2], [2], F.NCHW, F.int)
    with pytest.raises(ValueError, match=r"boxes must be \[num_boxes, 4\]"):
        F.crop_and_resize(img, F.const([0.0, 0.0, 1.0], [1, 3]), ind, size)
    with pytest.raises(TypeError, match="box_ind and crop_size must be int"):
        F.crop_and_resize(img, F.const([0.0, 0.0, 1.0, 1.0], [1, 4]), F.const([0.0], [1]), size)
    with pytest.raises(ModelError, match=r"box_ind 4 outside \[0, 1\)"):
        F.crop_and_resize(img, F.const([0.0, 0.0, 1.0, 1.0], [1, 4]), F.const([4], [1], F.NCHW, F.int),
                          size).read()


def test_saved_roi_and_crop_graph_runs_in_official(tmp_path: Path) -> None:
    official.require_mnn()
    x = F.placeholder([1, 3, 8, 8])
    x.name = "data"
    rois = _rois(3, 1, 8, 8, 1.0)
    pooled = F.convert(F.roi_pooling(F.convert(x, F.NC4HW4), rois, 2, 2, 1.0), F.NCHW)
    pooled.name = "pool"
    aligned = F.convert(F.roi_align(F.convert(x, F.NC4HW4), rois, 3, 3, 1.0, 2, True, F.AVEPOOL), F.NCHW)
    aligned.name = "align"
    crop = F.crop_and_resize(F.convert(x, F.NHWC), RNG.uniform(0, 1, (2, 4)).astype(np.float32),
                             F.const([0, 0], [2], F.NCHW, F.int), F.const([3, 3], [2], F.NCHW, F.int))
    crop = F.convert(crop, F.NCHW)
    crop.name = "crop"
    path = tmp_path / "roi.mnn"
    F.save([pooled, aligned, crop], path)
    data = RNG.normal(size=(1, 3, 8, 8)).astype(np.float32)
    theirs = official.run(path, {"data": data})
    x.write(data)
    for v in (pooled, aligned, crop):
        np.testing.assert_allclose(theirs[v.name], v.read(), rtol=1e-5, atol=1e-5, err_msg=v.name)


@pytest.mark.parametrize(("nearest", "extrapolation"), [(True, 2.5), (False, -4.0), (True, 0.0)])
def test_crop_settings_are_mnns_table_and_take_effect_in_official(tmp_path: Path, nearest: bool,
                                                                  extrapolation: float) -> None:
    """method / extrapolation value travel in the CropAndResize table (as MNN's expr writes them): a saved graph runs
    in official MNN with the settings in force and gives mnnpy's result bit for bit (samples on the border and half
    way between pixels included: the boxes put some there), and a graph saved by official MNN runs the same here."""
    mnn = official.require_mnn()
    data = RNG.normal(size=(1, 3, 7, 6)).astype(np.float32)
    boxes = np.array([[-0.4, -0.3, 0.6, 0.9], [0.1, 0.2, 1.4, 0.7], [0.05, 0.3, 0.95, 0.8]], np.float32)
    ind = np.zeros(3, np.int32)

    def graph(mod: Any, near: bool, value: float) -> tuple[Any, Any]:
        x = mod.placeholder([1, 3, 7, 6], mod.NCHW)
        x.name = "data"
        y = mod.crop_and_resize(mod.convert(x, mod.NHWC), mod.const(boxes, [3, 4]), mod.const(ind, [3], mod.NCHW,
                                mod.int), mod.const(np.array([4, 5], np.int32), [2], mod.NCHW, mod.int),
                                mod.NEAREST if near else mod.BILINEAR, value)
        y = mod.convert(y, mod.NCHW)
        y.name = "crop"
        return x, y

    x, y = graph(F, nearest, extrapolation)
    x.write(data)
    ours = y.read()
    F.save([y], tmp_path / "ours.mnn")
    op = next(o for o in load_net(tmp_path / "ours.mnn").oplists if o.type == OT.CropAndResize)
    assert op.mainType == PT.CropAndResize
    assert (op.main.method, op.main.extrapolationValue) == (int(nearest), extrapolation)
    theirs = official.run(tmp_path / "ours.mnn", {"data": data})["crop"]
    np.testing.assert_array_equal(theirs, ours)
    assert np.all(theirs[0, :, :2] == extrapolation)  # box 0's first two rows lie above the image
    dx, dy = graph(F, False, 0.0)
    dx.write(data)
    assert not np.allclose(theirs, dy.read(), atol=1e-3)  # the settings changed official's result
    _, oy = graph(mnn.expr, nearest, extrapolation)
    mnn.expr.save([oy], str(tmp_path / "theirs.mnn"))
    loaded = F.load_as_dict(tmp_path / "theirs.mnn")
    loaded["data"].write(data)
    np.testing.assert_array_equal(loaded["crop"].read(), theirs)


def test_crop_param_of_the_wrong_kind_is_a_model_error(tmp_path: Path) -> None:
    img = F.const(np.zeros((1, 4, 4, 1), np.float32), [1, 4, 4, 1], F.NHWC)
    y = F.crop_and_resize(img, F.const([0.0, 0.0, 1.0, 1.0], [1, 4]), F.const([0], [1], F.NCHW, F.int),
                          F.const([2, 2], [2], F.NCHW, F.int))
    y.name = "crop"
    F.save([y], tmp_path / "crop.mnn")
    net = load_net(tmp_path / "crop.mnn")
    op = next(o for o in net.oplists if o.type == OT.CropAndResize)
    op.main.method = 7
    save_net(net, tmp_path / "bad.mnn")
    with pytest.raises(ModelError, match=r"'crop' \(CropAndResize\): unknown method 7"):
        F.load_as_dict(tmp_path / "bad.mnn")["crop"].read()
    with pytest.raises(ValueError, match="method must be BILINEAR or NEAREST"):
        F.crop_and_resize(img, F.const([0.0, 0.0, 1.0, 1.0], [1, 4]), F.const([0], [1], F.NCHW, F.int),
                          F.const([2, 2], [2], F.NCHW, F.int), 5)


def test_jsonop_crop_and_resize_uses_the_table_fields() -> None:
    """MNN's JSON op description names the table's fields; jsonop builds the same op as crop_and_resize."""
    img = RNG.normal(size=(1, 5, 6, 2)).astype(np.float32)
    ins = [F.const(img, [1, 5, 6, 2], F.NHWC), F.const([-0.2, 0.1, 0.7, 1.3], [1, 4]), F.const([0], [1], F.NCHW, F.int),
           F.const([3, 4], [2], F.NCHW, F.int)]
    desc = ('{"type": "CropAndResize", "main_type": "CropAndResize", '
            '"main": {"extrapolationValue": -1.5, "method": "NEAREST"}}')
    (y,) = F.jsonop(ins, desc, 1)
    np.testing.assert_array_equal(y.read(), F.crop_and_resize(*ins, F.NEAREST, -1.5).read())
    assert (y.read() == -1.5).any()
