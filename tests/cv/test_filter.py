"""Filters, derivatives, pyramids, morphology and kernel builders against OpenCV."""

from __future__ import annotations

import numpy as np
import pytest
from cv.cv_images import gen_images, image_ids

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

IMAGES = gen_images()
BORDERS = ["BORDER_REFLECT_101", "BORDER_REPLICATE", "BORDER_CONSTANT", "BORDER_REFLECT", "BORDER_WRAP"]


def _atol(img: np.ndarray, flt: float = 1e-3) -> float:
    return 1 if img.dtype == np.uint8 else flt


def _exact(img: np.ndarray) -> float:
    return 0 if img.dtype == np.uint8 else 1e-3


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_box_filters(cv2, close, img: np.ndarray) -> None:
    for name in BORDERS[:4]:
        b = getattr(cv2, name)
        close(MNN.cv.blur(img, (3, 5), borderType=b), cv2.blur(img, (3, 5), borderType=b), _exact(img))
    close(MNN.cv.boxFilter(img, -1, (4, 3), normalize=False), cv2.boxFilter(img, -1, (4, 3), normalize=False), 1e-3)
    close(MNN.cv.sqrBoxFilter(img, -1, (3, 3)), cv2.sqrBoxFilter(img, -1, (3, 3)), 0.1)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_gaussian_and_bilateral(cv2, close, img: np.ndarray) -> None:
    exact = 0 if img.dtype == np.uint8 else 1e-3  # uint8: OpenCV's bit-exact fixed-point Gaussian
    close(MNN.cv.GaussianBlur(img, (5, 5), 1.2), cv2.GaussianBlur(img, (5, 5), 1.2), exact)
    close(MNN.cv.GaussianBlur(img, (0, 0), 1.5), cv2.GaussianBlur(img, (0, 0), 1.5), exact)
    close(MNN.cv.GaussianBlur(img, (3, 7), 0), cv2.GaussianBlur(img, (3, 7), 0), exact)
    if img.dtype != np.uint8 or img.ndim == 2 or img.shape[2] == 3:  # OpenCV: 8u bilateral is 1 or 3 channels
        close(MNN.cv.bilateralFilter(img, 5, 30, 3), cv2.bilateralFilter(img, 5, 30, 3), _atol(img, 0.5))


@pytest.mark.parametrize("ksize,sigma", [((9, 9), 0), ((15, 15), 0), ((11, 5), 2.3), ((3, 3), 0.5), ((0, 0), 0.8),
                                         ((7, 13), 3.7)])
def test_gaussian_uint8_bit_exact(cv2, close, photo: np.ndarray, ksize: tuple[int, int], sigma: float) -> None:
    for b in [*BORDERS[:4], "BORDER_REPLICATE"]:
        border = getattr(cv2, b) | (cv2.BORDER_ISOLATED if b == "BORDER_REPLICATE" else 0)
        close(MNN.cv.GaussianBlur(photo, ksize, sigma, borderType=border),
              cv2.GaussianBlur(photo, ksize, sigma, borderType=border), 0)
    gray = np.ascontiguousarray(photo[:, :, 2])
    close(MNN.cv.GaussianBlur(gray, ksize, sigma, sigma * 0.5),
          cv2.GaussianBlur(gray, ksize, sigma, None, sigma * 0.5), 0)
    with pytest.raises(ValueError, match="GaussianBlur: ksize must be odd"):
        MNN.cv.GaussianBlur(gray, (4, 3), 1.0)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_filter2d_sep(cv2, close, img: np.ndarray) -> None:
    k = np.array([[1, 2, 0], [-1, 3, 1], [0, 1, -2]], np.float32) / 5
    close(MNN.cv.filter2D(img, -1, k), cv2.filter2D(img, -1, k), 1e-3)
    close(MNN.cv.filter2D(img, cv2.CV_32F, k, (0, 1)), cv2.filter2D(img, cv2.CV_32F, k, anchor=(0, 1)), 1e-3)
    kx, ky = np.float32([1, 2, 3]), np.float32([1, -1])
    close(MNN.cv.sepFilter2D(img, cv2.CV_32F, kx, ky), cv2.sepFilter2D(img, cv2.CV_32F, kx, ky), 1e-3)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_derivatives(cv2, close, img: np.ndarray) -> None:
    for dx, dy, ks in [(1, 0, 3), (0, 1, 3), (1, 1, 5), (2, 0, 5), (1, 0, 1), (0, 2, 7)]:
        ref = cv2.Sobel(img, cv2.CV_32F, dx, dy, ksize=ks)
        close(MNN.cv.Sobel(img, cv2.CV_32F, dx, dy, ks), ref, 1e-5 * max(1.0, float(np.abs(ref).max())))
    close(MNN.cv.Sobel(img, cv2.CV_16S, 1, 0), cv2.Sobel(img, cv2.CV_16S, 1, 0), 0)
    close(MNN.cv.Sobel(img, -1, 1, 0), cv2.Sobel(img, -1, 1, 0), 1e-3)
    close(MNN.cv.Scharr(img, cv2.CV_32F, 0, 1), cv2.Scharr(img, cv2.CV_32F, 0, 1), 1e-2)
    for ks in (1, 3, 5):
        close(MNN.cv.Laplacian(img, cv2.CV_32F, ks), cv2.Laplacian(img, cv2.CV_32F, ksize=ks), 1e-2)
    if img.ndim == 2 and img.dtype == np.uint8:
        dx, dy = MNN.cv.spatialGradient(img)
        rx, ry = cv2.spatialGradient(img)
        close(dx, rx, 0)
        close(dy, ry, 0)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_pyramids(cv2, close, img: np.ndarray) -> None:
    exact = 0 if img.dtype == np.uint8 else 1e-3
    close(MNN.cv.pyrDown(img), cv2.pyrDown(img), exact)
    close(MNN.cv.pyrUp(img), cv2.pyrUp(img), exact)


@pytest.mark.parametrize("img", IMAGES, ids=image_ids())
def test_morphology(cv2, close, img: np.ndarray) -> None:
    for shape in (0, 1, 2):
        se = cv2.getStructuringElement(shape, (5, 3))
        np.testing.assert_array_equal(MNN.cv.getStructuringElement(shape, (5, 3)), se)
        close(MNN.cv.erode(img, se), cv2.erode(img, se), 0)
        close(MNN.cv.dilate(img, se, iterations=2), cv2.dilate(img, se, iterations=2), 0)
    se = cv2.getStructuringElement(2, (7, 7))
    np.testing.assert_array_equal(MNN.cv.getStructuringElement(2, (7, 7)), se)


def test_photo_filters(cv2, close, photo: np.ndarray) -> None:
    close(MNN.cv.GaussianBlur(photo, (5, 5), 1.0), cv2.GaussianBlur(photo, (5, 5), 1.0), 0)
    close(MNN.cv.Sobel(photo, cv2.CV_16S, 1, 1), cv2.Sobel(photo, cv2.CV_16S, 1, 1), 0)
    close(MNN.cv.pyrDown(photo), cv2.pyrDown(photo), 0)
    close(MNN.cv.erode(photo, np.ones((3, 3), np.uint8)), cv2.erode(photo, np.ones((3, 3), np.uint8)), 0)


def test_kernels(cv2) -> None:
    np.testing.assert_allclose(MNN.cv.getGaussianKernel(9, 2.0), cv2.getGaussianKernel(9, 2.0), atol=1e-12)
    for k in (1, 3, 5, 7):
        np.testing.assert_allclose(MNN.cv.getGaussianKernel(k, 0), cv2.getGaussianKernel(k, 0), atol=1e-12)
    for args in [(1, 0, 3), (0, 2, 5), (1, 0, -1), (0, 1, -1), (2, 1, 7)]:
        for norm in (False, True):
            ref = cv2.getDerivKernels(*args, normalize=norm)
            got = MNN.cv.getDerivKernels(*args, normalize=norm)
            np.testing.assert_allclose(got[0], ref[0], atol=1e-7)
            np.testing.assert_allclose(got[1], ref[1], atol=1e-7)
    for size in ((7, 9), (0, 0)):
        np.testing.assert_allclose(MNN.cv.getGaborKernel(size, 2.0, 0.5, 4.0, 0.7),
                                   cv2.getGaborKernel(size, 2.0, 0.5, 4.0, 0.7), atol=1e-6)
