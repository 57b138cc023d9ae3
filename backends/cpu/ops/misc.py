"""Cast, GatherV2 (runtime indices), Select/Where, Fill, ZerosLike, Range, Padding (reflect/edge/value),
ReverseSequence and Unique."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.layout import logical, store
from mnnpy.backends.cpu.ops._common import CF, CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape._util import ints
from mnnpy.core.shape.tensor_ops import gather_axis

OT = fb.OpType


@cpu_kernel(OT.Cast, formats=CF)
class Cast(CPUExecution):
    """dtype conversion of the physical array (float -> int truncates, as C does)."""

    algorithm = "cast"

    def on_execute(self) -> None:
        np.copyto(self.y.array, self.x.array, casting="unsafe")


@cpu_kernel(OT.GatherV2, OT.Gather)
class GatherV2(CPUExecution):
    """np.take along an axis with runtime indices (negative indices wrap)."""

    def on_resize(self) -> None:
        values = [None, None, self.inputs[2].array if len(self.inputs) > 2 else None]
        self.axis = gather_axis(self.op, self.x.desc, values)
        self.dim = self.x.desc.shape[self.axis]
        self.algorithm = "take"

    def on_execute(self) -> None:
        idx = self.inputs[1].array
        idx = np.where(idx < 0, idx + self.dim, idx)
        np.take(self.x.array, idx, axis=self.axis, out=self.y.array)


@cpu_kernel(OT.Select, OT.Where)
class Select(CPUExecution):
    """y = cond ? a : b with broadcasting; Where with one input (TF's where): the int32 coordinates of the
    non-zero elements of cond, [count, rank] in row-major order. Its output shape comes from cond's value, so it
    runs where that value is known while the shapes are computed: in constant folding or between a Module's
    segments (`mnnpy.nn.module`)."""

    algorithm = "where"

    def on_execute(self) -> None:
        if len(self.inputs) == 1:
            store(self.y, np.argwhere(logical(self.x) != 0))
            return
        c, a, b = (logical(r) for r in self.inputs)
        store(self.y, np.where(c != 0, a, b))


@cpu_kernel(OT.Fill, OT.ZerosLike)
class Fill(CPUExecution):
    """Fill (shape, value) and ZerosLike."""

    algorithm = "fill"

    def on_execute(self) -> None:
        value = 0 if self.op.type == OT.ZerosLike else self.inputs[1].array
        self.y.array[...] = value


@cpu_kernel(OT.Range)
class Range(CPUExecution):
    """np.arange(start, limit, delta) into the output."""

    algorithm = "arange"

    def on_execute(self) -> None:
        start, limit, delta = (np.asarray(r.array).ravel()[0] for r in self.inputs[:3])
        np.copyto(self.y.array, np.arange(start, limit, delta)[: self.y.desc.size], casting="unsafe")


@cpu_kernel(OT.Padding)
class Padding(CPUExecution):
    """np.pad for CONSTANT (any value), REFLECT, SYMMETRIC and EDGE; negative pads crop."""

    def on_resize(self) -> None:
        pads = ints(self.inputs[1].array)
        self.widths = [(max(pads[2 * i], 0), max(pads[2 * i + 1], 0)) for i in range(len(self.x.desc.shape))]
        self.crop = tuple(slice(max(-pads[2 * i], 0), d + max(pads[2 * i], 0) + max(pads[2 * i + 1], 0)
                                - max(-pads[2 * i + 1], 0))
                          for i, d in enumerate(self.x.desc.shape))
        mode = self.op.main.mode if self.op.main is not None else 0
        self.mode = {0: "constant", 1: "reflect", 2: "symmetric", 3: "edge"}[mode]
        self.algorithm = f"pad-{self.mode}"

    def on_execute(self) -> None:
        x = self.x.array
        if self.mode == "constant":
            value = self.inputs[2].array if len(self.inputs) > 2 else 0
            fill = np.asarray(value).ravel()[0] if np.size(value) else 0
            padded = np.pad(x, self.widths, mode="constant", constant_values=fill)
        else:
            padded = np.pad(x, self.widths, mode=self.mode)  # type: ignore[call-overload]
        np.copyto(self.y.array, padded[self.crop])


@cpu_kernel(OT.SliceTf)
class SliceTf(CPUExecution):
    """SliceTf whose begin is only known at run time (geometry handles the constant case)."""

    algorithm = "slice"

    def on_execute(self) -> None:
        begin = np.asarray(self.inputs[1].array).ravel()
        dims = self.x.desc.shape
        index = tuple(slice(int(b) + (d if b < 0 else 0), int(b) + (d if b < 0 else 0) + n)
                      for b, d, n in zip(begin, dims, self.y.desc.shape, strict=False))
        np.copyto(self.y.array, self.x.array[index])


@cpu_kernel(OT.ReverseSequence)
class ReverseSequence(CPUExecution):
    """y = x, then for each batch entry b the first lengths[b] steps along the sequence axis reversed (MNN:
    CPUReverseSequence; ONNX ReverseSequence, TF reverse_sequence)."""

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        p = self.op.main
        batch_axis, seq_axis = p.batchDim % x.ndim, p.seqDim % x.ndim
        steps = x.shape[seq_axis]
        np.copyto(y, x)
        for b, n in enumerate(np.asarray(self.inputs[1].array).reshape(-1).tolist()):
            if not 0 <= n <= steps:
                raise ModelError(f"op {self.op.name!r} (ReverseSequence): length {n} of batch entry {b} is outside "
                                 f"[0, {steps}]")
            index = [slice(None)] * x.ndim
            index[batch_axis], index[seq_axis] = slice(b, b + 1), slice(0, n)
            y[tuple(index)] = np.flip(x[tuple(index)], axis=seq_axis)


@cpu_kernel(OT.Unique)
class Unique(CPUExecution):
    """The sorted unique values of the flattened input, with first indices, inverse indices and counts (MNN's
    CPUUnique with ONNX's four outputs). Its output shape comes from the values: it runs where they are known
    while shapes are computed (constant folding, or between a Module's segments)."""

    algorithm = "unique"

    def on_execute(self) -> None:
        parts = np.unique(logical(self.x).reshape(-1), return_index=True, return_inverse=True, return_counts=True)
        for ref, value in zip(self.outputs, parts, strict=False):
            store(ref, value.reshape(-1))
