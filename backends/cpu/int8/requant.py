"""Requantisation of int8 kernels, in the arithmetic of MNN's x86 CPU backend (so both runtimes give the same codes).

MNN keeps int32 accumulation exact and requantises in float32 inside the kernel: the accumulator is converted to
float32, multiplied by per-channel float32 scales, a float32 bias (in output codes) is added, the value is clamped,
and rounded half away from zero by adding +-0.5 in float32 and truncating (``_mm512_roundscale_ps(f, 3)``).
Its x86 kernels take inputs as ``uint8 = x + 128``; the correction ``-128 * sum(w)`` is folded into the float bias,
so the float32 roundings depend on it, and it is reproduced here (``INPUT_OFFSET``). The int8 add computes
``roundf((s_a * (qa - za) + s_b * (qb - zb)) * (1 / s_out))`` in float32 (``MNNBinaryAddInt8``).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
INPUT_OFFSET = 128  # MNN's x86 int8 GEMM reads inputs as x + 128 (uint8)


def round_half_away_f32(f: np.ndarray) -> np.ndarray:
    """MNN's SIMD rounding of float32 values: ``trunc(f + (f < 0 ? -0.5 : 0.5))`` with the add in float32."""
    f = np.asarray(f, F32)
    return np.trunc(f + np.where(f < 0, F32(-0.5), F32(0.5)))


def roundf(f: np.ndarray) -> np.ndarray:
    """C ``roundf``: exact round half away from zero of float32 values."""
    f = np.asarray(f, F32).astype(np.float64)
    return np.trunc(f + np.copysign(0.5, f))


def post_treat(acc: np.ndarray, scale: np.ndarray, zero_point: int, lo: int, hi: int,
               post_scale: float | None = None, bias: np.ndarray | None = None) -> np.ndarray:
    """int8 ``clamp(zero_point + round(f), lo, hi)`` of accumulators, per channel on the last axis.

    ``f = float32(acc) * scale [* post_scale] [+ bias]``, every step rounded to float32 as MNN does.

    Args:
        acc: accumulators (integers; int64, or float32 / float64 holding them), bias in accumulator units added.
        scale: float32 per-channel multipliers.
        zero_point: output zero point.
        lo: lowest output code (fused ReLU raises it to the zero point).
        hi: highest output code.
        post_scale: a second float32 multiplier (MNN's ``s_in / s_out`` after the weight scale).
        bias: float32 per-channel bias in output codes, added after scaling.
    """
    f = np.multiply(acc, np.asarray(scale, F32), dtype=F32)  # float32(acc) first: numpy casts before multiplying
    if post_scale is not None:
        f *= F32(post_scale)
    if bias is not None:
        f += np.asarray(bias, F32)
    f += np.copysign(F32(0.5), f)  # MNN's rounding: +-0.5 in float32, then truncation
    np.trunc(f, out=f)
    if zero_point:
        f += F32(zero_point)
    np.clip(f, lo, hi, out=f)
    return f.astype(np.int8)


def quantize(x: np.ndarray, scale: float, zero_point: int = 0, lo: int = -128, hi: int = 127) -> np.ndarray:
    """Float -> int8 codes as MNN's FloatToInt8: ``clamp(round(x * float32(1 / scale)) + zero_point, lo, hi)``, the
    product in float32 and rounded half away from zero."""
    q = round_half_away_f32(np.asarray(x, dtype=np.float32) * np.float32(1.0 / scale)) + np.float32(zero_point)
    return np.clip(q, lo, hi).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    """int8 codes -> float32: ``scale * (q - zero_point)``."""
    return ((q.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)).astype(np.float32)


def add_int8(qa: np.ndarray, za: int, qb: np.ndarray, zb: int, scales: tuple[float, float, float], zo: int, lo: int,
             hi: int, out: np.ndarray) -> None:
    """``out = clamp(zo + roundf((s_a (qa - za) + s_b (qb - zb)) * (1 / s_out)), lo, hi)`` in float32 (broadcasting).

    Raises:
        ValueError: for scales that are not positive and finite.
    """
    sa, sb, so = (F32(s) for s in scales)
    if not all(np.isfinite(s) and s > 0 for s in (sa, sb, so)):
        raise ValueError(f"int8 add scales must be positive and finite: {scales}")
    total = (qa.astype(F32) - F32(za)) * sa + (qb.astype(F32) - F32(zb)) * sb
    total *= F32(1.0) / so
    value = roundf(total) + zo
    np.clip(value, lo, hi, out=value)
    out[...] = value
