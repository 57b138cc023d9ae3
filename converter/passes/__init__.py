"""Graph passes, run in the order of `PIPELINE` (never from inside each other).

Each pass is a module with `NAME` and `apply(graph) -> int` (the number of rewrites it made).
"""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Graph
from . import (
    dedupe,
    fold_constants,
    fuse_binary_into_conv,
    fuse_gelu,
    fuse_layer_norm,
    fuse_relu_into_binary,
    fuse_relu_into_conv,
    fuse_scale_into_conv,
    layout,
    matmul_to_conv,
    remove_dead,
    remove_identity,
    transpose,
)

Pass = Callable[[Graph], int]

PIPELINE: list[tuple[str, Pass]] = [
    (remove_identity.NAME, remove_identity.apply),
    (fold_constants.NAME, fold_constants.apply),
    (dedupe.NAME, dedupe.apply),
    (fuse_gelu.NAME, fuse_gelu.apply),
    (fuse_layer_norm.NAME, fuse_layer_norm.apply),
    (remove_dead.NAME, remove_dead.apply),
    (transpose.NAME, transpose.apply),
    (fuse_scale_into_conv.NAME, fuse_scale_into_conv.apply),
    (fuse_binary_into_conv.NAME, fuse_binary_into_conv.apply),
    (fuse_relu_into_conv.NAME, fuse_relu_into_conv.apply),
    (fuse_relu_into_binary.NAME, fuse_relu_into_binary.apply),
    (matmul_to_conv.NAME, matmul_to_conv.apply),
    (dedupe.NAME, dedupe.apply),
    (layout.NAME, layout.apply),
    (remove_dead.NAME, remove_dead.apply),
]


def run_pipeline(graph: Graph, skip: set[str] | None = None) -> dict[str, int]:
    """Run every pass of PIPELINE in order (except those named in `skip`); returns rewrites per pass name."""
    counts: dict[str, int] = {}
    for name, fn in PIPELINE:
        if skip and name in skip:
            continue
        counts[name] = counts.get(name, 0) + fn(graph)
    return counts
