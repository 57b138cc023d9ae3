"""Shapes of linear-algebra ops: Svd and Det (MNN: ShapeSvd, ShapeDet)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
F32 = np.dtype(np.float32)


@shape_fn(OT.Svd)
def svd(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Thin SVD of an [M, N] matrix with M >= N: w [N], u [M, N], vt [N, N]."""
    shape = descs[0].shape
    if len(shape) != 2:
        raise ModelError(f"op {op.name!r} (Svd): input must be a 2-D matrix, got shape {list(shape)}")
    rows, cols = shape
    if rows < cols:
        raise ModelError(f"op {op.name!r} (Svd): needs rows >= columns, got {rows}x{cols} (transpose it first)")
    return [TensorDesc((cols,), F32, NCHW), TensorDesc((rows, cols), F32, NCHW), TensorDesc((cols, cols), F32, NCHW)]


@shape_fn(OT.Det)
def det(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Determinants of square matrices [..., M, M]: [...]."""
    shape = descs[0].shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ModelError(f"op {op.name!r} (Det): input must be [..., M, M] square matrices, got shape {list(shape)}")
    return [TensorDesc(shape[:-2], F32, NCHW)]
