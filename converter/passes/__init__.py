"""Graph passes, run in the order of `PIPELINE` (never from inside each other).

Each pass is a module with `NAME` and `apply(graph) -> int` (the number of rewrites it made). Passes named in
`OPT_IN` run only when asked for (`run_pipeline(..., enable=...)`, `mnnpy convert --transformerFuse`): their files
need kernels official MNN's CPU lacks (GroupNorm) or Attention forms it computes wrongly (batch > 1, per-head masks).
"""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Graph
from . import (
    dedupe,
    fold_constants,
    fold_layer_norm_affine,
    fuse_attention,
    fuse_binary_into_conv,
    fuse_gelu,
    fuse_gelu_tanh,
    fuse_group_norm,
    fuse_layer_norm,
    fuse_relu_into_binary,
    fuse_relu_into_conv,
    fuse_rms_norm,
    fuse_scale_into_conv,
    hoist_transpose_above_split,
    layout,
    matmul_to_conv,
    prune_rows,
    remove_dead,
    remove_identity,
    split_before_transpose,
    split_qkv,
    token_reorder,
    transpose,
)

Pass = Callable[[Graph], int]

PIPELINE: list[tuple[str, Pass]] = [
    (remove_identity.NAME, remove_identity.apply),
    (fold_constants.NAME, fold_constants.apply),
    (dedupe.NAME, dedupe.apply),
    (fuse_gelu.NAME, fuse_gelu.apply),
    (fuse_gelu_tanh.NAME, fuse_gelu_tanh.apply),
    (fuse_layer_norm.NAME, fuse_layer_norm.apply),
    (fuse_rms_norm.NAME, fuse_rms_norm.apply),
    (fuse_group_norm.NAME, fuse_group_norm.apply),
    (remove_dead.NAME, remove_dead.apply),
    (split_before_transpose.NAME, split_before_transpose.apply),
    (split_qkv.NAME, split_qkv.apply),
    (transpose.NAME, transpose.apply),
    (fuse_attention.NAME, fuse_attention.apply),
    (fuse_attention.EXTENDED_NAME, fuse_attention.apply_extended),
    (hoist_transpose_above_split.NAME, hoist_transpose_above_split.apply),
    (transpose.NAME, transpose.apply),
    (token_reorder.NAME, token_reorder.apply),
    (prune_rows.NAME, prune_rows.apply),
    (fold_layer_norm_affine.NAME, fold_layer_norm_affine.apply),
    (fuse_scale_into_conv.NAME, fuse_scale_into_conv.apply),
    (fuse_binary_into_conv.NAME, fuse_binary_into_conv.apply),
    (fuse_relu_into_conv.NAME, fuse_relu_into_conv.apply),
    (fuse_relu_into_binary.NAME, fuse_relu_into_binary.apply),
    (matmul_to_conv.NAME, matmul_to_conv.apply),
    (dedupe.NAME, dedupe.apply),
    (layout.NAME, layout.apply),
    (remove_dead.NAME, remove_dead.apply),
]


OPT_IN: frozenset[str] = frozenset({fuse_group_norm.NAME, fuse_attention.EXTENDED_NAME, token_reorder.NAME})


def run_pipeline(graph: Graph, skip: set[str] | None = None, enable: set[str] | frozenset[str] | None = None
                 ) -> dict[str, int]:
    """Run the passes of PIPELINE in order, except those named in `skip` and the OPT_IN ones not named in `enable`;
    returns rewrites per pass name."""
    counts: dict[str, int] = {}
    for name, fn in PIPELINE:
        if (skip and name in skip) or (name in OPT_IN and not (enable and name in enable)):
            continue
        counts[name] = counts.get(name, 0) + fn(graph)
    return counts
