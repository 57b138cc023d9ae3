"""LayerNorm (and RMSNorm, groups) over the trailing axes; Scale (per-channel a*x+b) on packed arrays."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.compute import jit
from mnnpy.backends.cpu.ops._common import CF, CPUExecution, channel_vector
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


@cpu_kernel(OT.LayerNorm)
class LayerNorm(CPUExecution):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta over the last len(axis) dims."""

    def on_resize(self) -> None:
        p = self.op.main
        rank = len(self.x.desc.shape)
        n_axes = len(p.axis) if p.axis is not None and len(p.axis) else 1
        self.axes = tuple(range(rank - n_axes, rank))
        self.eps = float(p.epsilon)
        self.rms = bool(p.useRmsnorm)  # schema useRMSNorm; flatc object API spells it useRmsnorm
        self.group = int(p.group or 1)
        if self.group > 1:
            raise ModelError(f"op {self.op.name!r}: LayerNorm with group > 1 is not supported")
        norm_shape = self.x.desc.shape[rank - n_axes:]
        self.gamma = None if p.gamma is None or not len(p.gamma) else \
            np.asarray(p.gamma, dtype=np.float32).reshape(norm_shape)
        self.beta = None if p.beta is None or not len(p.beta) else \
            np.asarray(p.beta, dtype=np.float32).reshape(norm_shape)
        self.algorithm = "rmsnorm" if self.rms else "layernorm"
        x, y = self.x.array, self.y.array
        n = int(np.prod(norm_shape))
        self.rows: tuple[np.ndarray, ...] | None = None
        self.compiled: tuple | None = None
        if x.flags.c_contiguous and y.flags.c_contiguous and n > 0 and x.dtype == np.float32 and jit.enabled():
            # one compiled loop per row (jit_kernels.layer_norm): 3 reads of a row in L1 instead of ~9 numpy passes
            m = x.size // n
            gamma = np.ones(n, np.float32) if self.gamma is None else self.gamma.reshape(-1)
            beta = np.zeros(n, np.float32) if self.beta is None else self.beta.reshape(-1)
            self.compiled = (jit.readonly(x.reshape(m, n)), y.reshape(m, n), jit.readonly(gamma),
                             jit.readonly(beta), np.float32(self.eps), self.rms)
            self.algorithm += "-jit"
        elif x.flags.c_contiguous and y.flags.c_contiguous and n > 0 and x.dtype == np.float32:
            m = x.size // n
            key = ("layernorm-scratch", m, n)  # [M, n] squares, shared by every LayerNorm of this shape
            square = self.backend.kernel_cache.get(key)
            if square is None:
                square = self.backend.kernel_cache[key] = np.empty((m, n), np.float32)
            self.rows = (x.reshape(m, n), y.reshape(m, n), np.full((n, 1), 1.0 / n, np.float32),
                         np.empty((m, 1), np.float32), np.empty((m, 1), np.float32), square)

    def on_execute(self) -> None:
        if self.compiled is not None:
            jit.kernels().layer_norm(*self.compiled)  # type: ignore[union-attr]
            return
        if self.rows is not None:
            self._rows(*self.rows)
            return
        x, y = self.x.array, self.y.array
        if self.rms:
            np.copyto(y, x)
        else:
            np.subtract(x, np.mean(x, axis=self.axes, keepdims=True), out=y)
        var = np.mean(np.square(y), axis=self.axes, keepdims=True)
        y /= np.sqrt(var + self.eps)
        if self.gamma is not None:
            y *= self.gamma
        if self.beta is not None:
            y += self.beta

    def _rows(self, x: np.ndarray, y: np.ndarray, inv_n: np.ndarray, mean: np.ndarray, inv: np.ndarray,
              square: np.ndarray) -> None:
        """Rows of a contiguous float32 [M, n] view, buffers prepared in on_resize: the row means as BLAS
        matrix-vector products with a 1/n column (no temporaries; ~10% faster than a per-call einsum)."""
        if self.rms:
            np.copyto(y, x)
        else:
            np.matmul(x, inv_n, out=mean)
            np.subtract(x, mean, out=y)
        np.square(y, out=square)
        np.matmul(square, inv_n, out=inv)
        inv += np.float32(self.eps)
        np.sqrt(inv, out=inv)
        np.divide(np.float32(1.0), inv, out=inv)
        y *= inv
        if self.gamma is not None:
            y *= self.gamma.reshape(-1)
        if self.beta is not None:
            y += self.beta.reshape(-1)


@cpu_kernel(OT.Scale, formats=CF)
class Scale(CPUExecution):
    """Per-channel y = x * scale + bias; vectors laid out for the packed array in on_resize."""

    def on_resize(self) -> None:
        p = self.op.main
        self.scale = channel_vector(p.scaleData, self.x)
        bias = p.biasData if p.biasData is not None and len(p.biasData) else np.zeros(len(p.scaleData))
        self.bias = channel_vector(bias, self.x)
        self.algorithm = "scale"

    def on_execute(self) -> None:
        np.multiply(self.x.array, self.scale, out=self.y.array)
        self.y.array += self.bias


@cpu_kernel(OT.GroupNorm)
class GroupNorm(CPUExecution):
    """Normalise over channel groups (and the spatial area), then per-channel gamma/beta, optional swish."""

    def on_resize(self) -> None:
        p = self.op.main
        shape = self.x.desc.shape
        self.group = int(p.group or 1)
        if len(shape) < 2 or shape[1] % self.group:
            raise ModelError(f"op {self.op.name!r}: shape {shape} does not split into {self.group} channel groups")
        self.eps = float(p.epsilon)
        bcast = (1, shape[1]) + (1,) * (len(shape) - 2)
        self.gamma = None if p.gamma is None or not len(p.gamma) else np.asarray(p.gamma, np.float32).reshape(bcast)
        self.beta = None if p.beta is None or not len(p.beta) else np.asarray(p.beta, np.float32).reshape(bcast)
        self.swish = bool(getattr(p, "bSwish", 0))
        self.algorithm = "groupnorm"

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        n = x.shape[0]
        g = x.reshape(n, self.group, -1)
        mean = g.mean(axis=-1, keepdims=True)
        var = g.var(axis=-1, keepdims=True)
        np.copyto(y.reshape(n, self.group, -1), (g - mean) / np.sqrt(var + self.eps))
        if self.gamma is not None:
            y *= self.gamma
        if self.beta is not None:
            y += self.beta
        if self.swish:
            y *= 1.0 / (1.0 + np.exp(-y))


@cpu_kernel(OT.LRN)
class LRN(CPUExecution):
    """Local response normalisation: y = x / (bias + alpha/n * sum of squares over the window)^beta.

    regionType 0 sums over `localSize` neighbouring channels (ONNX/Caffe ACROSS_CHANNELS), 1 over a
    localSize x localSize spatial window of the same channel.
    """

    def on_resize(self) -> None:
        p = self.op.main
        self.size = int(p.localSize)
        self.alpha, self.beta, self.bias = float(p.alpha), float(p.beta), float(p.bias)
        self.across = p.regionType == 0
        self.algorithm = "lrn-channels" if self.across else "lrn-spatial"

    def on_execute(self) -> None:
        x = self.x.array
        sq = np.square(x)
        n = self.size
        lo, hi = (n - 1) // 2, n - 1 - (n - 1) // 2
        if self.across:
            padded = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
            c = np.cumsum(padded, axis=1)
            c = np.concatenate([np.zeros_like(c[:, :1]), c], axis=1)
            total = c[:, n:] - c[:, :-n]
            scale = self.alpha / n
        else:
            padded = np.pad(sq, [(0, 0), (0, 0), (lo, hi), (lo, hi)])
            win = np.lib.stride_tricks.sliding_window_view(padded, (n, n), axis=(2, 3))
            total = win.sum(axis=(-1, -2))
            scale = self.alpha / (n * n)
        np.divide(x, np.power(self.bias + scale * total, self.beta), out=self.y.array)
