"""Int8 convolution through an indirection table (QNNPACK): no im2col buffer, one gather of input rows per tap.

The input is widened once to ``x - zero_point`` rows in NHWC order with one extra zero row. For every kernel tap
the table holds, per output pixel, the index of the input row it reads (the zero row for padding). The kernel then
accumulates ``rows[table[tap]] @ W[tap]`` over taps. Products and sums of 8-bit values are exact in the float
carriers: each tap's GEMM runs in float32 while ``ic * max|x - zp| * max|w| < 2**24`` (float64 otherwise) and the
taps are summed in float32 or float64 under the same rule (float64 is exact below 2**53), so the accumulator equals
int32 accumulation bit for bit; requantisation to int8 (MNN's float32 post-treatment, see ``requant``) happens
before the result leaves.
3x3 depthwise convolutions take a specialised path over strided views of the padded input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .requant import INPUT_OFFSET, post_treat


@dataclass
class Int8ConvParams:
    """Quantised convolution: int8 weights [oc, ic/group, kh, kw], int32 bias, per-channel float32 multiplier.

    Without ``out_bias`` the output is ``round(float32(acc + bias) * multiplier)`` (MNN's int8 depthwise and
    ConvInt8 form). With ``out_bias`` (float32, output codes) it is MNN's x86 dense int8 convolution:
    ``round(float32(acc + 128 * sum(w)) * multiplier * post_scale + out_bias)`` where ``multiplier`` is the weight
    scale, ``post_scale`` = ``s_in / s_out`` and ``out_bias`` already holds the ``-128 * sum(w)`` correction.
    """

    weight: np.ndarray
    bias: np.ndarray
    multiplier: np.ndarray
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    group: int = 1
    in_zero: int = 0
    weight_zero: int = 0
    out_zero: int = 0
    lo: int = -128
    hi: int = 127
    depthwise: bool = False
    out_bias: np.ndarray | None = None
    post_scale: float | None = None
    wsum: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.weight = np.asarray(self.weight, np.int8)
        oc = self.weight.shape[0]
        self.bias = np.asarray(self.bias, np.int64).ravel()
        self.multiplier = np.ascontiguousarray(np.broadcast_to(np.asarray(self.multiplier, np.float32).ravel(), (oc,)))
        if not np.all(np.isfinite(self.multiplier)):
            raise ValueError("requantisation scales must be finite")
        if self.out_bias is not None:
            self.out_bias = np.asarray(self.out_bias, np.float32).ravel()
        self.wsum = (self.weight.reshape(oc, -1).astype(np.int64) - self.weight_zero).sum(axis=1)

    def offset(self) -> np.ndarray:
        """int64 per-channel term added to the accumulators before requantisation (bias, and MNN's uint8 offset)."""
        return self.bias if self.out_bias is None else self.bias + INPUT_OFFSET * self.wsum

    def requantize(self, acc: np.ndarray, acc_bound: float = float("inf")) -> np.ndarray:
        """int8 codes [m, oc] of exact accumulators [m, oc] (``accumulate``: integers in any dtype, ``|acc| <=
        acc_bound``). ``acc + offset`` is rounded to float32 once, as MNN's int32 -> float conversion."""
        offset = self.offset()
        if acc.dtype == np.float32 and acc_bound + float(np.abs(offset).max(initial=0)) < (1 << 24):
            total = acc + offset.astype(np.float32)  # exact: integers below 2**24
        else:
            total = (acc.astype(np.float64) + offset).astype(np.float32)  # exact sum, one rounding to float32
        return post_treat(total, self.multiplier, self.out_zero, self.lo, self.hi, None if self.out_bias is None
                          else self.post_scale, self.out_bias)


def out_size(size: int, k: int, s: int, d: int, pad_b: int, pad_e: int) -> int:
    """Output extent of one spatial axis (explicit padding)."""
    return (size + pad_b + pad_e - d * (k - 1) - 1) // s + 1


def indirection_table(n: int, h: int, w: int, p: Int8ConvParams) -> tuple[np.ndarray, int, int]:
    """Input-row index per (tap, output pixel); padding taps point at row ``n*h*w`` (the zero row).

    Returns:
        (table int32 [kh*kw, n*oh*ow], oh, ow).
    """
    kh, kw = p.weight.shape[2:]
    top, left, bottom, right = p.pads
    oh = out_size(h, kh, p.stride[0], p.dilation[0], top, bottom)
    ow = out_size(w, kw, p.stride[1], p.dilation[1], left, right)
    ky = np.arange(kh)[:, None, None, None] * p.dilation[0]
    kx = np.arange(kw)[None, :, None, None] * p.dilation[1]
    iy = np.arange(oh)[None, None, :, None] * p.stride[0] - top + ky
    ix = np.arange(ow)[None, None, None, :] * p.stride[1] - left + kx
    iy, ix = np.broadcast_arrays(iy, ix)  # [kh, kw, oh, ow]
    valid = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    local = np.where(valid, iy * w + ix, -1)  # [kh, kw, oh, ow]
    base = (np.arange(n) * h * w)[None, None, :, None, None]
    table = np.where(local[:, :, None] >= 0, local[:, :, None] + base, n * h * w)
    return table.reshape(kh * kw, n * oh * ow).astype(np.int32), oh, ow


class Int8Conv:
    """A convolution planned for one input shape: indirection table and tap-major weights, made once."""

    def __init__(self, params: Int8ConvParams, in_shape: tuple[int, ...]) -> None:
        self.p = params
        n, c, h, w = in_shape
        oc, icg, kh, kw = params.weight.shape
        self.in_shape = (n, c, h, w)
        self.taps = kh * kw
        wz = params.weight.astype(np.int32) - params.weight_zero
        tap_bound = icg * (128 + abs(params.in_zero)) * max(int(np.abs(wz).max(initial=0)), 1)
        self.carrier = np.float32 if tap_bound < (1 << 24) else np.float64  # one tap's GEMM is exact in it
        self.acc_dtype = np.float32 if tap_bound * self.taps < (1 << 24) else np.float64  # so is the tap sum
        self.acc_bound = float(tap_bound * self.taps)
        self.dw3x3 = params.depthwise and (kh, kw) == (3, 3) and params.dilation == (1, 1)
        if params.depthwise:
            self.table, oh, ow = (None, *self._dw_out(h, w)) if self.dw3x3 else indirection_table(n, h, w, params)
            self.w_taps = np.ascontiguousarray(wz.reshape(oc, self.taps).T, dtype=self.carrier)  # [taps, C]
        else:
            self.table, oh, ow = indirection_table(n, h, w, params)
            og = oc // params.group
            # [group, taps, ic/g, oc/g]
            w_taps = wz.reshape(params.group, og, icg, self.taps).transpose(0, 3, 2, 1)
            self.w_taps = np.ascontiguousarray(w_taps, dtype=self.carrier)  # BLAS needs contiguous operands
        self.out_shape = (n, oc, oh, ow)
        self.pointwise = (not params.depthwise and self.taps == 1 and params.stride == (1, 1)
                          and params.pads == (0, 0, 0, 0))

    def _dw_out(self, h: int, w: int) -> tuple[int, int]:
        top, left, bottom, right = self.p.pads
        return (out_size(h, 3, self.p.stride[0], 1, top, bottom), out_size(w, 3, self.p.stride[1], 1, left, right))

    def _rows(self, x: np.ndarray) -> np.ndarray:
        """``x - zero_point`` as NHWC rows plus one zero row (the single widening of the input)."""
        n, c, h, w = self.in_shape
        rows = np.empty((n * h * w + 1, c), dtype=self.carrier)
        np.subtract(x.transpose(0, 2, 3, 1).reshape(n * h * w, c), self.p.in_zero, out=rows[:-1], dtype=self.carrier)
        rows[-1] = 0
        return rows

    def accumulate(self, x: np.ndarray) -> np.ndarray:
        """Exact accumulators [n*oh*ow, oc] of an int8 NCHW input, integers held in ``acc_dtype`` (bias not
        included)."""
        p = self.p
        if self.dw3x3:
            acc = self._dw3x3(x)
        else:
            rows = self._rows(x)
            m = self.table.shape[1] if self.table is not None else rows.shape[0] - 1
            oc = p.weight.shape[0]
            acc = np.zeros((m, oc), dtype=self.acc_dtype)
            if p.depthwise:
                for t in range(self.taps):
                    acc += rows[self.table[t]] * self.w_taps[t]
            elif self.pointwise and p.group == 1:
                acc = rows[:-1] @ self.w_taps[0, 0]
            else:
                icg, og = p.weight.shape[1], oc // p.group
                for g in range(p.group):
                    src = rows[:, g * icg:(g + 1) * icg]
                    dst = acc[:, g * og:(g + 1) * og]
                    for t in range(self.taps):
                        dst += src[self.table[t]] @ self.w_taps[g, t]
        return acc  # the float carriers hold exact integers

    def _dw3x3(self, x: np.ndarray) -> np.ndarray:
        """3x3 depthwise: nine strided views of the zero-padded, widened NHWC input (no table, no gather)."""
        p = self.p
        n, c, h, w = self.in_shape
        top, left = p.pads[:2]
        oh, ow = self._dw_out(h, w)
        sy, sx = p.stride
        need_h, need_w = (oh - 1) * sy + 3, (ow - 1) * sx + 3
        xp = np.zeros((n, max(need_h, h + top), max(need_w, w + left), c), dtype=self.carrier)
        np.subtract(x.transpose(0, 2, 3, 1), p.in_zero, out=xp[:, top:top + h, left:left + w], dtype=self.carrier)
        acc = np.zeros((n, oh, ow, c), dtype=self.acc_dtype)
        for ky in range(3):
            for kx in range(3):
                view = xp[:, ky:ky + (oh - 1) * sy + 1:sy, kx:kx + (ow - 1) * sx + 1:sx]
                acc += view * self.w_taps[ky * 3 + kx]
        return acc.reshape(n * oh * ow, c)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """int8 NCHW ``x`` -> int8 NCHW ``out`` (requantised inside)."""
        p = self.p
        q = p.requantize(self.accumulate(x), self.acc_bound)
        n, oc, oh, ow = self.out_shape
        out[...] = q.reshape(n, oh, ow, oc).transpose(0, 3, 1, 2)


def reference_conv(x: np.ndarray, p: Int8ConvParams) -> np.ndarray:
    """Slow float64 reference of the same quantised math (tests): direct loops over the window (exact sums), then
    the same requantisation."""
    n, c, h, w = x.shape
    oc, _, kh, kw = p.weight.shape
    top, left, bottom, right = p.pads
    oh = out_size(h, kh, p.stride[0], p.dilation[0], top, bottom)
    ow = out_size(w, kw, p.stride[1], p.dilation[1], left, right)
    xp = np.zeros((n, c, h + top + bottom + kh * p.dilation[0], w + left + right + kw * p.dilation[1]))
    xp[:, :, top:top + h, left:left + w] = x.astype(np.float64) - p.in_zero
    wf = p.weight.astype(np.float64) - p.weight_zero
    groups = c if p.depthwise else p.group
    og = oc // groups
    acc = np.zeros((n, oc, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * p.dilation[0], kx * p.dilation[1]
            sy, sx = p.stride
            patch = xp[:, :, y0:y0 + (oh - 1) * sy + 1:sy, x0:x0 + (ow - 1) * sx + 1:sx]
            for g in range(groups):
                cin = patch[:, g * (c // groups):(g + 1) * (c // groups)]
                acc[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", cin, wf[g * og:(g + 1) * og, :, ky, kx])
    rows = acc.transpose(0, 2, 3, 1).reshape(-1, oc).astype(np.int64)
    return p.requantize(rows).reshape(n, oh, ow, oc).transpose(0, 3, 1, 2)


def conv_macs(p: Int8ConvParams, out_shape: tuple[int, ...]) -> int:
    """Multiply-accumulates of one run (for info/flops)."""
    return math.prod(out_shape) * int(np.prod(p.weight.shape[1:]))
