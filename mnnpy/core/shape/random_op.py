"""Shape of RandomUniform: the shape input's values, the parameter's element type (MNN: ShapeRandomUniform)."""

from __future__ import annotations

from typing import Any

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import np_dtype
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


@shape_fn(OT.RandomUniform, needs_values=(0,))
def random_uniform(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    shape = tuple(int(d) for d in values[0].ravel())
    if any(d < 0 for d in shape):
        raise ModelError(f"op {op.name!r} (RandomUniform): negative shape {list(shape)}")
    p = op.main
    return [TensorDesc(shape, np_dtype(p.type if p is not None and p.type else 1), NCHW)]
