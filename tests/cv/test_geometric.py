"""resize, warps, remap, getRectSubPix, flip, rotate and the matrix helpers against OpenCV."""

from __future__ import annotations

import numpy as np
import pytest
from cv.cv_images import gen_images, image_ids

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

IMAGES = gen_images()
INTERS = ["INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA"]
BORDERS = ["BORDER_CONSTANT", "BORDER_REPLICATE", "BORDER_REFLECT", "BORDER_REFLECT_101", "BORDER_WRAP"]


def _atol(img: np.ndarray) -> float:
    return 2 if img.dtype == np.uint8 else 1e-3


def _exact(img: np.ndarray) -> float:
    """Warps and remap reproduce OpenCV's fixed-point remap: uint8 bit exact, float32 to rounding."""
    return 0 if img.dtype == np.uint8 else 1e-3


def _resize_both(cv2, img: np.ndarray, dsize, fx: float, fy: float, code: int) -> tuple:
    if dsize is None:
        return MNN.cv.resize(img, None, fx, fy, code), cv2.resize(img, None, fx=fx, fy=fy, interpolation=code)
    return MNN.cv.resize(img, dsize, interpolation=code), cv2.resize(img, dsize, interpolation=code)


def _resize_cases(img: np.ndarray) -> list:
    h, w = img.shape[:2]
    return [((13, 9), 0, 0), ((47, 40), 0, 0), ((w // 2, h // 3), 0, 0), ((w * 2, h * 2), 0, 0),
            (None, 0.5, 0.5), (None, 1 / 3, 0.25), (None, 1.7, 0.6), ((w // 3, h // 3), 0, 0), ((1, 1), 0, 0)]


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
@pytest.mark.parametrize("inter", INTERS)
def test_resize(no_ipp, close, img: np.ndarray, inter: str) -> None:
    """uint8: OpenCV's fixed-point / float32 arithmetic reproduced bit for bit for every interpolation."""
    cv2 = no_ipp
    atol = 0 if inter == "INTER_NEAREST" or img.dtype == np.uint8 else _atol(img)
    for dsize, fx, fy in _resize_cases(img):
        close(*_resize_both(cv2, img, dsize, fx, fy, getattr(cv2, inter)), atol)


@pytest.mark.parametrize("img", [im for im in IMAGES if im.dtype == np.uint8], ids=image_ids()[:3])
def test_resize_cubic_uint8_vs_ipp(cv2, close, img: np.ndarray) -> None:
    """With IPP on (the wheel's default) OpenCV's uint8 bicubic resize rounds differently by at most 1."""
    for dsize, fx, fy in _resize_cases(img):
        close(*_resize_both(cv2, img, dsize, fx, fy, cv2.INTER_CUBIC), 1)


def test_resize_photo(no_ipp, close, photo: np.ndarray) -> None:
    cv2 = no_ipp
    h, w = photo.shape[:2]
    for code in (cv2.INTER_LINEAR, cv2.INTER_AREA, cv2.INTER_CUBIC):
        for dsize in [(61, 47), (w // 3, h // 3), (w // 4, h // 2), (w + 7, h * 2 + 1), (w * 3, 40)]:
            close(MNN.cv.resize(photo, dsize, interpolation=code), cv2.resize(photo, dsize, interpolation=code), 0)


@pytest.mark.parametrize("seed", range(3))
def test_resize_uint8_bit_exact_random(no_ipp, close, seed: int) -> None:
    """Random sizes and factors (up, down, mixed) for LINEAR, CUBIC and AREA, 1/3/4 channels: every pixel equal."""
    cv2 = no_ipp
    rs = np.random.RandomState(seed)
    for c in (1, 3, 4):
        h, w = rs.randint(2, 70, 2)
        img = rs.randint(0, 256, (h, w, c)).astype(np.uint8)
        for code in (cv2.INTER_LINEAR, cv2.INTER_CUBIC, cv2.INTER_AREA):
            for _ in range(3):
                dsize = (int(rs.randint(1, 100)), int(rs.randint(1, 100)))
                close(MNN.cv.resize(img, dsize, interpolation=code), cv2.resize(img, dsize, interpolation=code), 0)
            fx, fy = 1 / rs.randint(2, 5), 1 / rs.randint(1, 4)
            close(*_resize_both(cv2, img, None, fx, fy, code), 0)


def test_resize_mean_norm(cv2, close) -> None:
    img = IMAGES[0]
    got = MNN.cv.resize(img, (10, 8), 0, 0, MNN.cv.INTER_LINEAR, MNN.cv.COLOR_BGR2RGB, [1, 2, 3], [0.5, 0.25, 2])
    ref = (cv2.resize(img[..., ::-1].copy(), (10, 8)).astype(np.float32) - [1, 2, 3]) * [0.5, 0.25, 2]
    close(got, ref, 2 * 2)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
@pytest.mark.parametrize("flags", ["INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC"])
def test_warp_affine(cv2, close, img: np.ndarray, flags: str) -> None:
    m = cv2.getRotationMatrix2D((10.5, 7.0), 31.0, 0.85)
    np.testing.assert_allclose(MNN.cv.getRotationMatrix2D((10.5, 7.0), 31.0, 0.85), m, atol=1e-12)
    fl = getattr(cv2, flags)
    for border in BORDERS:
        bm = getattr(cv2, border)
        ref = cv2.warpAffine(img, m, (25, 19), flags=fl, borderMode=bm, borderValue=(7, 9, 11, 13))
        close(MNN.cv.warpAffine(img, m, (25, 19), fl, bm, (7, 9, 11, 13)), ref, _exact(img))
    close(MNN.cv.warpAffine(img, m, (25, 19), flag=fl), cv2.warpAffine(img, m, (25, 19), flags=fl), _exact(img))
    inv = cv2.warpAffine(img, m, (25, 19), flags=fl | cv2.WARP_INVERSE_MAP)
    close(MNN.cv.warpAffine(img, m, (25, 19), fl | MNN.cv.WARP_INVERSE_MAP), inv, _exact(img))


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_warp_perspective_and_remap(cv2, close, img: np.ndarray) -> None:
    src = np.float32([[0, 0], [20, 2], [3, 14], [22, 16]])
    dst = np.float32([[2, 1], [18, 0], [0, 15], [21, 13]])
    p = cv2.getPerspectiveTransform(src, dst)
    np.testing.assert_allclose(MNN.cv.getPerspectiveTransform(src, dst), p, rtol=1e-9, atol=1e-9)
    for fl in (cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC):
        ref = cv2.warpPerspective(img, p, (23, 17), flags=fl)
        close(MNN.cv.warpPerspective(img, p, (23, 17), fl), ref, _exact(img))
    rs = np.random.RandomState(1)
    mx = (rs.rand(11, 13) * (img.shape[1] + 4) - 2).astype(np.float32)
    my = (rs.rand(11, 13) * (img.shape[0] + 4) - 2).astype(np.float32)
    for fl in (cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC):
        for bm in (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE, cv2.BORDER_REFLECT_101):
            close(MNN.cv.remap(img, mx, my, fl, bm), cv2.remap(img, mx, my, fl, borderMode=bm), _exact(img))


def test_warp_affine_accepts_cv_matrix(cv2, close) -> None:
    from mnnpy.cv_process import CVMatrix

    img = IMAGES[0]
    m = cv2.getRotationMatrix2D((10.5, 7.0), 31.0, 0.85)
    cvm = CVMatrix()
    cvm.write([*m.ravel().tolist(), 0.0, 0.0, 1.0])
    close(MNN.cv.warpAffine(img, cvm, (25, 19)), cv2.warpAffine(img, m, (25, 19)), 0)
    maps = MNN.cv.convertMaps(np.zeros((3, 4)), np.ones((3, 4)), 5)
    assert maps[0].dtype == np.float32 and maps[1].shape == (3, 4)


def test_affine_helpers(cv2) -> None:
    src = np.float32([[0, 0], [10, 1], [2, 9]])
    dst = np.float32([[1, 2], [12, 0], [0, 11]])
    m = cv2.getAffineTransform(src, dst)
    np.testing.assert_allclose(MNN.cv.getAffineTransform(src, dst), m, atol=1e-9)
    np.testing.assert_allclose(MNN.cv.invertAffineTransform(m), cv2.invertAffineTransform(m), atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_warps_uint8_bit_exact_random(cv2, close, photo: np.ndarray, seed: int) -> None:
    """Random rotations/scales, homographies and float maps on the photo (1, 3, 4 channels): every uint8 pixel
    equal to OpenCV's for nearest, linear and cubic and every border mode, including far-away perspective taps."""
    rs = np.random.RandomState(seed)
    img = [np.ascontiguousarray(photo[..., 1]), photo, np.dstack([photo, photo[..., :1]])][seed % 3]
    h, w = img.shape[:2]
    m = cv2.getRotationMatrix2D((rs.rand() * w, rs.rand() * h), rs.rand() * 360, 0.5 + rs.rand())
    m[:, 2] += rs.randn(2) * 5
    corners = np.float32([[0, 0], [w, 0], [0, h], [w, h]])
    p = cv2.getPerspectiveTransform(corners, (corners + rs.randn(4, 2) * w / 8).astype(np.float32))
    dw, dh = rs.randint(20, 90, 2)
    mx = (rs.rand(dh, dw) * (w + 8) - 4).astype(np.float32)
    my = (rs.rand(dh, dw) * (h + 8) - 4).astype(np.float32)
    for fl in (cv2.INTER_NEAREST, cv2.INTER_LINEAR, cv2.INTER_CUBIC):
        for border in BORDERS:
            bm, bv = getattr(cv2, border), (7, 200, 11, 130)
            ref = cv2.warpAffine(img, m, (dw, dh), flags=fl, borderMode=bm, borderValue=bv)
            close(MNN.cv.warpAffine(img, m, (dw, dh), fl, bm, bv), ref, 0)
            ref = cv2.warpPerspective(img, p, (dw, dh), flags=fl, borderMode=bm, borderValue=bv)
            close(MNN.cv.warpPerspective(img, p, (dw, dh), fl, bm, bv), ref, 0)
            close(MNN.cv.remap(img, mx, my, fl, bm, bv), cv2.remap(img, mx, my, fl, borderMode=bm, borderValue=bv), 0)


@pytest.mark.parametrize("img", [im for im in IMAGES if im.ndim == 2 or im.shape[2] in (1, 3)])
def test_get_rect_sub_pix(cv2, close, img: np.ndarray) -> None:
    for center in [(10.3, 7.6), (0.2, 1.5), (img.shape[1] - 0.7, img.shape[0] + 1.2)]:
        ref = cv2.getRectSubPix(img, (9, 7), center)  # IPP on (the wheel's default)
        close(MNN.cv.getRectSubPix(img, (9, 7), center), ref, _atol(img))
        was = cv2.ipp.useIPP()
        cv2.ipp.setUseIPP(False)
        try:
            ref = cv2.getRectSubPix(img, (9, 7), center)  # OpenCV's own code: Q16 weights for uint8
        finally:
            cv2.ipp.setUseIPP(was)
        close(MNN.cv.getRectSubPix(img, (9, 7), center), ref, _exact(img))


@pytest.mark.parametrize("seed", range(3))
def test_get_rect_sub_pix_random_exact(no_ipp, close, seed: int) -> None:
    """Patches inside, across and far outside the image (OpenCV's clamped tap pairs), uint8 and float32."""
    cv2 = no_ipp
    rs = np.random.RandomState(seed)
    for i in range(30):
        h, w = rs.randint(1, 30, 2)
        img = rs.randint(0, 256, (h, w, 3 if i % 2 else 1)).astype(np.float32 if i % 5 == 4 else np.uint8)
        patch = (int(rs.randint(1, 15)), int(rs.randint(1, 15)))
        center = (rs.rand() * (w + 20) - 10, rs.rand() * (h + 20) - 10)
        close(MNN.cv.getRectSubPix(img, patch, center), cv2.getRectSubPix(img, patch, center), _exact(img))


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_flip_rotate(cv2, close, img: np.ndarray) -> None:
    for code in (0, 1, -1):
        close(MNN.cv.flip(img, code), cv2.flip(img, code), 0)
    for code in (cv2.ROTATE_90_CLOCKWISE, cv2.ROTATE_180, cv2.ROTATE_90_COUNTERCLOCKWISE):
        close(MNN.cv.rotate(img, code), cv2.rotate(img, code), 0)
