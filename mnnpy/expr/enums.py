"""Enums and constants of `MNN.expr`: dtypes, data formats, padding / pooling / interpolation modes, runtime modes."""

from __future__ import annotations

import enum

import numpy as np


class dtype(enum.Enum):  # noqa: N801 - MNN's name
    """Element types of a Var (MNN: `MNN.expr.dtype`)."""

    float = 0
    double = 1
    int = 2
    int64 = 3
    uint8 = 4
    int8 = 5

    def __str__(self) -> str:
        return f"dtype.{self.name}"


class data_format(enum.Enum):  # noqa: N801 - MNN's name
    """Dimension formats of a Var (MNN: `MNN.expr.data_format`)."""

    NCHW = 0
    NHWC = 1
    NC4HW4 = 2

    def __str__(self) -> str:
        return f"data_format.{self.name}"


class Padding_Mode(enum.Enum):  # noqa: N801 - MNN's name
    """Convolution / pooling padding modes (MNN: `MNN.expr.Padding_Mode`)."""

    CAFFE = 0
    VALID = 1
    SAME = 2


class PadValue_Mode(enum.Enum):  # noqa: N801 - MNN's name
    """`pad` modes (MNN: `MNN.expr.PadValue_Mode`)."""

    CONSTANT = 0
    REFLECT = 1
    SYMMETRIC = 2


class Pooling_Mode(enum.Enum):  # noqa: N801 - MNN's name
    """Pooling kinds (MNN: `MNN.expr.Pooling_Mode`)."""

    MAXPOOL = 0
    AVEPOOL = 1


class Interp_Method(enum.Enum):  # noqa: N801 - MNN's name
    """Interpolation methods (MNN: `MNN.expr.Interp_Method`)."""

    BILINEAR = 0
    NEAREST = 1


class Backend(enum.Enum):
    """Forward types (MNN: `MNN.expr.Backend`)."""

    CPU = 0
    OPENCL = 3
    OPENGL = 6
    VULKAN = 7
    METAL = 1
    TRT = 9
    CUDA = 2
    HIAI = 8


class MemoryMode(enum.Enum):
    """Runtime memory modes (MNN: `MNN.expr.MemoryMode`)."""

    Normal = 0
    High = 1
    Low = 2


class PowerMode(enum.Enum):
    """Runtime power modes (MNN: `MNN.expr.PowerMode`)."""

    Normal = 0
    High = 1
    Low = 2


class PrecisionMode(enum.Enum):
    """Runtime precision modes (MNN: `MNN.expr.PrecisionMode`)."""

    Normal = 0
    High = 1
    Low = 2
    Low_BF16 = 3


NP_OF_DTYPE: dict[dtype, np.dtype] = {
    dtype.float: np.dtype(np.float32), dtype.double: np.dtype(np.float64), dtype.int: np.dtype(np.int32),
    dtype.int64: np.dtype(np.int64), dtype.uint8: np.dtype(np.uint8), dtype.int8: np.dtype(np.int8),
}
# MNN DataType numbers of the schema
MNN_OF_NP: dict[np.dtype, int] = {
    np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.int32): 3, np.dtype(np.uint8): 4,
    np.dtype(np.int8): 6, np.dtype(np.int64): 9, np.dtype(np.int16): 5, np.dtype(np.float16): 19,
}
FORMAT_NAME: dict[data_format, str] = {data_format.NCHW: "NCHW", data_format.NHWC: "NHWC",
                                       data_format.NC4HW4: "NC4HW4"}
FORMAT_OF_NAME: dict[str, data_format] = {v: k for k, v in FORMAT_NAME.items()}


def to_np_dtype(value: object) -> np.dtype:
    """An expr dtype, numpy dtype, Python type or None (float32) as the numpy dtype Vars hold."""
    if value is None:
        return np.dtype(np.float32)
    if isinstance(value, dtype):
        return NP_OF_DTYPE[value]
    dt = np.dtype(value)  # type: ignore[call-overload]
    if dt == np.bool_:
        return np.dtype(np.int32)
    return dt


def to_expr_dtype(value: np.dtype) -> dtype:
    """The expr dtype of a numpy dtype (int16/bool as int, float16 as float)."""
    dt = np.dtype(value)
    for k, v in NP_OF_DTYPE.items():
        if v == dt:
            return k
    return dtype.float if dt.kind == "f" else dtype.int


def normalise_array(value: object, want: object = None) -> np.ndarray:
    """Convert user data as MNN does: float64 -> float32, int64 -> int32, bool -> int32 unless a dtype is given."""
    arr = np.asarray(value)
    if want is not None:
        return np.require(arr.astype(to_np_dtype(want), copy=False), requirements="C")
    if arr.dtype == np.float64 or arr.dtype.kind == "f":
        arr = arr.astype(np.float32, copy=False)
    elif arr.dtype == np.bool_ or (arr.dtype.kind in "iu" and arr.dtype not in (np.uint8, np.int8, np.int32)):
        arr = arr.astype(np.int32, copy=False)
    elif arr.dtype.kind not in "iuf":
        raise TypeError(f"cannot make a Var from data of dtype {arr.dtype}")
    return np.require(arr, requirements="C")
