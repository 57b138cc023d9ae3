"""Host-side layout conversion for `on_copy`: NCHW / NHWC / NC4HW4 numpy arrays, via the logical NCHW order.

NC4HW4 is `[N][ceil(C/4)][*spatial][4]` for a logical `(N, C, *spatial)` shape, padded channels zero.
"""

from __future__ import annotations

import math

import numpy as np

from mnnpy.core.ir import NC4HW4, NHWC, TensorDesc


def shader_format(desc: TensorDesc) -> tuple[int, int]:
    """(C, area) describing a tensor to the shaders: C = 0 for a plain row-major buffer."""
    if desc.fmt != NC4HW4:
        return 0, 0
    shape = desc.shape if len(desc.shape) >= 2 else (*(desc.shape or (1,)), 1)
    return int(shape[1]), int(math.prod(shape[2:]))


def to_nchw(desc: TensorDesc, array: np.ndarray) -> np.ndarray:
    """The logical array in NCHW order (NHWC tensors are transposed to channel-first)."""
    if desc.fmt == NC4HW4:
        shape = desc.shape if len(desc.shape) >= 2 else (*(desc.shape or (1,)), 1)
        n, c = shape[0], shape[1]
        c4 = (c + 3) // 4
        area = math.prod(shape[2:])
        planes = np.asarray(array).reshape(n, c4, area, 4).transpose(0, 1, 3, 2).reshape(n, c4 * 4, area)
        return planes[:, :c].reshape(desc.shape)
    arr = np.asarray(array).reshape(desc.shape)
    if desc.fmt == NHWC and arr.ndim >= 3:
        return np.moveaxis(arr, -1, 1)
    return arr


def from_nchw(desc: TensorDesc, nchw: np.ndarray, out: np.ndarray) -> None:
    """Write a logical NCHW-ordered array into `out`, the physical array of `desc`."""
    if desc.fmt == NC4HW4:
        shape = desc.shape if len(desc.shape) >= 2 else (*(desc.shape or (1,)), 1)
        n, c = shape[0], shape[1]
        c4 = (c + 3) // 4
        area = math.prod(shape[2:])
        planes = np.zeros((n, c4 * 4, area), dtype=out.dtype)
        planes[:, :c] = nchw.reshape(n, c, area)
        out.reshape(n, c4, area, 4)[...] = planes.reshape(n, c4, 4, area).transpose(0, 1, 3, 2)
        return
    if desc.fmt == NHWC and nchw.ndim >= 3:
        nchw = np.moveaxis(nchw, 1, -1)
    np.copyto(out.reshape(desc.shape), nchw.reshape(desc.shape), casting="unsafe")


def copy(src_desc: TensorDesc, src: np.ndarray, dst_desc: TensorDesc, dst: np.ndarray) -> None:
    """Copy between two physical arrays whose descriptors have the same logical content."""
    if src_desc.fmt == dst_desc.fmt and src_desc.shape == dst_desc.shape:
        np.copyto(dst, np.asarray(src).reshape(dst.shape), casting="unsafe")
        return
    from_nchw(dst_desc, to_nchw(src_desc, src), dst)
