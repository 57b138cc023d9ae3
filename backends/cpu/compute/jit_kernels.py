"""numba-compiled kernels (imported only through ``jit.kernels()``). Each is compiled eagerly for one signature of
C-contiguous float32 arrays, so the compile (or the load from numba's cache) happens at import, in pre-inference.

``nogil``: thread lanes run them concurrently. Fast-math without nnan / ninf (``_FAST``): a multiply-add may become
one FMA and divisions reciprocals (results differ from the numpy paths by float32 rounding only), while inf and NaN
keep their meaning. Loops are written so that the innermost one
runs over contiguous memory with no index arithmetic LLVM cannot vectorise.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from llvmlite import ir
from mnnpy.backends.cpu.ops._common import _GELU_CF
from numba.core.extending import intrinsic

_ROW_FLOATS = 4096  # a depthwise output chunk (16 KB) that the taps revisit
_FAST = {"contract", "arcp", "nsz", "afn"}  # fast-math without nnan / ninf: inf and NaN keep their meaning
_FLAGS = {"cache": True, "nogil": True, "boundscheck": False, "fastmath": _FAST | {"reassoc"}}
_F4 = nb.float32
_I8 = nb.int64


def _ro(ndim: int) -> nb.types.Array:
    """A read-only C-contiguous float32 array type: inputs are passed as read-only views (``jit.readonly``), so one
    signature serves weights that are frozen and buffers that are not."""
    return nb.types.Array(_F4, ndim, "C", readonly=True)


@nb.njit(nb.void(_F4[:, :, :, :, ::1], _ro(2), _ro(1), _F4[:, :, :, ::1], _I8, _I8, _I8, _I8, _I8, _I8, _I8, _I8, _I8,
                 _F4, _F4, nb.boolean, _F4, _F4), **_FLAGS)
def depthwise_nhwc(xph, w, b, out, phases, kh, kw, sh, sw, dh, dw, r0, r1, lo, hi, clamp_in, in_lo,
                   in_hi):  # pragma: no cover
    """Depthwise taps over a zero-bordered NHWC input kept as column phases.

    xph [P, N, Hp, Wq, Cp]: padded column q lies in phase q % P at q // P (P is 1 or the stride-x); w [kh*kw, Cp];
    b [Cp]; out [N, OH, OW, Cp], rows r0..r1 written: bias + taps, clamped to [lo, hi] (NaN kept). ``clamp_in``:
    the input is a producer's raw output whose activation (a clamp to [in_lo, in_hi] that keeps 0, so the zero
    border stays) is applied here, to each input row just before its first use (it is then in L2), instead of a
    separate pass over the whole expanded tensor.

    Output rows in chunks of pixels (``_ROW_FLOATS`` floats: L1) taken tap by tap: each tap's weights (Cp floats)
    stay in registers over the chunk, the inner loop runs over channels. Measured against one pixel at a time with
    all taps (its Cp accumulators in L1): 112² x 32 1.6-1.9 -> 1.3-1.5 ms, 112² x 96 / 2 0.74-0.82 -> 0.69-0.77,
    deeper layers equal. Per-tap phase and column offsets are precomputed: an integer division per tap costs as
    much as Cp = 32 multiply-adds."""
    n = out.shape[0]
    ow = out.shape[2]
    cp = out.shape[3]
    step = sw // phases
    tap_phase = np.empty(kw, np.int64)
    tap_col = np.empty(kw, np.int64)
    for dj in range(kw):
        tap_phase[dj] = (dj * dw) % phases
        tap_col[dj] = (dj * dw) // phases
    wq = xph.shape[3]
    chunk = max(1, _ROW_FLOATS // cp)
    for bn in range(n):
        ready = 0  # input rows clamped so far (clamp_in)
        for i in range(r0, r1):
            if clamp_in:
                last = min(i * sh + (kh - 1) * dh + 1, xph.shape[2])
                for yy in range(ready, last):
                    for ph in range(phases):
                        for q in range(wq):
                            for k in range(cp):
                                v = xph[ph, bn, yy, q, k]
                                v = in_lo if v < in_lo else v
                                xph[ph, bn, yy, q, k] = in_hi if v > in_hi else v
                ready = max(ready, last)
            for j0 in range(0, ow, chunk):
                j1 = min(j0 + chunk, ow)
                for j in range(j0, j1):
                    for k in range(cp):
                        out[bn, i, j, k] = b[k]
                for di in range(kh):
                    y = i * sh + di * dh
                    for dj in range(kw):
                        ph = tap_phase[dj]
                        q0 = tap_col[dj]
                        t = di * kw + dj
                        for j in range(j0, j1):
                            qq = q0 + j * step
                            for k in range(cp):
                                out[bn, i, j, k] += xph[ph, bn, y, qq, k] * w[t, k]
                for j in range(j0, j1):
                    for k in range(cp):
                        v = out[bn, i, j, k]
                        v = lo if v < lo else v
                        out[bn, i, j, k] = hi if v > hi else v


@nb.njit(nb.void(_F4[:, :, :, :, ::1], _ro(2), _ro(1), _F4[:, :, :, ::1], _I8, _I8, _I8, _I8, _I8, _F4, _F4,
                 nb.boolean, _F4, _F4), **_FLAGS)
def depthwise3x3_nhwc(xph, wrep, brep, out, sh, dh, dw, r0, r1, lo, hi, clamp_in, in_lo,
                      in_hi):  # pragma: no cover
    """``depthwise_nhwc`` for 3 x 3 taps whose columns are contiguous (xph [S, N, Hp, Wq, Cp] with S = the
    stride-x phases, as a chain keeps them): all nine taps summed per output float in one pass.

    wrep [9, L] / brep [L]: each tap's weights (the bias) repeated along a chunk of L / Cp output pixels, so that a
    chunk of output pixels and the nine input runs it reads are flat contiguous runs of L floats and the one inner
    loop is long and has no index arithmetic: 9 loads of input, 9 of weights and one store per 16 outputs (the
    per-tap kernel loads and stores its accumulator on every tap, and its Cp-long inner loop is mostly epilogue at
    Cp = 32). 1.6-2.2x ``depthwise_nhwc`` on MobileNetV2's shapes (112² x 32: 0.68 -> 0.31 ms, 56² x 144: 0.61 ->
    0.25), AVX-512 host, hot. ``clamp_in`` as in ``depthwise_nhwc``."""
    phases = xph.shape[0]
    n, _, ow, cp = out.shape
    hp = xph.shape[2]
    chunk = wrep.shape[1] // cp
    xf = xph.reshape(phases, n, hp, xph.shape[3] * cp)
    of = out.reshape(n, out.shape[1], ow * cp)
    p1, p2 = dw % phases, (2 * dw) % phases  # the phase and the first column (in floats) of taps dj = 0, 1, 2
    c1, c2 = (dw // phases) * cp, ((2 * dw) // phases) * cp
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = wrep[0], wrep[1], wrep[2], wrep[3], wrep[4], wrep[5], wrep[6], wrep[7], \
        wrep[8]
    for bn in range(n):
        ready = 0  # input rows clamped so far (clamp_in)
        for i in range(r0, r1):
            y0 = i * sh
            y1, y2 = y0 + dh, y0 + 2 * dh
            if clamp_in:
                last = min(y2 + 1, hp)
                for yy in range(ready, last):
                    for ph in range(phases):
                        row = xf[ph, bn, yy]
                        for m in range(row.shape[0]):
                            v = row[m]
                            v = in_lo if v < in_lo else v
                            row[m] = in_hi if v > in_hi else v
                ready = max(ready, last)
            top0, top1, top2 = xf[0, bn, y0], xf[p1, bn, y0], xf[p2, bn, y0]
            mid0, mid1, mid2 = xf[0, bn, y1], xf[p1, bn, y1], xf[p2, bn, y1]
            bot0, bot1, bot2 = xf[0, bn, y2], xf[p1, bn, y2], xf[p2, bn, y2]
            for j0 in range(0, ow, chunk):
                s = j0 * cp
                size = (min(j0 + chunk, ow) - j0) * cp
                o = of[bn, i][s: s + size]  # slices: indices from 0, no wraparound checks, vectorised
                a0, a1, a2 = top0[s: s + size], top1[s + c1: s + c1 + size], top2[s + c2: s + c2 + size]
                b0, b1, b2 = mid0[s: s + size], mid1[s + c1: s + c1 + size], mid2[s + c2: s + c2 + size]
                d0, d1, d2 = bot0[s: s + size], bot1[s + c1: s + c1 + size], bot2[s + c2: s + c2 + size]
                for m in range(size):
                    v = (brep[m] + a0[m] * w0[m] + a1[m] * w1[m] + a2[m] * w2[m] + b0[m] * w3[m] + b1[m] * w4[m]
                         + b2[m] * w5[m] + d0[m] * w6[m] + d1[m] * w7[m] + d2[m] * w8[m])
                    v = lo if v < lo else v
                    o[m] = hi if v > hi else v


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


# --- exp and GELU --------------------------------------------------------------------------------------------------


@intrinsic
def _f32_from_bits(typingctx, bits):  # pragma: no cover - compiled
    """The float32 whose bit pattern is the int32 ``bits`` (an LLVM bitcast: vectorises, unlike a memory view)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return nb.float32(nb.int32), codegen


_LN2_HI = 355.0 / 512.0  # ln 2 split so that k * _LN2_HI is exact in float32 for |k| <= 128 (Cody-Waite)
_LN2_LO = math.log(2.0) - _LN2_HI
_EXP_MAX = float(np.log(np.finfo(np.float32).max))  # 88.72: above, exp overflows to inf (as numpy's does)
_EXP_MIN = -86.0  # below, 0 (numpy gives tiny and subnormal values down to -103.9: an absolute difference < 5e-38)
_E2, _E3, _E4, _E5, _E6, _E7 = (1.0 / math.factorial(i) for i in range(2, 8))


@nb.njit(inline="always", fastmath={"contract", "nsz"}, error_model="numpy")
def _exp(v):  # pragma: no cover - compiled
    """float32 e^v, vectorisable: v = k ln 2 + r with |r| <= ln 2 / 2, e^r by its Taylor polynomial to degree 7
    (truncation < 1e-8 relative), 2^(k-1) put into the exponent bits, times 2p. Relative error < 1.2e-7 against
    float64; inf above ``_EXP_MAX``, 0 below ``_EXP_MIN``, NaN kept."""
    c = min(max(v, np.float32(_EXP_MIN)), np.float32(88.72))
    kf = np.floor(c * np.float32(1.4426950408889634) + np.float32(0.5))
    r = c - kf * np.float32(_LN2_HI) - kf * np.float32(_LN2_LO)
    p = np.float32(_E7)
    p = p * r + np.float32(_E6)
    p = p * r + np.float32(_E5)
    p = p * r + np.float32(_E4)
    p = p * r + np.float32(_E3)
    p = p * r + np.float32(_E2)
    p = p * r + np.float32(1.0)
    p = p * r + np.float32(1.0)
    y = (p + p) * _f32_from_bits((np.int32(kf) + np.int32(126)) << np.int32(23))  # 2p 2^(k-1): k = 128 fits
    y = np.float32(np.inf) if v > np.float32(_EXP_MAX) else y
    y = np.float32(0.0) if v < np.float32(_EXP_MIN) else y
    # NaN in, NaN out. Not `v if v != v else y`: in place (a[i] = exp(a[i])) LLVM turns that select into a masked
    # store ("keep a[i] where NaN"), microcoded on AMD: 2x the time of the whole loop. v * 2 is still NaN.
    return y if v == v else v * np.float32(2.0)


# no ZeroDivisionError checks (error_model numpy): loops with divisions vectorise. No reassociation: it would fold
# _exp's two-part ln 2 back into one. (With nnan / ninf, _exp's inf select compiled to NaN.)
_VEC = {**_FLAGS, "fastmath": _FAST, "error_model": "numpy"}
_UNARY_SIGS = [nb.void(_ro(1), _F4[::1]), nb.void(_F4[::1], _F4[::1])]


@nb.njit(_UNARY_SIGS, **_VEC)
def exp(x, out):  # pragma: no cover - compiled
    """``out = e^x`` elementwise (flat arrays that do not overlap: LLVM's overlap check sends an in-place call to a
    scalar loop, 0.65 against 0.085 ms for 116K floats; see ``exp_inplace``)."""
    for i in range(x.size):
        out[i] = _exp(x[i])


@nb.njit(nb.void(_F4[::1]), **_VEC)
def exp_inplace(a):  # pragma: no cover - compiled
    """``a = e^a`` elementwise (one array: nothing to check, the loop vectorises)."""
    for i in range(a.size):
        a[i] = _exp(a[i])


_G3, _GA, _GB, _GC1, _GC0, _GD = (float(c) for c in _GELU_CF)


@nb.njit(_UNARY_SIGS, **_VEC)
def gelu_erf(x, out):  # pragma: no cover - compiled
    """``out = 0.5 x (1 + erf(x / sqrt 2))`` in one pass: x / (1 + e^(-2 x R(x²))), R the rational of
    ``ops._common.gelu_erf`` (same fit, same continued fraction; |error| < 6e-7 against float64)."""
    for i in range(x.size):
        v = x[i]
        s = v * v
        w = np.float32(_GC0) / (s + np.float32(_GD)) + s + np.float32(_GC1)
        r = np.float32(-2.0 * _GB) / w + s * np.float32(-2.0 * _G3) + np.float32(-2.0 * _GA)
        out[i] = v / (np.float32(1.0) + _exp(r * v))


# --- normalisation -----------------------------------------------------------------------------------------------


@nb.njit(nb.void(_ro(2), _F4[:, ::1], _ro(1), _ro(1), _F4, nb.boolean),
         **{**_VEC, "fastmath": _FAST | {"reassoc"}})
def layer_norm(x, y, gamma, beta, eps, rms):  # pragma: no cover - compiled
    """Each row of ``x`` [M, n]: ``y = (x - mean) / sqrt(var + eps) * gamma + beta`` (``rms``: no mean taken, the
    RMS normaliser), in three passes over one row while it is in L1: the sum, the squared deviations, the output.
    Sums in float32 with reassociation (eight partial sums per vector lane, as numpy's pairwise sums are)."""
    m, n = x.shape
    inv_n = np.float32(1.0) / np.float32(n)
    for i in range(m):
        row = x[i]
        out = y[i]
        mean = np.float32(0.0)
        if not rms:
            total = np.float32(0.0)
            for j in range(n):
                total += row[j]
            mean = total * inv_n
        sq = np.float32(0.0)
        for j in range(n):
            d = row[j] - mean
            sq += d * d
        inv = np.float32(1.0) / np.sqrt(sq * inv_n + eps)
        for j in range(n):
            out[j] = (row[j] - mean) * inv * gamma[j] + beta[j]


@nb.njit(nb.void(_F4[:, ::1], _ro(1), _F4[:, :, :, :, :], _F4, _F4), **_VEC)
def store_nc4(y, bias, out, lo, hi):  # pragma: no cover - compiled
    """``out[n, c // 4, i, j, c % 4] = clamp(y[(n, i, j), c] + bias[c], lo, hi)``: an NHWC GEMM result [N*OH*OW,
    OCp] into NC4HW4 ``out`` [N, OC4, OH, OW, 4] (any strides) in one pass, bias and activation included."""
    n, c4, oh, ow, _ = out.shape
    m = 0
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for c in range(c4):
                    for lane in range(4):
                        v = y[m, c * 4 + lane] + bias[c * 4 + lane]
                        v = lo if v < lo else v
                        out[b, c, i, j, lane] = hi if v > hi else v
                m += 1


@nb.njit(nb.void(_ro(2), _ro(1), _ro(2), _F4[:, ::1], _F4, _F4), **_VEC)
def bias_add3(a, bias, b, out, lo, hi):  # pragma: no cover - compiled
    """``out = clamp(a + bias + b, lo, hi)`` over rows of [M, N] (a GEMM's output, its bias, a residual): the bias
    pass of the GEMM and the residual add in one. ``out`` must not overlap ``a`` or ``b`` (``bias_add_into``)."""
    m, n = a.shape
    for i in range(m):
        for j in range(n):
            v = a[i, j] + bias[j] + b[i, j]
            v = lo if v < lo else v
            out[i, j] = hi if v > hi else v


@nb.njit(nb.void(_ro(2), _ro(1), _F4[:, ::1], _F4, _F4), **_VEC)
def bias_add_into(a, bias, out, lo, hi):  # pragma: no cover - compiled
    """``out = clamp(out + a + bias, lo, hi)``: ``bias_add3`` where the output is one of the operands' memory."""
    m, n = a.shape
    for i in range(m):
        for j in range(n):
            v = out[i, j] + a[i, j] + bias[j]
            v = lo if v < lo else v
            out[i, j] = hi if v > hi else v


@nb.njit(nb.void(_ro(2), _F4, _F4[:, ::1]), **{**_VEC, "fastmath": _FAST | {"reassoc"}})
def centre_keys(k, scale, out):  # pragma: no cover - compiled
    """``out = scale * (k - mean over the rows of k)`` for keys [Skv, H*D]: the attention's centred keys (its
    scores come shifted by their mean over the keys) in two passes instead of four numpy calls."""
    rows, cols = k.shape
    mean = np.zeros(cols, np.float32)
    for i in range(rows):
        for j in range(cols):
            mean[j] += k[i, j]
    inv = np.float32(1.0) / np.float32(rows)
    for j in range(cols):
        mean[j] *= inv
    for i in range(rows):
        for j in range(cols):
            out[i, j] = (k[i, j] - mean[j]) * scale
