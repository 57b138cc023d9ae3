"""Base class of OpenCL executions: `encode` (in on_resize) builds kernels, sets arguments once and tunes local
sizes; `on_execute` only enqueues the recorded launches (MNN: `CommonExecution::onEncode` / `onExecute`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes

from mnnpy.core.backend import Execution, TensorRef
from mnnpy.core.ir import NC4HW4, PACK

from . import layout
from .backend import SUPPORTED_DTYPES, CLTensor, OpenCLBackend
from .tuning import round_up

FMT_PLAIN, FMT_NC4HW4 = 0, 1


def int4(a: int = 0, b: int = 0, c: int = 0, d: int = 0) -> np.ndarray:
    """An OpenCL `int4` kernel argument."""
    return cltypes.make_int4(int(a), int(b), int(c), int(d))


def tensor_desc(ref: TensorRef) -> np.ndarray:
    """The `int4` (format, N, C, area) that `common.cl`'s `phys_index` maps logical indices with."""
    n, c, area = layout.nc_area(ref.desc.shape)
    return int4(FMT_NC4HW4 if ref.desc.fmt == NC4HW4 else FMT_PLAIN, n, c, area)


def has_channel_tail(ref: TensorRef) -> bool:
    """Whether an NC4HW4 tensor has padded channel lanes that must stay zero."""
    return ref.desc.fmt == NC4HW4 and layout.nc_area(ref.desc.shape)[1] % PACK != 0


class CLExecution(Execution):
    """An execution as a list of recorded kernel launches.

    Class attributes:
        dtypes: element types the execution accepts (others make `on_create` return None).
        value_inputs: input positions read only as constant host values at resize time (axes, scales): their
            dtype is not checked and they need no device buffer.
    """

    dtypes: ClassVar[tuple[np.dtype, ...]] = SUPPORTED_DTYPES
    value_inputs: ClassVar[tuple[int, ...]] = ()
    backend: OpenCLBackend

    def __init__(self, backend: OpenCLBackend, op: Any, inputs: Sequence[TensorRef],
                 outputs: Sequence[TensorRef]) -> None:
        super().__init__(backend, op, inputs, outputs)
        self.launches: list[tuple[Any, tuple[int, ...], tuple[int, ...] | None]] = []
        self.fills: list[tuple[Any, int]] = []
        self.statics: list[Any] = []
        self._uploaded: dict[int, Any] = {}

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        """Whether this execution can run the op with these tensors (False: on_create returns None)."""
        return True

    def buf(self, ref: TensorRef) -> Any:
        """The device buffer of a tensor; a host constant (weights, folded values) is uploaded once per resize."""
        array = ref.array
        if isinstance(array, CLTensor):
            return array.buffer
        if isinstance(array, np.ndarray) and ref.const:
            key = id(ref)
            if key not in self._uploaded:
                flat = layout.to_device(layout.host_logical(array, ref.desc), ref.desc)
                self._uploaded[key] = self.constant(flat)
            return self._uploaded[key]
        raise TypeError(f"{ref!r} is not bound to an OpenCL buffer")

    def constant(self, values: np.ndarray) -> Any:
        """A read-only device buffer holding host values (weights, index tables), made in on_resize."""
        data = np.ascontiguousarray(values)
        if data.size == 0:
            data = np.zeros(1, dtype=data.dtype)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        buffer = cl.Buffer(self.backend.runtime.context, flags, hostbuf=data)
        self.statics.append(buffer)
        return buffer

    def fill_zero(self, ref: TensorRef) -> None:
        """Record a zero fill of a whole output before the kernels (regions not full, or channel tails)."""
        nbytes = layout.device_elements(ref.desc) * ref.desc.dtype.itemsize
        self.fills.append((self.buf(ref), nbytes))

    def launch(self, program: str, kernel: str, args: Sequence[Any], gws: Sequence[int], key: str = "",
               options: str = "") -> None:
        """Build (cached) a kernel, set its arguments once, tune its local size and record the launch."""
        runtime = self.backend.runtime
        k = runtime.kernel(program, kernel, options)
        k.set_args(*args)
        gws = tuple(max(int(g), 1) for g in gws)
        shapes = ";".join(str(t.desc.shape) for t in (*self.inputs, *self.outputs))
        lws = runtime.local_size(k, gws, f"{program}.{kernel}|{options}|{key}|{shapes}", self.backend.tune_level)
        lws_t = None if lws is None else tuple(lws)
        self.launches.append((k, round_up(gws, lws_t), lws_t))

    def on_resize(self) -> None:
        self.launches = []
        self.fills = []
        self.statics = []
        self._uploaded = {}
        self.encode()

    def encode(self) -> None:
        """Record the launches for the bound tensors (subclasses)."""
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        """Algorithm plus each recorded launch: kernel name, global and tuned local size."""
        launches = [{"kernel": k.function_name, "global": list(g), "local": None if lv is None else list(lv)}
                    for k, g, lv in self.launches]
        return {**super().info(), "launches": launches}

    def on_execute(self) -> None:
        queue = self.backend.queue
        zero = np.float32(0)
        for buffer, nbytes in self.fills:
            cl.enqueue_fill_buffer(queue, buffer, zero, 0, nbytes)
        for kernel, gws, lws in self.launches:
            cl.enqueue_nd_range_kernel(queue, kernel, gws, lws)
        self.backend.runtime.counters["enqueues"] += len(self.launches) + len(self.fills)
