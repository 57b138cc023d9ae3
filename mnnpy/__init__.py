"""mnnpy: an MNN-style inference engine in Python. `import mnnpy as MNN` runs scripts written for MNN's package.

Importing this package is cheap: it loads no backend, no converter and no FlatBuffers code. Heavier parts are
imported on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import Any

from mnnpy.schema.errors import ModelError

__version__ = "0.1.0"
__all__ = ["ModelError", "__version__", "version"]

# public name -> module that defines it, imported on first access
_LAZY: dict[str, str] = {
    "Interpreter": "mnnpy.interpreter",
    "OpInfo": "mnnpy.interpreter",
    "Session": "mnnpy.core.session",
    "Tensor": "mnnpy.tensor",
    **{name: "mnnpy.tensor" for name in (
        "Halide_Type_Float", "Halide_Type_Double", "Halide_Type_Int", "Halide_Type_Int64", "Halide_Type_Uint8",
        "Halide_Type_Int8", "Halide_Type_String", "Tensor_DimensionType_Tensorflow", "Tensor_DimensionType_Caffe",
        "Tensor_DimensionType_Caffe_C4", "Tensor_DimensionType_Caddfe_C4")},
    **{name: "mnnpy.cv_process" for name in (
        "CVImageProcess", "CVMatrix", "CV_ImageFormat_RGBA", "CV_ImageFormat_RGB", "CV_ImageFormat_BGR",
        "CV_ImageFormat_GRAY", "CV_ImageFormat_BGRA", "CV_ImageFormat_YUV_NV21", "CV_Filter_NEAREST",
        "CV_Filter_BILINEAL", "CV_Filter_BICUBIC", "CV_Wrap_CLAMP_TO_EDGE", "CV_Wrap_ZERO", "CV_Wrap_REPEAT")},
}


def version() -> str:
    """mnnpy's version string (MNN: `MNN.version()`)."""
    return __version__


# subpackages reachable as attributes (`MNN.numpy.array(...)` without importing mnnpy.numpy first)
_SUBPACKAGES = frozenset({"expr", "nn", "numpy", "cv"})


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"mnnpy.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mnnpy' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
