"""Shape of MNN's fused Attention: q [B, Sq, H, D], k [B, Skv, Hkv, D], v [B, Skv, Hkv, Dv] -> [B, Sq, H*Dv]."""

from __future__ import annotations

from typing import Any

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError


@shape_fn(fb.OpType.Attention)
def attention(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Output [B, Sq, H * Dv] in the query's dtype (MNN: ShapeAttention)."""
    if len(descs) < 3 or any(len(d.shape) != 4 for d in descs[:3]):
        raise ModelError(f"op {op.name!r}: Attention needs rank-4 query, key and value, got "
                         f"{[d.shape for d in descs[:3]]}")
    (b, sq, h, d), (bk, skv, hk, dk), (bv, sv, hv, dv) = (d.shape for d in descs[:3])
    if dk != d or sv != skv or hv != hk or h % hk or bk not in (b, 1) or bv != bk:
        raise ModelError(f"op {op.name!r}: Attention shapes do not agree: q {descs[0].shape}, k {descs[1].shape}, "
                         f"v {descs[2].shape}")
    return [TensorDesc((b, sq, h * dv), descs[0].dtype, NCHW)]
