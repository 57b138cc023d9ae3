"""FloatToInt8 / Int8ToFloat at the edges of int8 islands (params: QuantizedFloatParam), with shape functions.

FloatToInt8: ``q = clamp(round(x * tensorScale) + zeroPoint, clampMin, clampMax)``, rounding half away from zero
(``tensorScale`` = 1 / scale).
Int8ToFloat: ``x = (q - zeroPoint) * tensorScale`` (``tensorScale`` = scale). One scale per tensor or per channel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.int8.requant import round_half_away_f32
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import cpu_kernel, shape_fn

OT = fb.OpType


@shape_fn(OT.FloatToInt8)
def to_int8_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Same shape, int8, plain layout."""
    return [TensorDesc(descs[0].shape, np.dtype(np.int8), NCHW)]


@shape_fn(OT.Int8ToFloat)
def to_float_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Same shape, float32, plain layout."""
    return [TensorDesc(descs[0].shape, np.dtype(np.float32), NCHW)]


def _scale(op: Any, shape: tuple[int, ...]) -> np.ndarray:
    q = op.main
    scale = np.asarray(q.tensorScale if q is not None and q.tensorScale is not None else [], np.float32).ravel()
    if scale.size == 1:
        return scale.reshape(())
    if len(shape) >= 2 and scale.size == shape[1]:
        return scale.reshape((1, -1) + (1,) * (len(shape) - 2))
    raise ModelError(f"op {op.name!r}: {scale.size} tensor scales for shape {shape}")


@cpu_kernel(OT.FloatToInt8, formats=(NCHW,))
class FloatToInt8(CPUExecution):
    """Quantise a float tensor: float32 product, then MNN's SIMD rounding (half away from zero, see requant)."""

    def on_resize(self) -> None:
        q = self.op.main
        self.scale = _scale(self.op, self.x.desc.shape)
        self.zero = np.float32(q.zeroPoint)
        self.lo, self.hi = int(q.clampMin), int(q.clampMax)
        self.tmp = np.empty(self.x.desc.shape, np.float32)

    def on_execute(self) -> None:
        np.multiply(self.x.array, self.scale, out=self.tmp)
        self.tmp[...] = round_half_away_f32(self.tmp)
        self.tmp += self.zero
        np.clip(self.tmp, self.lo, self.hi, out=self.tmp)
        self.y.array[...] = self.tmp


@cpu_kernel(OT.Int8ToFloat, formats=(NCHW,))
class Int8ToFloat(CPUExecution):
    """Dequantise an int8 tensor."""

    def on_resize(self) -> None:
        self.scale = _scale(self.op, self.x.desc.shape)
        self.zero = np.float32(self.op.main.zeroPoint)

    def on_execute(self) -> None:
        np.subtract(self.x.array, self.zero, out=self.y.array, dtype=np.float32)
        self.y.array *= self.scale
