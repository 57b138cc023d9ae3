"""Fixtures for `mnnpy.cv` tests: OpenCV as the oracle, generated images with awkward sizes, a real photograph."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cv2():  # -> the cv2 module
    """OpenCV, skipped when the test-only extra is missing."""
    return pytest.importorskip("cv2", reason="opencv-python-headless not installed (test-only oracle)")


@pytest.fixture
def no_ipp(cv2):  # -> the cv2 module, with Intel IPP switched off for the test
    """OpenCV's own code paths: its wheel routes some calls (uint8 INTER_CUBIC resize) to closed IPP kernels,
    whose rounding differs by 1; mnnpy reproduces OpenCV's open arithmetic, compared exactly with IPP off."""
    was = cv2.ipp.useIPP()
    cv2.ipp.setUseIPP(False)
    yield cv2
    cv2.ipp.setUseIPP(was)


def photo_path() -> Path | None:
    """grace_hopper.jpg, the photograph shipped in matplotlib's wheel (mpl-data/sample_data); None without it."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "sample_data" / "grace_hopper.jpg"
    return path if path.exists() else None


@pytest.fixture(scope="session")
def photo_file() -> Path:
    """Path of the real photograph (skips when matplotlib is not installed)."""
    path = photo_path()
    if path is None:
        pytest.skip("matplotlib (ships grace_hopper.jpg) not installed")
    return path


@pytest.fixture(scope="session")
def photo(cv2, photo_file: Path) -> np.ndarray:
    """The photograph decoded by OpenCV, cropped to an odd size to keep the tests fast (BGR uint8)."""
    img = cv2.imread(str(photo_file), cv2.IMREAD_COLOR)
    return np.ascontiguousarray(img[101:300:2, 57:400:3])


@pytest.fixture(scope="session")
def close():  # -> the comparison function below
    """`close(got, ref, atol)`: compare an mnnpy result with OpenCV's."""
    return _close


def _close(got: object, ref: np.ndarray, atol: float) -> None:
    """Assert an mnnpy result (Var or array) equals an OpenCV result within atol (gray [H, W, 1] vs [H, W] ok)."""
    value = got.read() if hasattr(got, "read") else np.asarray(got)
    value = np.asarray(value)
    ref = np.asarray(ref)
    assert value.size == ref.size, f"shape {value.shape} vs OpenCV {ref.shape}"
    diff = np.abs(value.reshape(ref.shape).astype(np.float64) - ref.astype(np.float64))
    assert diff.max(initial=0.0) <= atol, f"max |diff| {diff.max()} > {atol}"
