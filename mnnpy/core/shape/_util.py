"""Helpers shared by shape functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.core.ir import TensorDesc
from mnnpy.schema.errors import ModelError

DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
          10: np.int32, 17: np.uint16, 19: np.float16}


class ValueNeeded(Exception):  # noqa: N818 - a condition, like InputValueNeeded
    """Raised by a shape function that needs the value of input ``position`` only for some variants of its op
    (a static ``needs_values`` entry would demand it of every variant): Where with one input, not with three."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


def np_dtype(mnn_dtype: int) -> np.dtype:
    """numpy dtype for an MNN DataType number (int64 and bool run as int32, as MNN does)."""
    dt = np.dtype(DTYPES.get(int(mnn_dtype), np.float32))
    return np.dtype(np.int32) if dt == np.int64 else dt


def norm_axis(axis: int, rank: int, name: str = "") -> int:
    """Normalise a possibly negative axis."""
    ax = int(axis) + rank if int(axis) < 0 else int(axis)
    if not 0 <= ax < max(rank, 1):
        raise ModelError(f"op {name!r}: axis {axis} out of range for rank {rank}")
    return ax


def broadcast(shapes: Sequence[tuple[int, ...]], name: str = "") -> tuple[int, ...]:
    """numpy broadcasting of shapes, with an error naming the op."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError as exc:
        raise ModelError(f"op {name!r}: shapes {list(shapes)} do not broadcast") from exc


def ints(value: Any) -> list[int]:
    """A value (numpy array / list / None) as a flat list of ints."""
    if value is None:
        return []
    return [int(v) for v in np.asarray(value).ravel().tolist()]


def same(desc: TensorDesc, shape: Sequence[int], dtype: Any = None, fmt: str | None = None) -> TensorDesc:
    """A descriptor derived from `desc` with a new shape (and optionally dtype/format)."""
    return TensorDesc(tuple(shape), desc.dtype if dtype is None else dtype, desc.fmt if fmt is None else fmt)
