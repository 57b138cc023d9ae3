"""Reduction (SUM, ASUM, SUMSQ, MEAN, MAXIMUM, MINIMUM, PROD) over one contiguous run of axes (MNN: `VulkanReduce`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC
from mnnpy.core.shape.misc import reduce_axes

SUPPORTED = frozenset(range(7))


def contiguous_axes(op: Any, inputs: Sequence[TensorRef]) -> list[int] | None:
    """Sorted reduced axes (param `dim` or constant input 1; empty = all) when they form one contiguous run."""
    if len(inputs) > 1 and not (inputs[1].const and inputs[1].array is not None):
        return None
    values = [None, np.asarray(inputs[1].array) if len(inputs) > 1 else None]
    try:
        axes = reduce_axes(op, inputs[0].desc, values)
    except (ValueError, TypeError, AttributeError):
        return None
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None
    return axes


@vulkan_kernel(fb.OpType.Reduction, formats=("NCHW", "NC4HW4"))
class VulkanReduction(VulkanExecution):
    """One invocation per kept element, looping over the reduced run."""

    algorithm = "reduce"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) not in (1, 2) or len(outputs) != 1 or op_param(op) is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if (x.fmt == NHWC) != (y.fmt == NHWC) or int(op_param(op).operation) not in SUPPORTED:
            return False
        axes = contiguous_axes(op, inputs)
        return axes is not None and math.prod(x.shape) == math.prod(y.shape) * math.prod(x.shape[a] for a in axes)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        axes = contiguous_axes(self.op, self.inputs)
        assert axes is not None
        outer = math.prod(shape[:axes[0]])
        axis = math.prod(shape[axes[0]:axes[-1] + 1])
        inner = math.prod(shape[axes[-1] + 1:])
        values = (outer, axis, inner, int(op_param(self.op).operation), *shader_format(x.desc), *shader_format(y.desc))
        self.dispatch("reduce", [self.bind(x)], [self.bind(y)], "8i", values, outer * inner)
