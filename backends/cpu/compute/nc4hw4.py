"""NC4HW4 layout helpers: ``[N, C, *spatial]`` <-> ``[N, ceil(C/4), *spatial, 4]`` with zero-padded channels."""

from __future__ import annotations

import numpy as np

PACK = 4


def packed_shape(shape_nchw: tuple[int, ...]) -> tuple[int, ...]:
    """Return the NC4HW4 shape of a logical NCHW(-like) shape.

    Args:
        shape_nchw: ``(N, C, *spatial)``, rank >= 2.

    Returns:
        ``(N, ceil(C/4), *spatial, 4)``.
    """
    n, c, *spatial = shape_nchw
    return (n, (c + PACK - 1) // PACK, *spatial, PACK)


def pack_nc4hw4(x_nchw: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Pack an ``[N, C, *spatial]`` array into NC4HW4, zero-filling the channel tail.

    Args:
        x_nchw: input of rank >= 2; dims after C are treated as spatial.
        out: optional preallocated ``[N, ceil(C/4), *spatial, 4]`` array filled in place.

    Returns:
        The packed array (``out`` when given).
    """
    if x_nchw.ndim < 2:
        raise ValueError(f"pack_nc4hw4 needs rank >= 2, got shape {x_nchw.shape}")
    n, c, *spatial = x_nchw.shape
    shape = packed_shape(x_nchw.shape)
    if out is None:
        out = np.empty(shape, dtype=x_nchw.dtype)
    elif out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    full = c // PACK
    if full:
        src = x_nchw[:, : full * PACK].reshape(n, full, PACK, *spatial)
        np.copyto(out[:, :full], np.moveaxis(src, 2, -1))
    tail = c - full * PACK
    if tail:
        out[:, full, ..., tail:] = 0
        np.copyto(out[:, full, ..., :tail], np.moveaxis(x_nchw[:, full * PACK :], 1, -1))
    return out


def unpack_nc4hw4(x: np.ndarray, channels: int, out: np.ndarray | None = None) -> np.ndarray:
    """Unpack an NC4HW4 array ``[N, C4, *spatial, 4]`` back to ``[N, channels, *spatial]``.

    Args:
        x: packed array.
        channels: the logical channel count C (``ceil(C/4) == x.shape[1]``).
        out: optional preallocated ``[N, C, *spatial]`` array filled in place.

    Returns:
        The unpacked array (``out`` when given).
    """
    if x.ndim < 3 or x.shape[-1] != PACK:
        raise ValueError(f"unpack_nc4hw4 needs [N, C4, ..., 4], got shape {x.shape}")
    n, c4, *spatial, _ = x.shape
    if (channels + PACK - 1) // PACK != c4:
        raise ValueError(f"{channels} channels do not fit {c4} channel blocks")
    shape = (n, channels, *spatial)
    if out is None:
        out = np.empty(shape, dtype=x.dtype)
    elif out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    full = channels // PACK
    if full:
        dst = out[:, : full * PACK].reshape(n, full, PACK, *spatial)
        np.copyto(dst, np.moveaxis(x[:, :full], -1, 2))
    tail = channels - full * PACK
    if tail:
        np.copyto(out[:, full * PACK :], np.moveaxis(x[:, full, ..., :tail], -1, 1))
    return out
