"""BinaryOp and Eltwise with broadcasting; same-layout operands and constants work on the physical arrays."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from mnnpy.backends.cpu.compute.common import relu
from mnnpy.backends.cpu.layout import logical, store, zero_tail
from mnnpy.backends.cpu.ops._common import CF, CPUExecution, physical_operand
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import Execution
from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


def _modulo(kind: int, dtype: np.dtype) -> Callable:
    """FLOORMOD (17) / MOD (19) for one operand dtype, chosen in on_resize.

    Floats: FLOORMOD is Python's mod (sign of b), MOD C's fmod (sign of a). Official MNN 3.6.1 swaps the two for
    integer tensors (measured, the ONNX node suite's mixed-sign Mod cases); mnnpy runs files the same way, and its
    converter and expr pick the code per dtype."""
    python_sign = (kind == 17) == (dtype.kind == "f")
    return np.mod if python_sign else np.fmod


def _div(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Division; integers truncate toward zero (C semantics, as MNN and ONNX)."""
    q = np.trunc(a / b).astype(a.dtype) if np.issubdtype(a.dtype, np.integer) else np.divide(a, b)
    if out is None:
        return q
    np.copyto(out, q, casting="unsafe")
    return out


def _mul_silu(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """MUL_SILU (29): a * silu(b) = a * b / (1 + exp(-b))."""
    return np.multiply(a, b / (1.0 + np.exp(-b)), out=out) if out is not None else a * (b / (1.0 + np.exp(-b)))


BINARY: dict[int, Callable] = {
    0: np.add, 1: np.subtract, 2: np.multiply, 3: _div, 4: np.maximum, 5: np.minimum, 6: np.power, 7: _div,
    8: np.minimum, 9: np.maximum, 10: np.greater, 11: np.greater_equal, 12: np.less, 13: np.floor_divide,
    14: lambda a, b, out=None: np.square(a - b, out=out), 15: np.equal, 16: np.less_equal, 17: np.mod,
    19: np.fmod, 20: np.arctan2, 21: np.logical_or, 22: np.not_equal, 23: np.bitwise_and, 24: np.bitwise_or,
    25: np.bitwise_xor, 26: np.logical_xor, 27: np.left_shift, 28: np.right_shift, 29: _mul_silu,
}
ELTWISE = {0: np.multiply, 1: np.add, 2: np.maximum, 3: np.subtract}


def _done() -> None:
    """The run of an Add whose work the producing convolution did (``Binary._residual``)."""


@cpu_kernel(OT.BinaryOp, OT.Eltwise, formats=CF)
class Binary(CPUExecution):
    """y = op(a, b[, ...]); a fused ReLU for BinaryOp activationType 1."""

    fn: Callable[..., np.ndarray]

    def on_resize(self) -> None:
        p = self.op.main
        if self.op.type == OT.Eltwise:
            self.fn = ELTWISE[p.type if p is not None else 1]
            self.relu = False
            coeff = list(p.coeff) if p is not None and p.coeff is not None else []
            self.coeff = coeff if coeff and any(c != 1 for c in coeff) else None
        else:
            kind = p.opType if p is not None else 0
            if kind not in BINARY:
                raise NotImplementedError(f"BinaryOp {kind} on op {self.op.name!r}")
            self.fn = BINARY[kind] if kind not in (17, 19) else _modulo(kind, self.inputs[0].desc.dtype)
            self.relu = p is not None and p.activationType == 1
            self.coeff = None
        y = self.y
        self.physical = self.coeff is None and y.desc.dtype == np.result_type(*[r.desc.dtype for r in self.inputs])
        self.operands: list = []
        for r in self.inputs:
            if r.desc.shape == y.desc.shape and r.desc.fmt == y.desc.fmt:
                self.operands.append(r)
            elif r.const:
                self.operands.append(physical_operand(np.asarray(r.array if r.desc.fmt != "NC4HW4" else logical(r)),
                                                      y.desc.shape, y.desc.fmt))
            else:
                self.physical = False
        self.algorithm = "physical" if self.physical else "logical"

    def fuse_after_chain(self, producer: Execution) -> list[Callable[[], None]] | None:
        return self._residual(producer)

    def _residual(self, producer: Execution) -> list[Callable[[], None]] | None:
        """A convolution -> this Add of a residual (ResNet's blocks, the ReLU fused in the Add): the convolution
        stores its output tiles and adds the residual to them itself (``Convolution.residual_run``), writing this
        Add's output; this command then has nothing left to do."""
        run = getattr(producer, "residual_run", None)
        y = self.y
        if run is None or not self.physical or self.fn is not np.add or len(self.operands) != 2 \
                or y.desc.fmt != "NC4HW4" or y.desc.shape[1] % 4 \
                or any(isinstance(o, np.ndarray) or o.array.dtype != np.float32 for o in self.operands):
            return None
        arrays = [o.array for o in self.operands]
        out = y.array
        link = [k for k, a in enumerate(arrays) if np.shares_memory(a, producer.y_view)]  # type: ignore[attr-defined]
        if len(link) != 1:
            return None
        residual = arrays[1 - link[0]]
        same = residual.__array_interface__ == out.__array_interface__  # the sum written over the residual
        if not same and np.may_share_memory(residual, out):
            return None
        conv = run(residual, out, self.relu)
        return None if conv is None else [conv, _done]

    def fuse_after(self, producer: Execution) -> list[Callable[[], None]] | None:
        fused = self._residual(producer)
        return fused if fused is not None else self._flat_residual(producer)

    def _flat_residual(self, producer: Execution) -> list[Callable[[], None]] | None:
        """A flat 1x1 GEMM (MatMul + bias) -> this Add of a residual, with compiled kernels: the GEMM skips its bias
        pass and one compiled pass adds GEMM output, bias and residual (a transformer's attention and FFN output
        projections: ViT-tiny's [197, 192] bias pass, 34 us, twice per layer)."""
        from mnnpy.backends.cpu.compute import jit
        from mnnpy.backends.cpu.compute.gemm import _plain_flat

        kernel = getattr(producer, "kernel", None)
        flat = _plain_flat(kernel)
        if flat is None or not self.physical or self.fn is not np.add or len(self.operands) != 2 \
                or getattr(producer, "runtime_weights", True) or not jit.enabled() \
                or any(isinstance(o, np.ndarray) or o.array.dtype != np.float32 for o in self.operands):
            return None
        m, _, n = flat
        arrays = [o.array for o in self.operands]
        link = [k for k, a in enumerate(arrays) if np.shares_memory(a, producer.y_view)]
        gemm = kernel.flat_gemm(producer.x_view, producer.y_view)  # type: ignore[union-attr]
        out = self.y.array
        if gemm is None or len(link) != 1 or out.size != m * n \
                or not all(a.flags.c_contiguous and a.size == m * n for a in (*arrays, out)):
            return None
        a, b = arrays[link[0]].reshape(m, n), arrays[1 - link[0]].reshape(m, n)
        out2 = out.reshape(m, n)
        k = jit.kernels()
        bias = jit.readonly(kernel.bias_row)  # type: ignore[union-attr]
        clamp = (np.float32(0.0 if self.relu else -np.inf), np.float32(np.inf))  # activationType 1: ReLU
        if not np.shares_memory(out2, a) and not np.shares_memory(out2, b):
            add = partial(k.bias_add3, jit.readonly(a), bias, jit.readonly(b), out2, *clamp)  # type: ignore
        elif out2.ctypes.data in (a.ctypes.data, b.ctypes.data):  # the sum written over one operand
            other = b if out2.ctypes.data == a.ctypes.data else a
            add = partial(k.bias_add_into, jit.readonly(other), bias, out2, *clamp)  # type: ignore
        else:
            return None
        return [gemm, add]

    def on_execute(self) -> None:
        y = self.y
        if self.physical:
            ops = [o.array if not isinstance(o, np.ndarray) else o for o in self.operands]
            out = y.array
            self.fn(ops[0], ops[1], out=out)
            for extra in ops[2:]:
                self.fn(out, extra, out=out)
            if self.relu:
                relu(out, out)
            zero_tail(y)
            return
        vals = [logical(r) for r in self.inputs]
        if self.coeff is not None:
            vals = [v * c for v, c in zip(vals, self.coeff, strict=False)]
        res = self.fn(vals[0], vals[1])
        for extra in vals[2:]:
            res = self.fn(res, extra)
        if self.relu:
            res = np.maximum(res, 0)
        store(y, res)
