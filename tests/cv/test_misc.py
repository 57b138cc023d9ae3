"""Thresholds, arithmetic and array helpers against OpenCV."""

from __future__ import annotations

import numpy as np
import pytest
from cv.cv_images import gen_images, image_ids

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

IMAGES = gen_images()
KINDS = ["THRESH_BINARY", "THRESH_BINARY_INV", "THRESH_TRUNC", "THRESH_TOZERO", "THRESH_TOZERO_INV"]


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
@pytest.mark.parametrize("kind", KINDS)
def test_threshold(cv2, close, img: np.ndarray, kind: str) -> None:
    t = getattr(cv2, kind)
    close(MNN.cv.threshold(img, 100.5, 200.7, t), cv2.threshold(img, 100.5, 200.7, t)[1], 0)


def test_threshold_otsu(cv2, close, photo: np.ndarray) -> None:
    gray = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)
    close(MNN.cv.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU),
          cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1], 0)


@pytest.mark.parametrize("method", ["ADAPTIVE_THRESH_MEAN_C", "ADAPTIVE_THRESH_GAUSSIAN_C"])
@pytest.mark.parametrize("kind", ["THRESH_BINARY", "THRESH_BINARY_INV"])
def test_adaptive_threshold(cv2, close, photo: np.ndarray, method: str, kind: str) -> None:
    gray = np.ascontiguousarray(photo[:, :, 1])
    m, t = getattr(cv2, method), getattr(cv2, kind)
    for block, c in ((7, 2), (7, -3.5), (3, 0), (5, 1.5), (11, 3)):
        got = MNN.cv.adaptiveThreshold(gray, 255, m, t, block, c).read().reshape(gray.shape)
        ref = cv2.adaptiveThreshold(gray, 255, m, t, block, c)
        np.testing.assert_array_equal(got, ref)


def _fused_atol(cv2: object) -> int:
    """mnnpy follows the wheel's AVX2 + FMA3 addWeighted kernel (cv::CpuFeatures 11 and 12); on an older CPU the
    oracle rounds some .5 ties its own way."""
    return 0 if cv2.checkHardwareSupport(11) and cv2.checkHardwareSupport(12) else 1


def test_add_weighted_uint8_bit_exact(cv2, close) -> None:
    """Weights with many exact .5 results (0.3/0.6/5.5 and one-decimal ones) and random ones, several sizes."""
    rs = np.random.RandomState(3)
    for i in range(40):
        shape = [(17, 45, 3), (13, 29), (7, 9, 4), (1, 5)][i % 4]
        a, b = (rs.randint(0, 256, shape).astype(np.uint8) for _ in range(2))
        weights = [(0.3, 0.6, 5.5), (0.7, 0.9, 9.4), tuple(round(float(v), 1) for v in rs.rand(3) * (1, 1, 10)),
                   (rs.rand() * 3 - 1, rs.rand() * 2 - 1, rs.rand() * 50 - 25)][i % 4]
        al, be, ga = (float(v) for v in weights)
        close(MNN.cv.addWeighted(a, al, b, be, ga), cv2.addWeighted(a, al, b, be, ga), _fused_atol(cv2))


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_arithmetic(cv2, close, img: np.ndarray) -> None:
    other = np.ascontiguousarray(img[::-1])
    atol = 0 if img.dtype == np.uint8 else 1e-3
    # uint8: OpenCV's fused float32 arithmetic (SIMD body and scalar tail) reproduced, .5 ties included
    ref = cv2.addWeighted(img, 0.3, other, 0.6, 5.5)
    close(MNN.cv.addWeighted(img, 0.3, other, 0.6, 5.5), ref, atol if atol else _fused_atol(cv2))
    w1 = np.random.RandomState(0).rand(*img.shape[:2]).astype(np.float32)
    w2 = (1 - w1).astype(np.float32)
    close(MNN.cv.blendLinear(img, other, w1, w2), cv2.blendLinear(img, other, w1, w2), 1 if atol == 0 else 1e-3)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_concat_split_merge(cv2, close, img: np.ndarray) -> None:
    close(MNN.cv.hconcat([img, img[:, :5]]), cv2.hconcat([img, np.ascontiguousarray(img[:, :5])]), 0)
    close(MNN.cv.vconcat([img, img[:4]]), cv2.vconcat([img, np.ascontiguousarray(img[:4])]), 0)
    planes = MNN.cv.split(img)
    ref = cv2.split(img)
    assert len(planes) == len(ref)
    for got, want in zip(planes, ref, strict=True):
        close(got, want, 0)
    close(MNN.cv.merge(planes), cv2.merge(ref), 0)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_normalize_mean(cv2, close, img: np.ndarray) -> None:
    for kind in ("NORM_MINMAX", "NORM_L2", "NORM_L1", "NORM_INF"):
        nt = getattr(cv2, kind)
        a, b = (10.0, 200.0) if kind == "NORM_MINMAX" else (100.0, 0.0)
        ref = cv2.normalize(img, None, a, b, nt)
        close(MNN.cv.normalize(img, None, a, b, nt), ref, 0 if img.dtype == np.uint8 and kind != "NORM_L1" else 1e-3)
    mask = (np.arange(img.shape[0] * img.shape[1]).reshape(img.shape[:2]) % 3 == 0).astype(np.uint8)
    np.testing.assert_allclose(MNN.cv.mean(img), cv2.mean(img), rtol=1e-5)
    np.testing.assert_allclose(MNN.cv.mean(img, mask), cv2.mean(img, mask=mask), rtol=1e-5)


def test_bitwise_copy(cv2, close) -> None:
    rs = np.random.RandomState(2)
    a = rs.randint(0, 256, (13, 17, 3)).astype(np.uint8)
    b = rs.randint(0, 256, (13, 17, 3)).astype(np.uint8)
    mask = rs.randint(0, 2, (13, 17)).astype(np.uint8)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        close(getattr(MNN.cv, name)(a, b), getattr(cv2, name)(a, b), 0)
        close(getattr(MNN.cv, name)(a, b, mask=mask), getattr(cv2, name)(a, b, mask=mask), 0)
    close(MNN.cv.copyTo(a, mask, b), cv2.copyTo(a, mask, b.copy()), 0)


def test_calc_hist(cv2, close, photo: np.ndarray) -> None:
    for ch, bins, rng in [(0, [256], [0, 256]), (1, [16], [0, 256]), (2, [10], [50, 200])]:
        close(MNN.cv.calcHist([photo], [ch], None, bins, rng), cv2.calcHist([photo], [ch], None, bins, rng), 0)
    mask = (photo[:, :, 0] > 100).astype(np.uint8)
    close(MNN.cv.calcHist([photo], [1], mask, [32], [0, 256]), cv2.calcHist([photo], [1], mask, [32], [0, 256]), 0)
