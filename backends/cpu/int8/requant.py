"""Fixed-point requantisation: ``q_out = clamp(zp_out + round(acc * scale))`` with ``scale = m * 2**-shift``.

``m`` is a 31-bit integer in [2**30, 2**31), so ``acc * m`` fits int64 for any int32 accumulator and the whole
step is integer arithmetic (gemmlowp / QNNPACK ``requantize`` with a per-channel multiplier).
"""

from __future__ import annotations

import numpy as np


def quantize_multiplier(scale: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Split positive real multipliers into (m, shift) with ``scale ~= m / 2**shift``, ``2**30 <= m < 2**31``.

    Args:
        scale: one or more multipliers, each in (0, 2**30).

    Returns:
        int64 arrays ``m`` and ``shift`` of the same shape (shift in [1, 62]).

    Raises:
        ValueError: for a multiplier that is not positive and finite or is out of range.
    """
    s = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("requantisation scales must be positive and finite")
    frac, exp = np.frexp(s)  # s = frac * 2**exp, frac in [0.5, 1)
    m = np.rint(frac * (1 << 31)).astype(np.int64)
    shift = 31 - exp.astype(np.int64)
    carry = m == (1 << 31)
    m = np.where(carry, m >> 1, m)
    shift = np.where(carry, shift - 1, shift)
    if np.any(shift < 1) or np.any(shift > 62):
        raise ValueError(f"requantisation scale out of range: {s.min()} .. {s.max()}")
    return m, shift


def requantize(acc: np.ndarray, m: np.ndarray, shift: np.ndarray, zero_point: int, lo: int, hi: int,
               offset: np.ndarray | None = None) -> np.ndarray:
    """int8 ``clamp(zero_point + round_half_up((acc * m + offset) / 2**shift), lo, hi)``, per channel on the last axis.

    Args:
        acc: int64 accumulators (values within int32).
        m: fixed-point multipliers from :func:`quantize_multiplier`.
        shift: right shifts from :func:`quantize_multiplier`.
        zero_point: output zero point.
        lo: lowest output code (fused ReLU raises it to the zero point).
        hi: highest output code.
        offset: optional int64 bias in the same fixed point (``bias / s_out * 2**shift``), for a bias kept at output
            precision rather than rounded to accumulator units.
    """
    prod = acc.astype(np.int64, copy=False) * m
    if offset is not None:
        prod += offset
    prod += np.left_shift(np.int64(1), shift - 1)
    np.right_shift(prod, shift, out=prod)
    prod += zero_point
    np.clip(prod, lo, hi, out=prod)
    return prod.astype(np.int8)


def fixed_point_offset(out_bias: np.ndarray, shift: np.ndarray) -> np.ndarray | None:
    """``round(out_bias * 2**shift)`` as int64, or None when it would not leave int64 headroom for the products."""
    scaled = np.rint(np.asarray(out_bias, np.float64) * np.ldexp(1.0, shift))
    if not np.all(np.abs(scaled) < 2.0 ** 61):
        return None
    return scaled.astype(np.int64)


def quantize(x: np.ndarray, scale: float, zero_point: int = 0, lo: int = -128, hi: int = 127) -> np.ndarray:
    """Float -> int8 codes: ``clamp(round_half_even(x / scale) + zero_point, lo, hi)``."""
    q = np.rint(np.asarray(x, dtype=np.float32) * np.float32(1.0 / scale)) + np.float32(zero_point)
    return np.clip(q, lo, hi).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    """int8 codes -> float32: ``scale * (q - zero_point)``."""
    return ((q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)).astype(np.float32)


ADD_SHIFT = 20


def add_multipliers(scale_a: float, scale_b: float, scale_out: float) -> tuple[int, int]:
    """Fixed-point (``2**ADD_SHIFT``) multipliers of the two addends of an int8 add (QNNPACK ``q8add``)."""
    ratios = np.array([scale_a / scale_out, scale_b / scale_out], np.float64)
    if not np.all(np.isfinite(ratios)) or np.any(ratios <= 0) or np.any(ratios >= 1 << 10):
        raise ValueError(f"int8 add scale ratios out of range: {ratios}")
    a, b = np.rint(ratios * (1 << ADD_SHIFT)).astype(np.int64)
    return int(a), int(b)


def add_int8(qa: np.ndarray, za: int, qb: np.ndarray, zb: int, ma: int, mb: int, zo: int, lo: int, hi: int,
             out: np.ndarray) -> None:
    """``out = clamp(zo + round((ma * (qa - za) + mb * (qb - zb)) / 2**ADD_SHIFT), lo, hi)`` (broadcasting)."""
    acc = (qa.astype(np.int64) - za) * ma
    acc += (qb.astype(np.int64) - zb) * mb
    acc += 1 << (ADD_SHIFT - 1)
    np.right_shift(acc, ADD_SHIFT, out=acc)
    acc += zo
    np.clip(acc, lo, hi, out=acc)
    out[...] = acc
