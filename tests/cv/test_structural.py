"""findContours, connected components and the point-set helpers against OpenCV."""

from __future__ import annotations

import numpy as np
import pytest

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

MODES = ["RETR_LIST", "RETR_EXTERNAL", "RETR_CCOMP", "RETR_TREE"]


def _blobs(cv2, seed: int, h: int = 40, w: int = 47) -> np.ndarray:
    r = np.random.RandomState(seed)
    img = np.zeros((h, w), np.uint8)
    for _ in range(6):
        cv2.circle(img, (int(r.randint(0, w)), int(r.randint(0, h))), int(r.randint(2, 9)), 255, -1)
    for _ in range(3):
        cv2.circle(img, (int(r.randint(0, w)), int(r.randint(0, h))), int(r.randint(1, 4)), 0, -1)
    img[r.rand(h, w) < 0.02] = 255
    return img


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["CHAIN_APPROX_NONE", "CHAIN_APPROX_SIMPLE"])
def test_find_contours(cv2, mode: str, method: str) -> None:
    for seed in range(6):
        img = _blobs(cv2, seed)
        ref, ref_h = cv2.findContours(img, getattr(cv2, mode), getattr(cv2, method))
        got, got_h = MNN.cv.findContours(img, getattr(MNN.cv, mode), getattr(MNN.cv, method))
        assert len(got) == len(ref)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got_h, ref_h)


def test_find_contours_photo(cv2, photo: np.ndarray) -> None:
    gray = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)
    binary = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]
    ref, ref_h = cv2.findContours(binary, cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    got, got_h = MNN.cv.findContours(MNN.cv.threshold(gray, 0, 255, MNN.cv.THRESH_BINARY | MNN.cv.THRESH_OTSU),
                                     MNN.cv.RETR_TREE, MNN.cv.CHAIN_APPROX_SIMPLE)
    assert len(got) == len(ref)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref, strict=True))
    np.testing.assert_array_equal(got_h, ref_h)
    for c in ref[:20]:
        assert MNN.cv.contourArea(c) == pytest.approx(cv2.contourArea(c))
        assert MNN.cv.boundingRect(c) == cv2.boundingRect(c)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_connected_components(cv2, connectivity: int) -> None:
    for seed in range(4):
        img = _blobs(cv2, seed)
        n, labels, stats, cents = cv2.connectedComponentsWithStats(img, connectivity=connectivity)
        n2, labels2, stats2, cents2 = MNN.cv.connectedComponentsWithStats(img, connectivity)
        assert n2 == n
        np.testing.assert_array_equal(labels2, labels)
        np.testing.assert_array_equal(stats2, stats)
        np.testing.assert_allclose(cents2, cents, atol=1e-9)


def _cyclic_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = a.reshape(-1, 2), b.reshape(-1, 2)
    return len(a) == len(b) and any(np.array_equal(np.roll(a, k, 0), b) for k in range(len(a)))


def test_point_sets(cv2) -> None:
    rs = np.random.RandomState(1)
    for _ in range(25):
        pts = rs.randint(0, 50, (rs.randint(5, 30), 1, 2)).astype(np.int32)
        ptsf = (rs.rand(rs.randint(5, 30), 1, 2) * 50).astype(np.float32)
        for p in (pts, ptsf):
            assert MNN.cv.contourArea(p) == pytest.approx(cv2.contourArea(p), abs=1e-3)
            assert MNN.cv.contourArea(p, True) == pytest.approx(cv2.contourArea(p, True), abs=1e-3)
            assert MNN.cv.boundingRect(p) == cv2.boundingRect(p)
            for cw in (False, True):
                ref = cv2.convexHull(p, clockwise=cw)
                got = MNN.cv.convexHull(p, clockwise=cw)
                assert _cyclic_equal(got, ref)  # same cycle, same direction
                if len(ref) > 3 and p.dtype == np.int32:  # integer points: the same start point too
                    np.testing.assert_array_equal(got, ref)
            r_ref = cv2.minAreaRect(p)
            r_got = MNN.cv.minAreaRect(p)
            area_ref = r_ref[1][0] * r_ref[1][1]
            area_got = r_got[1][0] * r_got[1][1]
            assert area_got <= area_ref * (1 + 1e-4) + 1e-4  # OpenCV works in float32: near-ties may differ
            np.testing.assert_allclose(MNN.cv.boxPoints(r_ref), cv2.boxPoints(r_ref), atol=1e-4)
    img = np.zeros((20, 30), np.uint8)
    img[3:9, 5:17] = 1
    assert MNN.cv.boundingRect(img) == cv2.boundingRect(img)
