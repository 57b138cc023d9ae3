"""Reduction (SUM, ASUM, SUMSQ, MEAN, MAX, MIN, PROD, ANY, ALL), ArgMax/ArgMin and TopKV2."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape._util import norm_axis
from mnnpy.core.shape.misc import reduce_axes

OT = fb.OpType
REDUCE: dict[int, Callable[..., Any]] = {0: np.sum, 3: np.mean, 4: np.max, 5: np.min, 6: np.prod, 7: np.any, 8: np.all}


@cpu_kernel(OT.Reduction)
class Reduction(CPUExecution):
    """Reduces over the axes with keepdims into a reshaped view of the output."""

    def on_resize(self) -> None:
        p = self.op.main
        values = [None, self.inputs[1].array if len(self.inputs) > 1 else None]
        self.axes = tuple(reduce_axes(self.op, self.x.desc, values))
        self.kind = p.operation
        keep = tuple(1 if i in self.axes else d for i, d in enumerate(self.x.desc.shape))
        self.out = self.y.array.reshape(keep)
        self.algorithm = f"reduce-{self.kind}"

    def on_execute(self) -> None:
        x = self.x.array
        if self.kind == 1:
            x = np.abs(x)
        elif self.kind == 2:
            x = np.square(x)
        fn: Callable[..., Any] = np.sum if self.kind in (1, 2) else REDUCE[self.kind]
        if x.size == 0 and self.kind in (4, 5):  # max/min of an empty set: the identity (-inf / +inf)
            self.out.fill(-np.inf if self.kind == 4 else np.inf)
            return
        np.copyto(self.out, fn(x, axis=self.axes, keepdims=True), casting="unsafe")


@cpu_kernel(OT.ArgMax, OT.ArgMin)
class ArgMax(CPUExecution):
    """Index of the max/min along an axis (int32)."""

    def on_resize(self) -> None:
        self.axis = norm_axis(self.op.main.axis if self.op.main else 0, len(self.x.desc.shape), self.op.name)
        self.fn = np.argmax if self.op.type == OT.ArgMax else np.argmin
        self.algorithm = "argmax"

    def on_execute(self) -> None:
        np.copyto(self.y.array, self.fn(self.x.array, axis=self.axis), casting="unsafe")


@cpu_kernel(OT.TopKV2)
class TopK(CPUExecution):
    """The k largest (or smallest) values and their indices along the last axis, sorted."""

    def on_resize(self) -> None:
        self.k = self.y.desc.shape[-1]
        p = self.op.main
        self.largest = True if p is None else bool(getattr(p, "largest", True))
        self.algorithm = "topk"

    def on_execute(self) -> None:
        x = self.x.array
        key = -x if self.largest else x
        idx = np.argsort(key, axis=-1, kind="stable")[..., : self.k]
        np.copyto(self.outputs[0].array, np.take_along_axis(x, idx, axis=-1))
        np.copyto(self.outputs[1].array, idx, casting="unsafe")
