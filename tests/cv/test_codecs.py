"""imread / imwrite / imdecode / imencode (Pillow) against OpenCV's codecs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

pytest.importorskip("PIL", reason="Pillow not installed (mnnpy.cv codecs)")


def test_png_round_trip(cv2, tmp_path: Path) -> None:
    img = np.random.RandomState(0).randint(0, 256, (17, 23, 3)).astype(np.uint8)
    path = tmp_path / "a.png"
    assert MNN.cv.imwrite(str(path), img)
    np.testing.assert_array_equal(cv2.imread(str(path)), img)  # OpenCV reads what we wrote
    cv2.imwrite(str(tmp_path / "b.png"), img)
    got = MNN.cv.imread(str(tmp_path / "b.png"))
    assert got.shape == [17, 23, 3]
    np.testing.assert_array_equal(got.read(), img)
    gray = MNN.cv.imread(str(tmp_path / "b.png"), MNN.cv.IMREAD_GRAYSCALE).read()
    assert np.abs(gray[..., 0].astype(int) - cv2.imread(str(tmp_path / "b.png"), cv2.IMREAD_GRAYSCALE)).max() <= 1


def test_encode_decode(cv2) -> None:
    img = np.random.RandomState(1).randint(0, 256, (9, 14, 4)).astype(np.uint8)
    ok, buf = MNN.cv.imencode(".png", img)
    assert ok and isinstance(buf, list)
    np.testing.assert_array_equal(cv2.imdecode(np.array(buf, np.uint8), cv2.IMREAD_UNCHANGED), img)
    np.testing.assert_array_equal(MNN.cv.imdecode(np.array(buf, np.uint8), cv2.IMREAD_UNCHANGED).read(), img)
    np.testing.assert_array_equal(MNN.cv.imdecode(buf, MNN.cv.IMREAD_COLOR).read(), img[..., :3])


def test_photo_jpeg(cv2, photo_file: Path) -> None:
    ours = MNN.cv.imread(str(photo_file)).read()
    ref = cv2.imread(str(photo_file))
    assert ours.shape == ref.shape
    assert np.abs(ours.astype(int) - ref).max() <= 2  # two libjpeg builds; identical IDCT in practice
    assert MNN.cv.haveImageReader(str(photo_file))
    assert MNN.cv.haveImageWriter("x.jpg") and not MNN.cv.haveImageWriter("x.unknown")
    assert not MNN.cv.haveImageReader(str(photo_file) + ".missing")
