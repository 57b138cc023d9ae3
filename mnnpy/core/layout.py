"""Host-side NC4HW4 conversions of whole values (constants, user copies, tests); kernels use in-place versions."""

from __future__ import annotations

import numpy as np

from mnnpy.core.ir import NC4HW4, PACK, packed_dims


def _nc(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if len(shape) >= 2 else ((shape[0], 1) if shape else (1, 1))


def pack_value(value: np.ndarray, fmt: str = NC4HW4) -> np.ndarray:
    """The physical array of a logical value in format `fmt` (a new array for NC4HW4, else the value)."""
    if fmt != NC4HW4:
        return value
    nc = _nc(value.shape)
    x = value.reshape(nc)
    c = nc[1]
    pad = np.zeros((nc[0], -(-c // PACK) * PACK - c, *nc[2:]), dtype=value.dtype)
    full = np.concatenate([x, pad], axis=1).reshape(nc[0], -1, PACK, *nc[2:])
    return np.ascontiguousarray(np.moveaxis(full, 2, -1)).reshape(packed_dims(value.shape))


def unpack_value(packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The logical value of an NC4HW4 array."""
    nc = _nc(shape)
    full = np.moveaxis(packed, -1, 2).reshape(nc[0], -1, *nc[2:])
    return np.ascontiguousarray(full[:, : nc[1]]).reshape(shape)
