"""Image codecs through Pillow (MNN: `cv.imread`, `imwrite`, `imdecode`, `imencode`, `haveImageReader/Writer`).

Decoded images are HWC uint8 Vars in OpenCV's BGR(A) channel order; grayscale reads give [H, W, 1] as in MNN.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from mnnpy.cv import constants as cc
from mnnpy.cv._util import to_np, to_var
from mnnpy.expr.var import Var

_IMREAD_UNCHANGED = -1  # cv2.IMREAD_UNCHANGED (MNN.cv does not export the name)
_EXT_FORMAT = {".jpg": "JPEG", ".jpeg": "JPEG", ".jpe": "JPEG", ".png": "PNG", ".bmp": "BMP", ".tif": "TIFF",
               ".tiff": "TIFF", ".webp": "WEBP", ".ppm": "PPM", ".pgm": "PPM", ".pbm": "PPM"}


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("mnnpy.cv image codecs need Pillow: pip install pillow") from exc
    return Image


def _from_pil(im: Any, flags: int) -> Var:
    if flags == cc.IMREAD_GRAYSCALE:
        from mnnpy.cv.color import cvtColor

        rgb = np.asarray(im.convert("RGB"))
        return cvtColor(to_var(np.ascontiguousarray(rgb)), cc.COLOR_RGB2GRAY)
    if flags == _IMREAD_UNCHANGED and im.mode in ("RGBA", "LA", "P"):
        arr = np.asarray(im.convert("RGBA"))[..., [2, 1, 0, 3]]
    elif flags == _IMREAD_UNCHANGED and im.mode == "L":
        arr = np.asarray(im)
    else:
        arr = np.asarray(im.convert("RGB"))[..., ::-1]
    return to_var(np.ascontiguousarray(arr))


def imread(filename: str, flags: int = cc.IMREAD_COLOR) -> Var:
    """Read an image file as a BGR HWC uint8 Var (MNN: `cv.imread`); an empty Var-less result raises."""
    image = _pil()
    with image.open(os.fspath(filename)) as im:
        im.load()
        return _from_pil(im, flags)


def imdecode(buf: Any, flags: int = cc.IMREAD_COLOR) -> Var:
    """Decode an encoded image held in a byte buffer / uint8 array (MNN: `cv.imdecode`)."""
    data = bytes(np.asarray(to_np(buf), dtype=np.uint8).ravel())
    image = _pil()
    with image.open(io.BytesIO(data)) as im:
        im.load()
        return _from_pil(im, flags)


def _to_pil(img: Any) -> Any:
    arr = to_np(img)
    if arr.dtype != np.uint8:
        arr = np.clip(np.round(arr), 0, 255).astype(np.uint8)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim == 3 and arr.shape[2] == 3:
        arr = arr[..., ::-1]
    elif arr.ndim == 3 and arr.shape[2] == 4:
        arr = arr[..., [2, 1, 0, 3]]
    return _pil().fromarray(np.ascontiguousarray(arr))


def _save_args(fmt: str, params: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    values = list(params or [])
    pairs = dict(zip(values[0::2], values[1::2], strict=False))
    if fmt == "JPEG":
        opts["quality"] = int(pairs.get(1, 95))  # IMWRITE_JPEG_QUALITY
    if fmt == "PNG":
        opts["compress_level"] = int(pairs.get(16, 1))  # IMWRITE_PNG_COMPRESSION
    return opts


def _format_of(ext: str) -> str:
    key = ext.lower() if ext.startswith(".") else "." + ext.lower()
    if key not in _EXT_FORMAT:
        raise ValueError(f"imencode/imwrite: no writer for extension {ext!r}")
    return _EXT_FORMAT[key]


def imencode(ext: str, img: Any, params: Any = None) -> tuple[bool, list[int]]:
    """Encode an image; returns (ok, bytes as a list of ints) as MNN does (MNN: `cv.imencode`)."""
    fmt = _format_of(ext)
    out = io.BytesIO()
    _to_pil(img).save(out, format=fmt, **_save_args(fmt, params))
    return True, list(out.getvalue())


def imwrite(filename: str, img: Any, params: Any = None) -> bool:
    """Write a BGR(A)/gray image to a file, format from the extension (MNN: `cv.imwrite`)."""
    name = os.fspath(filename)
    fmt = _format_of(os.path.splitext(name)[1])
    _to_pil(img).save(name, format=fmt, **_save_args(fmt, params))
    return True


def haveImageReader(filename: str) -> bool:
    """Whether the file exists and Pillow can decode it (MNN: `cv.haveImageReader`)."""
    try:
        with _pil().open(os.fspath(filename)) as im:
            return im.format is not None
    except (OSError, ValueError):
        return False


def haveImageWriter(filename: str) -> bool:
    """Whether a writer exists for the file name's extension (MNN: `cv.haveImageWriter`)."""
    return os.path.splitext(os.fspath(filename))[1].lower() in _EXT_FORMAT
