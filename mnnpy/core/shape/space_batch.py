"""Shapes of SpaceToBatchND / BatchToSpaceND (block and paddings/crops in the SpaceBatch param or inputs 1, 2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import ints, same
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


def _blob_ints(blob: Any) -> list[int]:
    if blob is None:
        return []
    return ints(blob.int32s if blob.int32s is not None else np.zeros(0))


def space_batch_params(op: Any, values: list) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """((block_h, block_w), (pad_top, pad_bottom, pad_left, pad_right)) for 2 spatial dims."""
    if len(values) > 2 and values[1] is not None:
        block, pads = ints(values[1]), ints(values[2])
    else:
        block, pads = _blob_ints(op.main.blockShape), _blob_ints(op.main.padding)
    if len(block) != 2 or len(pads) != 4:
        raise ModelError(f"op {op.name!r}: only 2 spatial block dims are supported, got {block}, {pads}")
    return (block[0], block[1]), (pads[0], pads[1], pads[2], pads[3])


@shape_fn(OT.SpaceToBatchND, OT.BatchToSpaceND, needs_values=(1, 2))
def space_batch(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    (bh, bw), (pt, pb, pl, pr) = space_batch_params(op, values)
    n, c, h, w = descs[0].shape
    if op.type == OT.SpaceToBatchND:
        if (h + pt + pb) % bh or (w + pl + pr) % bw:
            raise ModelError(f"op {op.name!r}: padded size is not a multiple of the block")
        return [same(descs[0], (n * bh * bw, c, (h + pt + pb) // bh, (w + pl + pr) // bw))]
    return [same(descs[0], (n // (bh * bw), c, h * bh - pt - pb, w * bw - pl - pr))]
