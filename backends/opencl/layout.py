"""Host-side layout conversions between logical arrays, CPU arrays and OpenCL buffer layouts (numpy only).

OpenCL buffers hold NC4HW4 tensors channel-block-major, `[ceil(C/4)][N][area][4]` (MNN's buffer layout), with
zero channel tails; NCHW and NHWC tensors are plain row-major in their own logical order. Host (CPU) arrays of
NC4HW4 tensors are `[N][ceil(C/4)][area...][4]` (`TensorDesc.physical_shape`).
"""

from __future__ import annotations

import math

import numpy as np

from mnnpy.core.ir import NC4HW4, NCHW, NHWC, PACK, TensorDesc


def nc_area(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(N, C, area) of a logical shape as NC4HW4 sees it (rank < 2 padded like `ir.packed_dims`)."""
    if len(shape) == 0:
        return 1, 1, 1
    if len(shape) == 1:
        return int(shape[0]), 1, 1
    return int(shape[0]), int(shape[1]), int(math.prod(shape[2:]))


def device_elements(desc: TensorDesc) -> int:
    """Number of elements of the tensor's OpenCL buffer."""
    if desc.fmt == NC4HW4:
        n, c, area = nc_area(desc.shape)
        return -(-c // PACK) * PACK * n * area
    return max(desc.size, 1)


def to_device(logical: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """A contiguous array in the OpenCL layout of `desc` from the tensor's logical value."""
    value = np.ascontiguousarray(logical, dtype=desc.dtype).reshape(desc.shape)
    if desc.fmt != NC4HW4:
        return value.reshape(-1)
    n, c, area = nc_area(desc.shape)
    c4 = -(-c // PACK)
    padded = np.zeros((n, c4 * PACK, area), dtype=desc.dtype)
    padded[:, :c] = value.reshape(n, c, area)
    return np.ascontiguousarray(padded.reshape(n, c4, PACK, area).transpose(1, 0, 3, 2)).reshape(-1)


def from_device(flat: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """The logical value of a tensor from its OpenCL-layout contents."""
    if desc.fmt != NC4HW4:
        return flat[: desc.size].reshape(desc.shape)
    n, c, area = nc_area(desc.shape)
    c4 = -(-c // PACK)
    blocks = flat[: c4 * n * area * PACK].reshape(c4, n, area, PACK).transpose(1, 0, 3, 2).reshape(n, c4 * PACK, area)
    return np.ascontiguousarray(blocks[:, :c]).reshape(desc.shape)


def host_logical(array: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """The logical value of a host array (a CPU NC4HW4 array is unpacked; others are already logical)."""
    array = np.asarray(array)
    if desc.fmt != NC4HW4 or array.shape == desc.shape:
        return array.reshape(desc.shape)
    n, c, area = nc_area(desc.shape)
    c4 = -(-c // PACK)
    packed = array.reshape(n, c4, area, PACK).transpose(0, 1, 3, 2).reshape(n, c4 * PACK, area)
    return np.ascontiguousarray(packed[:, :c]).reshape(desc.shape)


def host_store(array: np.ndarray, desc: TensorDesc, logical: np.ndarray) -> None:
    """Write a logical value into a host array of `desc` (packing CPU NC4HW4)."""
    if desc.fmt != NC4HW4 or array.shape == desc.shape:
        np.copyto(array.reshape(desc.shape), logical.reshape(desc.shape), casting="unsafe")
        return
    n, c, area = nc_area(desc.shape)
    c4 = -(-c // PACK)
    padded = np.zeros((n, c4 * PACK, area), dtype=array.dtype)
    padded[:, :c] = logical.reshape(n, c, area)
    np.copyto(array.reshape(n, c4, area, PACK), padded.reshape(n, c4, PACK, area).transpose(0, 1, 3, 2))


def reorder(logical: np.ndarray, src: TensorDesc, dst: TensorDesc) -> np.ndarray:
    """Convert a logical value between NHWC order and NCHW order (NCHW and NC4HW4 share one order)."""
    src_nhwc, dst_nhwc = src.fmt == NHWC, dst.fmt == NHWC
    if src_nhwc == dst_nhwc or logical.ndim < 3:
        return logical
    if src_nhwc:
        return np.moveaxis(logical, -1, 1)
    return np.moveaxis(logical, 1, -1)


__all__ = ["NC4HW4", "NCHW", "NHWC", "device_elements", "from_device", "host_logical", "host_store", "nc_area",
           "reorder", "to_device"]
