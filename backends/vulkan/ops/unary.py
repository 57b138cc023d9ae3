"""UnaryOp, ReLU (leaky), ReLU6, Sigmoid, TanH, ELU and Selu: one elementwise shader over the physical buffer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

LEAKY_RELU, CLAMP, ELU = 100, 101, 102
SUPPORTED_UNARY = frozenset(range(0, 35)) - {27}  # all of UnaryOpOperation but ERFINV
_FIXED = {fb.OpType.Sigmoid: fb.UnaryOpOperation.SIGMOID, fb.OpType.TanH: fb.UnaryOpOperation.TANH}
FORMATS = ("NC4HW4", "NCHW", "NHWC")


def unary_code(op_type: int, op: Any) -> tuple[int, float, float]:
    """(shader op code, param0, param1) of an activation/unary op."""
    param = op_param(op)
    if op_type == fb.OpType.ReLU:
        return LEAKY_RELU, float(getattr(param, "slope", 0.0) or 0.0), 0.0
    if op_type == fb.OpType.ReLU6:
        lo = float(getattr(param, "minValue", 0.0)) if param is not None else 0.0
        hi = float(getattr(param, "maxValue", 6.0)) if param is not None else 6.0
        return CLAMP, lo, hi
    if op_type == fb.OpType.ELU:
        return ELU, float(param.alpha) if param is not None else 1.0, 1.0
    if op_type == fb.OpType.Selu:
        alpha = float(param.alpha) if param is not None else 1.6732632
        return ELU, alpha, float(param.scale) if param is not None else 1.0507010
    if op_type in _FIXED:
        return int(_FIXED[op_type]), 0.0, 0.0
    return int(getattr(param, "opType", -1)), 0.0, 0.0


@vulkan_kernel(fb.OpType.UnaryOp, fb.OpType.ReLU, fb.OpType.ReLU6, fb.OpType.Sigmoid, fb.OpType.TanH, fb.OpType.ELU,
               fb.OpType.Selu, formats=FORMATS)
class VulkanUnary(VulkanExecution):
    """y = f(x) elementwise; NC4HW4 padding lanes are written as zero."""

    algorithm = "unary"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if (x.fmt, x.shape) != (y.fmt, y.shape):
            return False
        code = unary_code(int(getattr(op, "type", fb.OpType.UnaryOp)), op)[0]
        return code in SUPPORTED_UNARY or code in (LEAKY_RELU, CLAMP, ELU)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        code, p0, p1 = unary_code(int(self.op.type), self.op)
        c, area = shader_format(x.desc)
        total = x.desc.nbytes // 4
        self.dispatch("unary", [self.bind(x)], [self.bind(y)], "iiiff", (total, c, area, p0, p1), total, spec=(code,))
