"""CVMatrix and CVImageProcess against the official MNN wheel."""

from __future__ import annotations

import numpy as np
import pytest
from support.official import require_mnn

from mnnpy.cv_process import (
    CV_Filter_BILINEAL,
    CV_Filter_NEAREST,
    CV_ImageFormat_BGR,
    CV_ImageFormat_GRAY,
    CV_ImageFormat_RGB,
    CV_ImageFormat_RGBA,
    CV_Wrap_CLAMP_TO_EDGE,
    CV_Wrap_ZERO,
    CVImageProcess,
    CVMatrix,
)
from mnnpy.tensor import Tensor, Tensor_DimensionType_Caffe, Tensor_DimensionType_Tensorflow

RS = np.random.RandomState(5)
IMG = RS.randint(0, 256, (13, 17, 3)).astype(np.uint8)


def _ops(m: object) -> None:
    m.setScale(2.0, 3.0, 1.0, 1.0)
    m.preRotate(30.0, 5.0, 6.0)
    m.postTranslate(3.0, 4.0)
    m.preScale(0.5, 0.25)
    m.postRotate(10.0)
    m.preTranslate(1.0, 2.0)
    m.postScale(0.5, 0.25, 1.0, 1.0)


def test_matrix_matches_official() -> None:
    mnn = require_mnn()
    ours, ref = CVMatrix(), mnn.CVMatrix()
    assert ours.read() == ref.read()
    _ops(ours)
    _ops(ref)
    np.testing.assert_allclose(ours.read(), ref.read(), rtol=1e-5, atol=1e-5)
    ours.invert()
    ref.invert()
    np.testing.assert_allclose(ours.read(), ref.read(), rtol=1e-4, atol=1e-4)
    for n in (1, 2, 3, 4):
        src = [0.0, 0.0, 10.0, 0.0, 0.0, 10.0, 10.0, 10.0][: 2 * n]
        dst = [1.0, 1.0, 20.0, 2.0, 3.0, 30.0, 25.0, 25.0][: 2 * n]
        ours.setPolyToPoly(src, dst)
        ref.setPolyToPoly(src, dst)
        np.testing.assert_allclose(ours.read(), ref.read(), rtol=1e-4, atol=1e-4)
    for setter, args in (("setRotate", (33.0, 2.0, 3.0)), ("setTranslate", (4.0, -5.0)), ("setScale", (2.0, 0.5))):
        getattr(ours, setter)(*args)
        getattr(ref, setter)(*args)
        np.testing.assert_allclose(ours.read(), ref.read(), rtol=1e-5, atol=1e-5)
    ours.write([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0, 1.0])
    assert ours.read() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0, 1.0]


def _official(mnn: object, cfg: dict, shape: list[int], dim: int, matrix: tuple | None, padding: float | None,
              img: np.ndarray) -> np.ndarray:
    proc = mnn.CVImageProcess(cfg)
    if matrix is not None:
        m = mnn.CVMatrix()
        m.write([float(x) for x in matrix])
        proc.setMatrix(m)
    if padding is not None:
        proc.setPadding(int(padding))
    t = mnn.Tensor(shape, mnn.Halide_Type_Float, np.zeros(shape, np.float32), dim)
    proc.convert(img, img.shape[1], img.shape[0], 0, t)
    return np.array(t.getData(), np.float32).reshape(shape)


def _ours(cfg: dict, shape: list[int], dim: int, matrix: tuple | None, padding: float | None,
          img: np.ndarray) -> np.ndarray:
    proc = CVImageProcess(cfg)
    if matrix is not None:
        m = CVMatrix()
        m.write([float(x) for x in matrix])
        proc.setMatrix(m)
    if padding is not None:
        proc.setPadding(padding)
    t = Tensor(shape, dimType=dim)
    proc.convert(img, img.shape[1], img.shape[0], 0, t)
    return t.getNumpyData()


CASES = [
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_RGB}, [1, 3, 13, 17], None, None),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_RGB, "mean": (1.0, 2.0, 3.0, 0.0),
      "normal": (0.5, 0.25, 2.0, 1.0)}, [1, 3, 13, 17], None, None),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_BGR, "filterType": CV_Filter_BILINEAL},
     [1, 3, 6, 7], (17 / 7, 0, 0, 0, 13 / 6, 0, 0, 0, 1), None),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_BGR, "filterType": CV_Filter_NEAREST},
     [1, 3, 6, 7], (17 / 7, 0, 0, 0, 13 / 6, 0, 0, 0, 1), None),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_BGR, "filterType": CV_Filter_NEAREST,
      "wrap": CV_Wrap_ZERO}, [1, 3, 13, 17], (1, 0, -2.5, 0, 1, -1.5, 0, 0, 1), 7.0),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_BGR, "filterType": CV_Filter_BILINEAL,
      "wrap": CV_Wrap_ZERO}, [1, 3, 13, 17], (1, 0, 0.5, 0, 1, -0.5, 0, 0, 1), 100.0),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_BGR, "filterType": CV_Filter_BILINEAL,
      "wrap": CV_Wrap_CLAMP_TO_EDGE}, [1, 3, 13, 17], (1, 0, -2.3, 0, 1, 1.7, 0, 0, 1), None),
    ({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_GRAY}, [1, 1, 13, 17], None, None),
]
# Not compared with the official wheel: its convert() raises "data length does not match tensor size" for a 20x23
# BGR->RGB destination under an affine matrix and for an RGBA destination (cause not investigated); RGBA is checked
# against numpy below, affine bilinear sampling by the cases above.


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("nhwc", [False, True])
def test_image_process_matches_official(case: int, nhwc: bool) -> None:
    mnn = require_mnn()
    cfg, shape, matrix, padding = CASES[case]
    dim_ours = Tensor_DimensionType_Tensorflow if nhwc else Tensor_DimensionType_Caffe
    dim_ref = mnn.Tensor_DimensionType_Tensorflow if nhwc else mnn.Tensor_DimensionType_Caffe
    if nhwc:
        shape = [shape[0], shape[2], shape[3], shape[1]]
    ours = _ours(cfg, shape, dim_ours, matrix, padding, IMG)
    ref = _official(mnn, cfg, shape, dim_ref, matrix, padding, IMG)
    np.testing.assert_allclose(ours, ref, atol=1.0 * max(cfg.get("normal", (1,))) + 1e-4)


@pytest.mark.parametrize("nhwc", [False, True])
def test_bgr_to_rgba_destination(nhwc: bool) -> None:
    """BGR source, RGBA destination: channels reversed, alpha 255 (numpy reference)."""
    want = np.concatenate([IMG[..., ::-1], np.full((*IMG.shape[:2], 1), 255)], axis=-1).astype(np.float32)
    shape = [1, 13, 17, 4] if nhwc else [1, 4, 13, 17]
    dim = Tensor_DimensionType_Tensorflow if nhwc else Tensor_DimensionType_Caffe
    got = _ours({"sourceFormat": CV_ImageFormat_BGR, "destFormat": CV_ImageFormat_RGBA}, shape, dim, None, None, IMG)
    np.testing.assert_array_equal(got[0] if nhwc else got[0].transpose(1, 2, 0), want)


def test_create_image_tensor() -> None:
    t = CVImageProcess.createImageTensor(None, 17, 13, 3, IMG)
    assert t.getShape() == (1, 13, 17, 3)
    np.testing.assert_array_equal(t.getNumpyData()[0], IMG)
    proc = CVImageProcess({"sourceFormat": CV_ImageFormat_RGBA, "destFormat": CV_ImageFormat_RGBA})
    rgba = RS.randint(0, 256, (5, 6, 4)).astype(np.uint8)
    padded = np.zeros((5, 8, 4), np.uint8)
    padded[:, :6] = rgba
    dest = Tensor([1, 4, 5, 6])
    proc.convert(padded, 6, 5, 8 * 4, dest)  # stride in bytes
    np.testing.assert_array_equal(dest.getNumpyData()[0].transpose(1, 2, 0), rgba)


@pytest.mark.parametrize("fmt", [11, 12, 13])  # YUV_NV21, YUV_NV12, YUV_I420
def test_yuv_source_gray_matches_official(fmt: int) -> None:
    mnn = require_mnn()
    yuv = RS.randint(0, 256, (18, 16)).astype(np.uint8)
    cfg = {"sourceFormat": fmt, "destFormat": CV_ImageFormat_GRAY}
    ref = mnn.Tensor([1, 1, 12, 16], mnn.Halide_Type_Float, np.zeros([1, 1, 12, 16], np.float32),
                     mnn.Tensor_DimensionType_Caffe)
    mnn.CVImageProcess(cfg).convert(yuv, 16, 12, 0, ref)
    ours = Tensor([1, 1, 12, 16])
    CVImageProcess(cfg).convert(yuv, 16, 12, 0, ours)
    np.testing.assert_array_equal(ours.getNumpyData(), np.array(ref.getData(), np.float32).reshape(1, 1, 12, 16))
    rgb = Tensor([1, 3, 12, 16])  # the official binding rejects YUV -> colour; ours converts as OpenCV does
    CVImageProcess({"sourceFormat": fmt, "destFormat": CV_ImageFormat_RGB}).convert(yuv, 16, 12, 0, rgb)
    assert rgb.getNumpyData().shape == (1, 3, 12, 16)
