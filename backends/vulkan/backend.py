"""Vulkan Backend: planned device memory, one pre-recorded command buffer per run, one submit per run.

MNN: `VulkanBackend` with `MNN_GPU_RECORD_BATCH` (all ops share one command buffer). Lifecycle per resize:
`on_resize_begin` (forget the old plan) -> `on_acquire`/`on_release` (DYNAMIC tensors planned into one arena
buffer, STATIC ones get their own buffers at once) -> `on_resize_end` (arena allocated, arrays bound) ->
`Execution.on_resize` (pipelines and dispatches, appended to the dispatch list in command order) ->
`on_resize_done` records (see `recording.py`: one secondary command buffer per execution, reused across resizes
while its pipelines, bound ranges, push constants and group counts stay the same; a primary per range).
A run: `on_execute_begin` -> each `Execution.on_execute` only moves the cursor -> `on_execute_end` submits the
recorded primary and waits on the fence (counters `records`, `executions_recorded` and `pipelines_created` do not
move on later runs). If a host copy (`on_copy`, e.g. around a CPU fallback op) happens mid-run, the dispatches up
to the cursor are submitted first; each range gets its own primary, also reused.
What keeps bindings stable across resizes: session inputs/outputs (DYNAMIC_SEPARATE) get their own buffers, kept
per tensor while they fit; the arena is kept while it fits; constants and index tables are uploaded once per
content (`uploads` counter), packed weights once per op.

Mixed sessions (some ops fell back to the CPU backup): the schedule inserts Copy commands that call `on_copy`,
which first submits the dispatches due so far, so a run costs one submit per Vulkan segment. Safety net: if an
execution is ever handed a non-constant tensor owned by another backend, it binds a device mirror refreshed from
the host in its `on_execute`, and the backend turns *eager* (each execution submits its own pre-recorded range).
Constant inputs (weights, folded values) are uploaded once per content and kept while used.

Feature maps are NC4HW4 as `[N][ceil(C/4)][H*W][4]` (same as the CPU backend and `TensorDesc.physical_shape`).
With `precision='low'` (and 16-bit storage on the device) tensors are stored as float16: shaders with an `_fp16a`
variant compute in float16 when the device has shaderFloat16 (products and elementwise math in float16, long sums
in fp32), the others run their `_fp16` variant (convert on load/store, fp32 math); weights stay fp32 in storage.
Tensor arrays are then float16 views and `on_copy` converts.
"""

from __future__ import annotations

import hashlib
import math
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import vulkan as vk
from mnnpy.backends.vulkan import layout
from mnnpy.backends.vulkan.memory import DeviceBuffer
from mnnpy.backends.vulkan.pipeline import DescriptorAllocator, Pipeline, has_shader
from mnnpy.backends.vulkan.recording import Recorder
from mnnpy.backends.vulkan.runtime import COUNTERS

from mnnpy.core import memory
from mnnpy.core.backend import Backend, Execution, Runtime, StorageType, TensorRef


@dataclass(frozen=True)
class Binding:
    """A byte range of a device buffer bound to one shader binding (at least 16 bytes: empty tensors still bind)."""

    buffer: DeviceBuffer
    offset: int
    nbytes: int

    def overlaps(self, other: Binding) -> bool:
        """Whether two ranges share bytes of the same buffer."""
        return (self.buffer is other.buffer and self.offset < other.offset + other.nbytes
                and other.offset < self.offset + self.nbytes)


@dataclass
class Dispatch:
    """One compute dispatch (pipeline, push constants, group count, bound ranges: reads then writes)."""

    pipeline: Pipeline
    push: bytes
    groups: int
    reads: list[Binding] = field(default_factory=list)
    writes: list[Binding] = field(default_factory=list)


class VulkanBackend(Backend):
    """Per-session Vulkan backend (see the module docstring for the lifecycle)."""

    name = "vulkan"

    def __init__(self, runtime: Runtime, config: dict[str, Any] | None = None) -> None:
        super().__init__(runtime, config)
        self.vdev = runtime.device
        self.descriptors = DescriptorAllocator(self.vdev.device, COUNTERS)
        self._planner = memory.ArenaPlanner()
        self._chunks: dict[int, tuple[TensorRef, memory.Chunk]] = {}
        self._arena: DeviceBuffer | None = None
        self._bindings: dict[int, Binding] = {}
        self._static: list[DeviceBuffer] = []
        self.dispatches: list[Dispatch] = []
        self.bounds: list[tuple[int, int]] = []  # each execution's dispatch range, in command order
        self.recorder = Recorder(self.vdev, self.descriptors, COUNTERS)
        self._ranges: dict[tuple[int, int], Any] = {}  # (start, end) -> primary, for this plan
        self._separate: dict[int, DeviceBuffer] = {}
        self._separate_used: set[int] = set()
        self._uploads: dict[tuple, Binding] = {}
        self._uploads_used: set[tuple] = set()
        self._cursor = 0
        self._done = 0
        self._const: dict[int, Binding] = {}
        self._weights: dict[tuple[int, str], tuple[Any, Binding]] = {}
        self._weights_used: set[tuple[int, str]] = set()
        self.eager = False
        low = str(self.config.get("precision", "normal")).lower() == "low"
        self.fp16 = low and bool(getattr(self.vdev, "fp16_storage", False))
        self.fp16_math = self.fp16 and bool(getattr(self.vdev, "fp16_math", False))
        self.tensor_dtype = np.dtype(np.float16 if self.fp16 else np.float32)
        if self.vdev.limits.min_storage_alignment > memory.ALIGN:
            raise ValueError(f"device needs {self.vdev.limits.min_storage_alignment}-byte storage offsets")

    def variant(self, shader: str) -> str:
        """The SPIR-V to run: `_fp16a` (float16 arithmetic) where the shader has it and the device has shaderFloat16,
        else `_fp16` (16-bit storage, fp32 math) for precision='low', else the fp32 shader."""
        if self.fp16_math and has_shader(f"{shader}_fp16a"):
            return f"{shader}_fp16a"
        return f"{shader}_fp16" if self.fp16 else shader

    # ---- creation --------------------------------------------------------------------------------------------
    def on_create(self, op_type: int, op: Any, inputs: Sequence[TensorRef],
                  outputs: Sequence[TensorRef]) -> Execution | None:
        entry = self.kernel(op_type)
        if (entry is None or not entry.cls.dtypes_ok(inputs, outputs)
                or any(self.storage_bytes(t) > self.vdev.limits.max_storage_range for t in (*inputs, *outputs))
                or not entry.cls.supports(op, inputs, outputs)):
            return None
        return entry.cls(self, op, inputs, outputs)

    # ---- memory ----------------------------------------------------------------------------------------------
    def on_resize_begin(self) -> None:
        self._planner = memory.ArenaPlanner()
        self._chunks = {}
        self._bindings = {}
        self._const = {}
        self._static = []
        self._weights = {k: v for k, v in self._weights.items() if k in self._weights_used}  # drop stale ops' data
        self._weights_used = set()
        self._uploads = {k: v for k, v in self._uploads.items() if k in self._uploads_used}
        self._uploads_used = set()
        self._separate_used = set()
        vk.vkDeviceWaitIdle(self.vdev.device)
        self.dispatches, self.bounds, self._ranges = [], [], {}
        self._cursor = self._done = 0

    def storage_dtype(self, tensor: TensorRef) -> np.dtype:
        """Element type of a tensor on the device: float32 tensors use `tensor_dtype`, other types stay as they are."""
        return self.tensor_dtype if tensor.desc.dtype == np.float32 else tensor.desc.dtype

    def storage_bytes(self, tensor: TensorRef) -> int:
        """Bytes a tensor occupies on the device (halved for float16 storage)."""
        return math.prod(tensor.desc.physical_shape) * self.storage_dtype(tensor).itemsize

    def on_acquire(self, tensor: TensorRef, storage: StorageType) -> None:
        nbytes = self.storage_bytes(tensor)
        if storage == StorageType.DYNAMIC_SEPARATE and tensor.index >= 0:  # session inputs/outputs: own buffers
            buf = self._separate.get(tensor.index)
            if buf is None or buf.size < nbytes:
                buf = self._separate[tensor.index] = DeviceBuffer(self.vdev, nbytes, COUNTERS)
            self._separate_used.add(tensor.index)
            self._bindings[tensor.index] = Binding(buf, 0, max(nbytes, 16))
            tensor.array = buf.array(0, self.storage_dtype(tensor), tensor.desc.physical_shape)
            return
        if storage == StorageType.STATIC:
            buf = DeviceBuffer(self.vdev, nbytes, COUNTERS)
            self._static.append(buf)
            self._bindings[tensor.index] = Binding(buf, 0, max(nbytes, 16))
            tensor.array = buf.array(0, self.storage_dtype(tensor), tensor.desc.physical_shape)
            return
        self._chunks[tensor.index] = (tensor, self._planner.acquire(nbytes))

    def on_release(self, tensor: TensorRef, storage: StorageType) -> None:
        item = self._chunks.get(tensor.index)
        if item is not None and storage != StorageType.DYNAMIC_SEPARATE:
            self._planner.release(item[1])

    def on_resize_end(self) -> None:
        need = self._planner.peak
        if self._arena is None or self._arena.size < need:
            self._arena = DeviceBuffer(self.vdev, need, COUNTERS)
        for ref, chunk in self._chunks.values():
            self._bindings[ref.index] = Binding(self._arena, chunk.offset, max(self.storage_bytes(ref), 16))
            ref.array = self._arena.array(chunk.offset, self.storage_dtype(ref), ref.desc.physical_shape)
        self._separate = {k: v for k, v in self._separate.items() if k in self._separate_used}
        self.eager = False

    def on_clear(self) -> None:
        vk.vkDeviceWaitIdle(self.vdev.device)
        self.recorder.clear()
        self.dispatches, self.bounds, self._ranges = [], [], {}
        self._cursor = self._done = 0
        self._arena = None
        self._chunks = {}
        self._weights = {}
        self._uploads = {}
        self._separate = {}

    def __del__(self) -> None:
        if not sys.is_finalizing() and hasattr(self, "recorder"):
            self.recorder.clear()

    def binding(self, tensor: TensorRef) -> tuple[Binding, bool]:
        """The device range holding a tensor, and whether it is a mirror of another backend's tensor.

        Tensors acquired here are bound in place; constants are uploaded once per resize; anything else gets a
        device mirror that the reading execution refreshes from the host before it runs (and the backend turns
        eager, see the module docstring).
        """
        found = self._bindings.get(tensor.index)
        if found is not None:
            return found, False
        if tensor.const and tensor.array is not None:
            if tensor.index not in self._const:
                value = np.asarray(tensor.array).reshape(tensor.desc.physical_shape)
                self._const[tensor.index] = self.upload_constant(value, self.storage_dtype(tensor))
            return self._const[tensor.index], False
        self.eager = True
        buf = DeviceBuffer(self.vdev, self.storage_bytes(tensor), COUNTERS)
        self._static.append(buf)
        return Binding(buf, 0, max(self.storage_bytes(tensor), 16)), True

    def upload(self, array: np.ndarray, dtype: Any = None) -> Binding:
        """A new device buffer holding `array` (float32 unless `dtype`; int32 stays int32), alive while the returned
        Binding is (callers keep it: `upload_constant` and `cached_upload` in their caches)."""
        if dtype is None:
            dtype = np.int32 if np.asarray(array).dtype.kind in "iu" else np.float32
        data = np.ascontiguousarray(array, dtype=dtype)
        buf = DeviceBuffer(self.vdev, data.nbytes, COUNTERS)
        view = buf.array(0, dtype, data.shape)
        view[...] = data
        del view
        COUNTERS["uploads"] += 1
        return Binding(buf, 0, max(data.nbytes, 16))

    def upload_constant(self, array: np.ndarray, dtype: Any = None) -> Binding:
        """Like `upload`, but one device copy per content (kept across resizes while used): for read-only data."""
        data = np.ascontiguousarray(array, dtype=dtype if dtype is not None else
                                    np.int32 if np.asarray(array).dtype.kind in "iu" else np.float32)
        key = (data.dtype.str, data.shape, hashlib.blake2b(memoryview(data).cast("B"), digest_size=16).digest())
        self._uploads_used.add(key)
        found = self._uploads.get(key)
        if found is None:
            found = self._uploads[key] = self.upload(data, data.dtype)
        return found

    def scratch(self, nbytes: int) -> Binding:
        """A private device buffer of `nbytes` (work memory of an execution run outside a planned schedule)."""
        buf = DeviceBuffer(self.vdev, nbytes, COUNTERS)
        self._static.append(buf)
        return Binding(buf, 0, max(nbytes, 16))

    def cached_upload(self, owner: Any, tag: str, make: Callable[[], np.ndarray]) -> Binding:
        """Upload `make()` once per (owner object, tag), e.g. packed weights of an op, reused across resizes."""
        key = (id(owner), tag)
        self._weights_used.add(key)
        hit = self._weights.get(key)
        if hit is not None and hit[0] is owner:
            return hit[1]
        binding = self.upload(make())
        self._weights[key] = (owner, binding)
        return binding

    def memory_info(self) -> dict[str, Any]:
        static = (sum(b.size for b in self._static) + sum(b.nbytes for _, b in self._weights.values())
                  + sum(b.nbytes for b in self._uploads.values()))
        return {"arena_bytes": self._planner.peak, "tensor_bytes": self._planner.requested,
                "static_bytes": static, "io_bytes": sum(b.size for b in self._separate.values()),
                "formats": "NC4HW4 [N][C/4][HW][4]",
                "device": self.vdev.limits.name, "dispatches": len(self.dispatches)}

    # ---- recording and running -------------------------------------------------------------------------------
    def add_dispatch(self, pipe: Pipeline, reads: Sequence[Binding], writes: Sequence[Binding], push: bytes,
                     items: int) -> int:
        """Prepare one dispatch; returns its end position in the dispatch list."""
        if len(push) != pipe.push_bytes:
            raise ValueError(f"{pipe.name}: push constants are {len(push)} bytes, pipeline expects {pipe.push_bytes}")
        groups = self.vdev.group_count(items, pipe.local_size)
        self.dispatches.append(Dispatch(pipe, push, groups, list(reads), list(writes)))
        return len(self.dispatches)

    def seal(self, start: int) -> int:
        """End an execution's dispatch range (begun at `start`); returns its end (the cursor its run moves to)."""
        end = len(self.dispatches)
        if end > start:
            self.bounds.append((start, end))
        return end

    def _primary(self, start: int, end: int) -> Any:
        cb = self._ranges.get((start, end))
        if cb is None:
            inside = [(s, e) for s, e in self.bounds if s >= start and e <= end]
            cb = self._ranges[(start, end)] = self.recorder.primary(self.dispatches, inside)
        return cb

    def on_resize_done(self) -> None:
        """Pre-inference recording (called by the schedule after every `Execution.on_resize`): the whole-session
        primary, from secondaries kept from the last plan where nothing changed; stale recordings are freed."""
        self.recorder.keep(self.dispatches, self.bounds)
        if self.dispatches:
            self._primary(0, len(self.dispatches))

    def advance(self, end: int) -> None:
        """Mark the dispatches before `end` as due (called by `Execution.on_execute`; launches nothing unless eager)."""
        self._cursor = max(self._cursor, end)
        if self.eager:
            self.flush()

    def flush(self) -> None:
        """Submit the due dispatches not yet run (one command buffer, recorded once per range) and wait."""
        start, end = self._done, self._cursor
        if end <= start:
            return
        self.vdev.submit(self._primary(start, end))
        self._done = end

    def on_execute_begin(self) -> None:
        self._cursor = self._done = 0

    def on_execute_end(self) -> None:
        self.flush()

    def on_copy(self, src: TensorRef, dst: TensorRef) -> None:
        self.flush()
        layout.copy(src.desc, src.array, dst.desc, dst.array)


def pack_push(fmt: str, *values: float) -> bytes:
    """Push-constant bytes (little-endian struct format, e.g. 'iiiiff')."""
    return struct.pack("<" + fmt, *values)
