"""Where a Winograd block's output goes (``WinogradKernel._stores_for``): the compiled output transform storing
into the output itself, or numpy's copies of the tiles (and a fused residual Add's share)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ir_binds
from .common import PACK, pixel_copy, runs

# The compiled output transform stores each pixel's channel vector into the output itself (NC4HW4: a 16-byte store
# per plane): while an image's output fits in L2 that beats the transform into scratch and numpy's copies (ResNet-18
# paired 0.948 at 1 thread, 0.946 at 2); on the UNet block's 16 MB outputs it lost (1.075; 1.033 with only its NHWC
# chain link fused): the transform into scratch and numpy's copies there.
FUSED_STORE_MAX_BYTES = 2 << 20
_ORDER = (2, 5, 3, 0, 4, 1)  # [u, u, n, th, tw, oc4] -> [n, oc4, th, u, tw, u]


def fused_stores(kernel: Any, out: np.ndarray, residual: np.ndarray | None, relu: bool) -> list | None:
    """Per lane, per block, per image: the compiled output transform storing straight into ``out`` (and adding
    the residual): ``ir_binds.bind_winograd_store``, one ``(call,)`` entry each; None where any cannot."""
    u, k, tw = kernel.unit, kernel.params.kernel[0], kernel.tiles[2]
    oh = out.shape[1 if out.ndim == 4 else 2]
    if out[0].nbytes > FUSED_STORE_MAX_BYTES:
        return None
    lanes = []
    for lane in kernel.lanes:
        blocks = []
        for b in lane:
            n0, n1, row0, row1 = b.rows
            (c0, c1), rb, rows = b.oc4, b.d.shape[3], min(row1, oh) - row0
            calls = []
            for i in range(n0, n1):
                m = b.m_groups[:, (i - n0) * rb * tw:(i - n0 + 1) * rb * tw]
                if out.ndim == 4:
                    dst, res = out[i, row0:row0 + rows, :, c0 * PACK:c1 * PACK], None
                else:
                    dst = out[i, c0:c1, row0:row0 + rows]
                    res = None if residual is None else residual[i, c0:c1, row0:row0 + rows]
                if residual is not None and res is None:
                    return None
                call = ir_binds.bind_winograd_store(u, k, m, b.bias_tile[0], kernel.clamp_bounds(), dst, res,
                                                       (0.0 if relu else -np.inf, np.inf), (rb, tw))
                if call is None:
                    return None
                calls.append((call,))
            blocks.append(calls)
        lanes.append(blocks)
    return lanes

def block_residual(b: Any, out: np.ndarray, residual: np.ndarray | None, relu: bool) -> list[tuple]:
    """The block's share of a fused residual Add: its output rows and channel bands of NC4HW4 ``out`` and of
    ``residual``."""
    if residual is None:
        return []
    n0, n1, row0, row1 = b.rows
    region = (slice(n0, n1), slice(*b.oc4), slice(row0, min(row1, out.shape[2])))
    return [(out[region], residual[region], relu)]

def block_stores(kernel: Any, b: Any, out: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Whole tiles straight into the output: one copy when they cover it, else up to four (the clipped last
    tile row / column where the tiles overhang the edge). NC4HW4 ``out`` takes 16-byte pixels, NHWC ``out``
    (4-D) each pixel's band of channels as one element."""
    u = kernel.unit
    nhwc = out.ndim == 4
    ow = out.shape[2 if nhwc else 3]
    n0, n1, row0, row1 = b.rows
    tiles = b.tiles  # [x, y, n, r, t, oc4, 4] -> out[n, oc4, row0 + r*u + x, t*u + y]
    if nhwc:
        tiles = tiles.reshape(*tiles.shape[:5], -1)  # [x, y, n, r, t, oc] -> out[n, row0 + r*u + x, t*u + y, oc]
    bands = slice(*b.oc4)
    stores = []
    for r_a, r_b, ur in _spans(row1 - row0, u):
        rows = slice(row0 + r_a * u, row0 + r_a * u + (r_b - r_a) * ur)
        for c_a, c_b, uc in _spans(ow, u):
            cols = slice(c_a * u, c_a * u + (c_b - c_a) * uc)
            src = tiles[:ur, :uc, :, r_a:r_b, c_a:c_b]
            if nhwc:
                dst = out[n0:n1, rows, cols, bands.start * PACK: bands.stop * PACK].view()
                dst.shape = (n1 - n0, r_b - r_a, ur, c_b - c_a, uc, dst.shape[3])  # a view (raises if not)
                stores.append(runs(dst, src.transpose(2, 3, 0, 4, 1, 5)))
                continue
            dst = out[n0:n1, bands, rows, cols].view()
            dst.shape = (n1 - n0, dst.shape[1], r_b - r_a, ur, c_b - c_a, uc, PACK)  # a view (raises if not)
            stores.append(pixel_copy(dst, src, _ORDER))
    return stores


def _spans(size: int, u: int) -> list[tuple[int, int, int]]:
    """Tiles of ``u`` covering ``size``: (first, end, rows used) for the whole tiles and the clipped last one."""
    whole, rest = divmod(size, u)
    return ([(0, whole, u)] if whole else []) + ([(whole, whole + 1, rest)] if rest else [])
