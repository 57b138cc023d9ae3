"""Engine IR: tensor descriptors, Views/Regions (MNN's geometry currency) and Commands.

Mirrors MNN's `Tensor::InsideDescribe` (format, regions), `Region`/`View` and `Command`. Shapes are always in the
tensor's logical order (NCHW for NCHW and NC4HW4 tensors, NHWC for NHWC tensors); the format only decides the
physical layout. Regions address the logical, row-major index space whatever the physical layout.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NCHW = "NCHW"
NHWC = "NHWC"
NC4HW4 = "NC4HW4"
FORMATS = (NCHW, NHWC, NC4HW4)
PACK = 4

# MNN_DATA_FORMAT enum value -> format name (NHWC4 is treated as NHWC, UNKNOWN as NCHW)
FORMAT_FROM_MNN = {0: NCHW, 1: NHWC, 2: NC4HW4, 3: NHWC, 4: NCHW}
FORMAT_TO_MNN = {NCHW: 0, NHWC: 1, NC4HW4: 2}


def packed_dims(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Physical NC4HW4 shape `[N, ceil(C/4), *spatial, 4]` of a logical shape (rank < 2 is padded to [N, 1])."""
    if len(shape) == 0:
        shape = (1, 1)
    elif len(shape) == 1:
        shape = (shape[0], 1)
    n, c, *rest = shape
    return (n, (c + PACK - 1) // PACK, *rest, PACK)


def broadcast_strides(shape: tuple[int, ...], rank: int = 4) -> tuple[int, ...]:
    """Row-major element strides of `shape` read as broadcast to `rank` dims: 0 along size-1 (broadcast) axes."""
    dims = (1,) * (rank - len(shape)) + tuple(int(n) for n in shape)
    strides, step = [], 1
    for n in reversed(dims):
        strides.append(step if n > 1 else 0)
        step *= n
    return tuple(reversed(strides))


@dataclass(frozen=True)
class TensorDesc:
    """Shape, element type and dimension format of one tensor (MNN: `Tensor` + `InsideDescribe`)."""

    shape: tuple[int, ...]
    dtype: np.dtype = field(default_factory=lambda: np.dtype(np.float32))
    fmt: str = NCHW

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown tensor format {self.fmt!r}")

    @property
    def size(self) -> int:
        """Number of logical elements."""
        return math.prod(self.shape)

    @property
    def physical_shape(self) -> tuple[int, ...]:
        """Shape of the backing numpy array (channel-padded for NC4HW4)."""
        return packed_dims(self.shape) if self.fmt == NC4HW4 else self.shape

    @property
    def nbytes(self) -> int:
        """Bytes the tensor occupies (MNN: C rounded up to the pack for NC4HW4)."""
        return math.prod(self.physical_shape) * self.dtype.itemsize

    def with_(self, **changes: Any) -> TensorDesc:
        """Copy with some fields replaced."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class View:
    """An offset plus three strides, in elements of the logical index space (MNN: `View`)."""

    offset: int = 0
    stride: tuple[int, int, int] = (1, 1, 1)


@dataclass(frozen=True)
class Region:
    """`dst[dst.offset + z*ds0 + y*ds1 + x*ds2] = origin[src.offset + z*ss0 + y*ss1 + x*ss2]` (MNN: `Region`).

    `origin` is a tensor index of the session's tensor table.
    """

    src: View
    dst: View
    size: tuple[int, int, int]
    origin: int

    @property
    def count(self) -> int:
        """Elements the region moves."""
        return self.size[0] * self.size[1] * self.size[2]


@dataclass
class Command:
    """One unit of the run plan: an op (or a Raster of regions) on tensor indices (MNN: `Command`).

    Attributes:
        op_type: MNN OpType number (Raster = 128 for region copies).
        name: the op name from the model (or a generated one).
        inputs: tensor indices read.
        outputs: tensor indices written.
        op: the object-API `fb.OpT` (None for generated commands).
        regions: for Raster commands, the regions writing the output.
        backend: name of the backend chosen by the schedule.
        execution: the backend Execution created for it.
        info: algorithm / plan details for `session.info()`.
    """

    op_type: int
    name: str
    inputs: list[int]
    outputs: list[int]
    op: Any = None
    regions: list[Region] = field(default_factory=list)
    backend: str = ""
    execution: Any = None
    info: dict[str, Any] = field(default_factory=dict)
