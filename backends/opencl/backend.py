"""OpenCL Backend: DYNAMIC tensors planned into one arena buffer (sub-buffers), STATIC tensors in their own buffers.

MNN: `OpenCLBackend` with its buffer pool. A bound tensor's `TensorRef.array` is a `CLTensor`; host arrays stay
numpy. `on_copy` converts layouts on the host, once per copy; `on_execute_end` waits for the queue once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from mnnpy.core import memory, registry
from mnnpy.core.backend import Backend, Execution, StorageType, TensorRef
from mnnpy.core.ir import NC4HW4, TensorDesc

from . import layout
from .runtime import OpenCLRuntime

SUPPORTED_DTYPES = (np.dtype(np.float32),)


class CLTensor:
    """A tensor's device memory: a buffer (an arena sub-buffer or its own) in the OpenCL layout of `desc`."""

    __slots__ = ("buffer", "desc", "elements")

    def __init__(self, buffer: Any, desc: TensorDesc) -> None:
        self.buffer = buffer
        self.desc = desc
        self.elements = layout.device_elements(desc)

    def __repr__(self) -> str:
        return f"CLTensor({self.desc.shape}, {self.desc.fmt}, {self.elements} elements)"


def opencl_kernel(*op_types: int, formats: tuple[str, ...] = ("NCHW",)) -> Any:
    """Register an OpenCL Execution class for op types: `@opencl_kernel(OpType.ReLU, formats=("NC4HW4", "NCHW"))`."""
    return registry.kernel("opencl", *op_types, formats=formats)


class OpenCLBackend(Backend):
    """Per-session OpenCL backend (MNN: `OpenCLBackend`).

    Config keys: `tuning` ("none", "fast", "normal", "wide", "heavy"; MNN's gpuMode tuning levels; default "fast"
    on GPUs and "none" on CPU devices such as PoCL, where every tried local size is one more code generation and
    the driver's choice is as good);
    `cacheFile` (a path from `Interpreter.setCacheFile`: program binaries and tuned local sizes are read from it
    when the backend is created, and written by `update_cache`).
    """

    name = "opencl"
    runtime: OpenCLRuntime

    def __init__(self, runtime: OpenCLRuntime, config: dict[str, Any] | None = None) -> None:
        super().__init__(runtime, config)
        registry.import_all("mnnpy.backends.opencl.ops")
        is_gpu = bool(runtime.device.type & cl.device_type.GPU)
        self.tune_level = str(self.config.get("tuning", "fast" if is_gpu else "none"))
        self.align = max(memory.ALIGN, runtime.device.mem_base_addr_align // 8)
        self._planner = memory.ArenaPlanner()
        self._chunks: dict[int, tuple[TensorRef, memory.Chunk]] = {}
        self._arena: Any = None
        self._arena_bytes = 0
        self.static_bytes = 0
        self.cache_file = self.config.get("cacheFile")
        if self.cache_file and runtime.cache_path != str(self.cache_file):
            runtime.load_cache(self.cache_file)

    def update_cache(self, path: str | None = None) -> bool:
        """Write the runtime's program binaries and tuned sizes to the cache file (MNN: `updateCacheFile`)."""
        target = path or self.cache_file
        if not target:
            return False
        self.runtime.save_cache(target)
        return True

    @property
    def queue(self) -> Any:
        """The runtime's command queue."""
        return self.runtime.queue

    def on_create(self, op_type: int, op: Any, inputs: Sequence[TensorRef],
                  outputs: Sequence[TensorRef]) -> Execution | None:
        entry = self.kernel(op_type)
        if entry is None:
            return None
        cls: Any = entry.cls
        checked = [t for k, t in enumerate(inputs) if k not in cls.value_inputs] + list(outputs)
        dtypes_ok = all(t.desc.dtype in cls.dtypes for t in checked)
        if not dtypes_ok or not cls.supports(op, list(inputs), list(outputs)):
            return None
        return cls(self, op, inputs, outputs)

    # *** memory ***

    def _bytes(self, desc: TensorDesc) -> int:
        size = layout.device_elements(desc) * desc.dtype.itemsize
        return -(-size // self.align) * self.align  # every chunk a multiple of the sub-buffer alignment

    def on_resize_begin(self) -> None:
        self._planner = memory.ArenaPlanner()
        self._chunks = {}
        self.static_bytes = 0

    def on_acquire(self, tensor: TensorRef, storage: StorageType) -> None:
        if storage == StorageType.STATIC:
            host = tensor.array if isinstance(tensor.array, np.ndarray) else None
            buffer = cl.Buffer(self.runtime.context, cl.mem_flags.READ_WRITE, self._bytes(tensor.desc))
            tensor.array = CLTensor(buffer, tensor.desc)
            self.static_bytes += self._bytes(tensor.desc)
            if host is not None:
                self.upload(tensor.array, layout.host_logical(host, tensor.desc))
            return
        self._chunks[tensor.index] = (tensor, self._planner.acquire(self._bytes(tensor.desc)))

    def on_release(self, tensor: TensorRef, storage: StorageType) -> None:
        item = self._chunks.get(tensor.index)
        if item is not None and storage != StorageType.DYNAMIC_SEPARATE:
            self._planner.release(item[1])

    def on_resize_end(self) -> None:
        need = max(self._planner.peak, self.align)
        if self._arena is None or self._arena_bytes < need:
            self._arena = cl.Buffer(self.runtime.context, cl.mem_flags.READ_WRITE, need)
            self._arena_bytes = need
        for ref, chunk in self._chunks.values():
            sub = self._arena.get_sub_region(chunk.offset, chunk.size)
            ref.array = CLTensor(sub, ref.desc)

    def on_clear(self) -> None:
        self._arena = None
        self._arena_bytes = 0
        self._chunks = {}

    def memory_info(self) -> dict[str, Any]:
        return {"arena_bytes": self._planner.peak, "tensor_bytes": self._planner.requested,
                "static_bytes": self.static_bytes, "formats": NC4HW4, "device": self.runtime.device.name}

    # *** copies ***

    def upload(self, dst: CLTensor, logical: np.ndarray) -> None:
        """Write a logical value into a device tensor (layout converted on the host)."""
        flat = layout.to_device(logical, dst.desc)
        cl.enqueue_copy(self.queue, dst.buffer, flat, is_blocking=True)

    def read_physical(self, src: CLTensor) -> np.ndarray:
        """A device tensor's buffer contents in its OpenCL layout (waits for the queue)."""
        flat = np.empty(src.elements, dtype=src.desc.dtype)
        cl.enqueue_copy(self.queue, flat, src.buffer, is_blocking=True)
        return flat

    def download(self, src: CLTensor) -> np.ndarray:
        """The logical value of a device tensor (waits for the queue)."""
        return layout.from_device(self.read_physical(src), src.desc)

    def on_copy(self, src: TensorRef, dst: TensorRef) -> None:
        src_dev, dst_dev = isinstance(src.array, CLTensor), isinstance(dst.array, CLTensor)
        if src_dev and dst_dev and src.desc == dst.desc:
            nbytes = src.array.elements * src.desc.dtype.itemsize
            cl.enqueue_copy(self.queue, dst.array.buffer, src.array.buffer, byte_count=nbytes)
            return
        value = self.download(src.array) if src_dev else layout.host_logical(src.array, src.desc)
        value = layout.reorder(value, src.desc, dst.desc).astype(dst.desc.dtype, copy=False)
        if dst_dev:
            self.upload(dst.array, value)
        else:
            layout.host_store(dst.array, dst.desc, value)

    # *** runs ***

    def on_execute_end(self) -> None:
        self.queue.finish()
