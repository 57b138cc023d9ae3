"""MNN's Python `Tensor`: host tensors and session tensors (MNN: `MNN.Tensor`, pymnn/src/Tensor.h).

A host tensor owns a numpy array in its dimension type's order. A session tensor is a handle on a tensor of a
Session; it reads and writes the session's (possibly NC4HW4) array through the layout helpers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.schema.errors import ModelError

Tensor_DimensionType_Tensorflow = 0
Tensor_DimensionType_Caffe = 1
Tensor_DimensionType_Caffe_C4 = 2
Tensor_DimensionType_Caddfe_C4 = Tensor_DimensionType_Caffe_C4  # alias some MNN scripts misspell


class HalideType:
    """A Halide element type; module-level singletons compared by identity, as MNN's capsules are."""

    def __init__(self, name: str, dtype: Any) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        return f"Halide_Type_{self.name}"


Halide_Type_Float = HalideType("Float", np.float32)
Halide_Type_Double = HalideType("Double", np.float64)
Halide_Type_Int = HalideType("Int", np.int32)
Halide_Type_Int64 = HalideType("Int64", np.int64)
Halide_Type_Uint8 = HalideType("Uint8", np.uint8)
Halide_Type_Int8 = HalideType("Int8", np.int8)
Halide_Type_String = HalideType("String", np.object_)
_BY_DTYPE = {t.dtype: t for t in (Halide_Type_Float, Halide_Type_Double, Halide_Type_Int, Halide_Type_Int64,
                                  Halide_Type_Uint8, Halide_Type_Int8)}
_DIM_OF_FMT = {"NCHW": Tensor_DimensionType_Caffe, "NHWC": Tensor_DimensionType_Tensorflow,
               "NC4HW4": Tensor_DimensionType_Caffe_C4}


def halide_type(dtype: Any) -> HalideType:
    """The Halide type singleton for a numpy dtype."""
    return _BY_DTYPE.get(np.dtype(dtype), Halide_Type_Float)


def _to_dtype(t: Any) -> np.dtype:
    return t.dtype if isinstance(t, HalideType) else np.dtype(t)


class Tensor:
    """MNN.Tensor: `Tensor(shape, haltype, data=None, dimType)` or `Tensor(other_tensor, dimType)`."""

    def __init__(self, shape: Any = None, haltype: Any = Halide_Type_Float, data: Any = None,
                 dimType: int = Tensor_DimensionType_Caffe, *, _session: Any = None, _index: int = -1) -> None:  # noqa: N803
        self._session = _session
        self._index = _index
        if _session is not None:
            return
        if isinstance(shape, Tensor):  # Tensor(tensor, dimType): a host copy in the given layout
            dim = haltype if isinstance(haltype, int) else dimType
            self._dim = dim
            self._array = shape._host_in(dim).copy()
            return
        dim_type = dimType
        if isinstance(data, int):  # Tensor(shape, haltype, dimType)
            data, dim_type = None, data
        if isinstance(haltype, int) and data is None:
            haltype, dim_type = Halide_Type_Float, haltype
        dtype = _to_dtype(haltype)
        shape = tuple(int(d) for d in (shape if shape is not None else ()))
        self._dim = int(dim_type)
        self._array = np.zeros(shape, dtype=dtype) if data is None else \
            np.asarray(data, dtype=dtype).reshape(shape).copy()

    # *** session tensor plumbing ***
    @property
    def _ref(self) -> Any:
        return self._session.tensor_ref(self._index)

    def _logical(self) -> np.ndarray:
        if self._session is None:
            return self._array
        return self._session.read(self._index)

    def _host_in(self, dim: int) -> np.ndarray:
        """The value in the layout of dimension type `dim` (NCHW <-> NHWC for 4-D)."""
        own = self.getDimensionType()
        value = self._logical()
        own_nhwc = own == Tensor_DimensionType_Tensorflow
        if value.ndim == 4 and own_nhwc != (dim == Tensor_DimensionType_Tensorflow):
            return np.transpose(value, (0, 3, 1, 2) if own_nhwc else (0, 2, 3, 1))
        return value

    # *** MNN's 11 methods ***
    def getShape(self) -> tuple[int, ...]:
        """Shape in the tensor's dimension order (MNN: `Tensor.getShape`)."""
        if self._session is None:
            return tuple(self._array.shape)
        ref = self._ref
        return tuple(ref.extent if ref.extent is not None else ref.desc.shape)

    def getDataType(self) -> HalideType:
        """The Halide type (MNN: `Tensor.getDataType`)."""
        return halide_type(self._ref.desc.dtype if self._session is not None else self._array.dtype)

    def getDimensionType(self) -> int:
        """Tensor_DimensionType_* (MNN: `Tensor.getDimensionType`)."""
        return _DIM_OF_FMT[self._ref.desc.fmt] if self._session is not None else self._dim

    def getNumpyData(self) -> np.ndarray:
        """A numpy copy of the values in logical order (MNN: `Tensor.getNumpyData`)."""
        return np.array(self._logical())

    def getData(self) -> tuple:
        """The values as a flat tuple (MNN: `Tensor.getData`)."""
        return tuple(self._logical().ravel().tolist())

    def getHost(self) -> np.ndarray:
        """The backing array (MNN returns the host pointer; here the numpy array itself)."""
        return self._ref.array if self._session is not None else self._array

    def copyFrom(self, other: Any) -> bool:
        """Copy values from a host Tensor or an array, converting layout (MNN: `Tensor.copyFrom`)."""
        src = other._host_in(self.getDimensionType()) if isinstance(other, Tensor) else np.asarray(other)
        shape = self.getShape()
        if int(np.prod(src.shape)) != int(np.prod(shape)):
            name = self._ref.name if self._session is not None else "host tensor"
            raise ModelError(f"tensor {name!r}: cannot copy {tuple(src.shape)} into shape {shape}; "
                             f"call resizeTensor + resizeSession first")
        if self._session is None:
            np.copyto(self._array, src.reshape(shape), casting="unsafe")
            return True
        ref = self._ref
        if src.dtype.kind != ref.desc.dtype.kind and not (src.dtype.kind in "iub" and ref.desc.dtype.kind in "iu"):
            raise ModelError(f"tensor {ref.name!r}: expects {ref.desc.dtype}, got {src.dtype}")
        self._session.write(self._index, src.reshape(shape))
        return True

    copyFromHostTensor = copyFrom

    def copyToHostTensor(self, host: Tensor) -> bool:
        """Copy into a host Tensor, converting to its dimension type (MNN: `Tensor.copyToHostTensor`)."""
        value = self._host_in(host.getDimensionType())
        np.copyto(host._array, value.reshape(host._array.shape), casting="unsafe")
        return True

    def fromNumpy(self, data: np.ndarray) -> None:
        """Copy from a numpy array (MNN: `Tensor.fromNumpy`)."""
        self.copyFrom(np.asarray(data))

    def printTensorData(self) -> None:
        """Print the values (MNN: `Tensor.printTensorData`)."""
        print(self.getNumpyData())

    def getElementSize(self) -> int:
        """Number of elements (MNN C++: `Tensor::elementSize`)."""
        return int(np.prod(self.getShape()))

    def size(self) -> int:
        """Bytes of the logical data (MNN C++: `Tensor::size`)."""
        return self.getElementSize() * (self._ref.desc.dtype.itemsize if self._session is not None
                                         else self._array.dtype.itemsize)

    def __repr__(self) -> str:
        return f"Tensor(shape={self.getShape()}, dimType={self.getDimensionType()})"


def session_tensor(session: Any, index: int) -> Tensor:
    """A Tensor handle on a session's tensor."""
    return Tensor(_session=session, _index=index)


def as_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """Validate a user shape."""
    out = tuple(int(d) for d in shape)
    if any(d <= 0 for d in out):
        raise ModelError(f"invalid shape {out}: dims must be positive")
    return out
