"""UnaryOp, Sigmoid and TanH: elementwise on the physical array (packed or plain), then the channel tail zeroed."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from mnnpy.backends.cpu.compute import jit
from mnnpy.backends.cpu.layout import zero_tail
from mnnpy.backends.cpu.ops._common import CF, CPUExecution, erf, gelu_erf
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import Execution
from mnnpy.core.registry import cpu_kernel

Fn = Callable[[np.ndarray, np.ndarray], None]


def _sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    with np.errstate(over="ignore"):  # exp(-x) -> inf gives the right 0
        np.negative(x, out=out)
        np.exp(out, out=out)
        out += 1
        np.divide(np.float32(1.0) if out.dtype == np.float32 else 1.0, out, out=out)  # reciprocal: slow float32 loop


def _gelu_tanh(x: np.ndarray, out: np.ndarray) -> None:
    inner = np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))
    np.multiply(0.5 * x, 1.0 + inner, out=out)


def _hardswish(x: np.ndarray, out: np.ndarray) -> None:
    np.multiply(x, np.clip(x + 3.0, 0.0, 6.0) / 6.0, out=out)


def _silu(x: np.ndarray, out: np.ndarray) -> None:
    tmp = np.empty_like(out)
    _sigmoid(x, tmp)
    np.multiply(x, tmp, out=out)


def _u(f: Callable) -> Fn:
    def run(x: np.ndarray, out: np.ndarray) -> None:
        f(x, out=out)

    return run


def _e(f: Callable[[np.ndarray], np.ndarray]) -> Fn:
    def run(x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, f(x), casting="unsafe")

    return run


UNARY: dict[int, Fn] = {
    0: _u(np.abs), 1: _u(np.negative), 2: _u(np.floor), 3: _u(np.ceil), 4: _u(np.square), 5: _u(np.sqrt),
    6: _e(lambda x: 1.0 / np.sqrt(x)), 7: _u(np.exp), 8: _u(np.log), 9: _u(np.sin), 10: _u(np.cos), 11: _u(np.tan),
    12: _u(np.arcsin), 13: _u(np.arccos), 14: _u(np.arctan), 15: _u(np.reciprocal), 16: _u(np.log1p),
    17: _e(lambda x: np.logaddexp(0, x)), 18: _u(np.arccosh), 19: _u(np.sinh), 20: _u(np.arcsinh),
    21: _u(np.arctanh), 22: _u(np.sign), 23: _u(np.rint), 24: _u(np.cosh), 25: _e(erf), 26: _e(lambda x: 1 - erf(x)),
    28: _u(np.expm1), 29: _sigmoid, 30: _u(np.tanh), 31: _hardswish, 32: _gelu_tanh,
    33: _e(lambda x: 0.5 * x * (1.0 + erf(x * np.float32(0.7071067811865476)))), 34: _silu,
}


@cpu_kernel(fb.OpType.UnaryOp, fb.OpType.Sigmoid, fb.OpType.TanH, formats=CF)
class Unary(CPUExecution):
    """MNN's UnaryOp (ABS..SILU) plus the legacy Sigmoid/TanH ops."""

    def on_resize(self) -> None:
        t = self.op.type
        kind = 29 if t == fb.OpType.Sigmoid else 30 if t == fb.OpType.TanH else self.op.main.opType
        if kind not in UNARY:
            raise NotImplementedError(f"UnaryOp {kind} on op {self.op.name!r}")
        self.fn = UNARY[kind]
        self.algorithm = f"unary-{kind}"
        plain = self.x.array.dtype == np.float32 and not np.shares_memory(self.x.array, self.y.array)
        if kind == 33 and plain and jit.enabled() and self.x.array.flags.c_contiguous \
                and self.y.array.flags.c_contiguous:  # GELU (erf) in one compiled pass
            self.fn = jit.gelu_erf
            self.algorithm = "gelu-erf-jit"
        elif kind == 33 and plain:  # GELU (erf): two scratch arrays shared by shape, no temporaries
            key = ("gelu-scratch", self.x.array.shape)
            a, t = self.backend.kernel_cache.get(key) or tuple(np.empty_like(self.x.array) for _ in range(2))
            self.backend.kernel_cache[key] = (a, t)
            self.fn = partial(gelu_erf, a=a, t=t)
            self.algorithm = "gelu-erf"

    def on_execute(self) -> None:
        self.fn(self.x.array, self.y.array)
        zero_tail(self.y)

    def fuse_between(self, producer: Execution, consumer: Execution) -> list[Callable[[], None]] | None:
        """GELU between two flat 1x1 GEMMs (a transformer FFN): the GEMMs hand h and g over transposed where that
        was measured faster (`compute.gemm.transposed_ffn`); GELU is elementwise, so it runs on the bytes as they are
        (no channel tail: the shapes it accepts have none)."""
        from mnnpy.backends.cpu.compute.gemm import transposed_ffn

        if not self.algorithm.startswith("gelu-erf"):
            return None
        first, second = getattr(producer, "kernel", None), getattr(consumer, "kernel", None)
        if getattr(producer, "runtime_weights", True) or getattr(consumer, "runtime_weights", True):
            return None
        runs = transposed_ffn(first, producer.x_view, producer.y_view, second, consumer.x_view, consumer.y_view)
        if runs is None or not np.shares_memory(producer.y_view, self.x.array) \
                or not np.shares_memory(consumer.x_view, self.y.array):
            return None
        return [runs[0], self.on_execute, runs[1]]
