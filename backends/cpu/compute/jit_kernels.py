"""numba-compiled kernels (imported only through ``jit.kernels()``). Each is compiled eagerly for one signature of
C-contiguous float32 arrays, so the compile (or the load from numba's cache) happens at import, in pre-inference.

``nogil``: thread lanes run them concurrently; ``fastmath={"contract"}`` lets a multiply-add become one FMA (the
numpy paths round twice: results differ by float32 rounding only). Loops are written so that the innermost one
runs over contiguous memory with no index arithmetic LLVM cannot vectorise.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_FLAGS = {"cache": True, "nogil": True, "boundscheck": False, "fastmath": True}
_F4 = nb.float32
_I8 = nb.int64


def _ro(ndim: int) -> nb.types.Array:
    """A read-only C-contiguous float32 array type: inputs are passed as read-only views (``jit.readonly``), so one
    signature serves weights that are frozen and buffers that are not."""
    return nb.types.Array(_F4, ndim, "C", readonly=True)


@nb.njit(nb.void(_ro(5), _ro(2), _ro(1), _F4[:, :, :, ::1], _I8, _I8, _I8, _I8, _I8, _I8, _I8, _I8, _I8, _F4, _F4),
         **_FLAGS)
def depthwise_nhwc(xph, w, b, out, phases, kh, kw, sh, sw, dh, dw, r0, r1, lo, hi):  # pragma: no cover
    """Depthwise taps over a zero-bordered NHWC input kept as column phases.

    xph [P, N, Hp, Wq, Cp]: padded column q lies in phase q % P at q // P (P is 1 or the stride-x); w [kh*kw, Cp];
    b [Cp]; out [N, OH, OW, Cp], rows r0..r1 written: bias + taps, clamped to [lo, hi] (NaN kept).

    One output pixel at a time: its Cp accumulators stay in L1 (or registers) across the taps, and the weights
    (kh*kw*Cp floats) stay in L1. Measured against a row-block variant (each tap one flat multiply-add over 2048
    floats of the row, weights repeated along it): 2-3x faster, the repeated weights cost bandwidth. Per-tap phase
    and column offsets are precomputed: an integer division per tap costs as much as Cp = 32 multiply-adds."""
    n = out.shape[0]
    ow = out.shape[2]
    cp = out.shape[3]
    step = sw // phases
    tap_phase = np.empty(kw, np.int64)
    tap_col = np.empty(kw, np.int64)
    for dj in range(kw):
        tap_phase[dj] = (dj * dw) % phases
        tap_col[dj] = (dj * dw) // phases
    for bn in range(n):
        for i in range(r0, r1):
            orow = out[bn, i]
            for j in range(ow):
                o = orow[j]
                for k in range(cp):
                    o[k] = b[k]
                q = j * step
                for di in range(kh):
                    y = i * sh + di * dh
                    for dj in range(kw):
                        px = xph[tap_phase[dj], bn, y, q + tap_col[dj]]
                        wt = w[di * kw + dj]
                        for k in range(cp):
                            o[k] += px[k] * wt[k]
                for k in range(cp):
                    v = o[k]
                    v = lo if v < lo else v
                    o[k] = hi if v > hi else v


@nb.njit(nb.void(_ro(5), _ro(3), _ro(2), _F4[:, :, :, ::1], _I8, _I8, _I8, _I8, _I8, _I8, _I8, _F4, _F4), **_FLAGS)
def depthwise_nc4(xph, w, b, out, kh, kw, sh, dh, dw, r0, r1, lo, hi):  # pragma: no cover
    """Depthwise taps in NC4HW4, one output row of one channel block at a time (its OW x 4 floats stay in L1).

    xph [S, N, C4, Hp, Wq * 4]: the zero-bordered input as S = stride-x column phases (padded column q in phase
    q % S at q // S), so every tap reads a contiguous run; w [kh*kw, C4, OW * 4] (tap weights repeated along the
    row); b [C4, OW * 4]; out [N, C4, OH, OW * 4], rows r0..r1 written, clamped to [lo, hi] (NaN kept)."""
    s = xph.shape[0]
    n = out.shape[0]
    c4 = out.shape[1]
    m = out.shape[3]
    for bn in range(n):
        for cb in range(c4):
            for i in range(r0, r1):
                o = out[bn, cb, i]
                bias = b[cb]
                for e in range(m):
                    o[e] = bias[e]
                for di in range(kh):
                    y = i * sh + di * dh
                    for dj in range(kw):
                        col = dj * dw
                        base = (col // s) * 4
                        xr = xph[col % s, bn, cb, y][base: base + m]  # a slice: indices from 0 vectorise
                        wt = w[di * kw + dj, cb]
                        for e in range(m):
                            o[e] += xr[e] * wt[e]
                for e in range(m):
                    v = o[e]
                    v = lo if v < lo else v
                    o[e] = hi if v > hi else v
