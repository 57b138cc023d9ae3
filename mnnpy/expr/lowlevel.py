"""Low-level ops of `MNN.expr`: int8 quantisation (quant, dequant), Svd and Raster (MNN: `_FloatToInt8`,
`_Int8ToFloat`, `_Svd`, `_Raster`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr._attrs import extra
from mnnpy.expr.var import Var, apply, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter
REGION_INTS = 11  # src offset, 3 src strides, dst offset, 3 dst strides, 3 sizes


def _scales(scale: Any, x: Var, fn: str) -> np.ndarray:
    """A scale operand as float32 values: one per tensor or one per channel (axis 1) of `x`."""
    s = np.asarray(scale.read() if isinstance(scale, Var) else scale, np.float32).ravel()
    channels = x.shape[1] if x.ndim >= 2 else 1
    if s.size not in (1, channels):
        raise ValueError(f"mnnpy.expr.{fn}: scale has {s.size} values; expected 1 or one per channel "
                         f"({channels}) of input {x.shape}")
    return s


def _int8(v: int, what: str, fn: str) -> int:
    if not -128 <= int(v) <= 127:
        raise ValueError(f"mnnpy.expr.{fn}: {what} {v} is outside int8 [-128, 127]")
    return int(v)


def quant(var: Any, scale: Any, min: int = -128, max: int = 127, zero: int = 0) -> Var:
    """Float to int8: clamp(round(var * scale) + zero, min, max) (MNN: `expr.quant`, FloatToInt8 op).

    As MNN's `_FloatToInt8`, `scale` multiplies (pass 1 / step); it holds one value or one per channel.
    """
    x = to_var(var)
    if x.np_dtype.kind != "f":
        x = m.cast(x, np.float32)
    p = fb.QuantizedFloatParamT()
    p.tensorScale = _scales(scale, x, "quant")
    p.clampMin, p.clampMax = _int8(min, "min", "quant"), _int8(max, "max", "quant")
    if p.clampMin > p.clampMax:
        raise ValueError(f"mnnpy.expr.quant: min {min} > max {max}")
    p.zeroPoint = _int8(zero, "zero", "quant")
    return apply(OT.FloatToInt8, [x], PT.QuantizedFloatParam, p, dtypes=[np.int8])


def dequant(var: Any, scale: Any, zero: int) -> Var:
    """Int8 to float: (var - zero) * scale (MNN: `expr.dequant`, Int8ToFloat op)."""
    x = to_var(var)
    if x.np_dtype != np.int8:
        raise TypeError(f"mnnpy.expr.dequant: input must be int8 (a quant result), got {x.np_dtype}")
    p = fb.QuantizedFloatParamT()
    p.tensorScale = _scales(scale, x, "dequant")
    p.zeroPoint = _int8(zero, "zero", "dequant")
    return apply(OT.Int8ToFloat, [x], PT.QuantizedFloatParam, p, dtypes=[np.float32])


def svd(x: Any) -> list[Var]:
    """Thin SVD of a 2-D matrix [M, N] (M >= N): w [N], u [M, N], vt [N, N], a = u @ diag(w) @ vt
    (MNN: `expr.svd`, Svd op).
    """
    v = to_var(x)
    if v.np_dtype != np.float32:
        v = m.cast(v, np.float32)
    if v.ndim != 2:
        raise ValueError(f"mnnpy.expr.svd: input must be a 2-D matrix, got shape {v.shape}")
    return apply(OT.Svd, [v], n_out=3, dtypes=[np.float32] * 3)


def raster(vars: Sequence[Any], region: Sequence[int], shape: Sequence[int]) -> Var:
    """Copy regions of the inputs into a new tensor of `shape` (MNN: `expr.raster`, Raster op).

    `region` holds 11 ints per input: src offset, src strides (3), dst offset, dst strides (3), sizes (3),
    addressed in each tensor's logical (row-major) order. Elements no region writes are zero.
    """
    ins = [to_var(v) for v in vars]
    regs = [int(r) for r in region]
    if not ins:
        raise ValueError("mnnpy.expr.raster: needs at least one input Var")
    if len(regs) != REGION_INTS * len(ins):
        raise ValueError(f"mnnpy.expr.raster: {len(regs)} region ints for {len(ins)} inputs; expected "
                         f"{REGION_INTS} per input")
    if any(int(d) < 0 for d in shape):
        raise ValueError(f"mnnpy.expr.raster: negative output shape {list(shape)}")
    params = extra("Raster", "MNN", region=regs, shape=[int(d) for d in shape])
    return apply(OT.Raster, ins, PT.Extra, params, dtypes=[ins[0].np_dtype])
