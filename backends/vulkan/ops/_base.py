"""Base class of the Vulkan executions: `on_resize` prepares dispatches, `on_execute` only moves the cursor."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.backend import Binding, VulkanBackend, pack_push

from mnnpy.core import registry
from mnnpy.core.backend import Execution, TensorRef

FLT_MAX = 3.402823e38


def vulkan_kernel(*op_types: int, formats: tuple[str, ...] = ("NCHW",)) -> Callable[[type], type]:
    """Register a Vulkan Execution class for op types (MNN: `VulkanBackend::addCreator`)."""
    return registry.kernel("vulkan", *op_types, formats=formats)


class VulkanExecution(Execution):
    """An op as a list of dispatches, prepared once per shape.

    Subclasses implement `encode()` (called from `on_resize`, arrays bound), calling `dispatch` per shader launch,
    and may override the classmethod `supports` to refuse parameters they cannot run (on_create then gives None).
    """

    backend: VulkanBackend

    def __init__(self, backend: VulkanBackend, op: Any, inputs: Sequence[TensorRef],
                 outputs: Sequence[TensorRef]) -> None:
        super().__init__(backend, op, inputs, outputs)
        self._end = 0
        self.weights: list[Binding] = []
        self.imports: list[tuple[TensorRef, np.ndarray]] = []
        self.launches: list[tuple[str, int]] = []  # (pipeline name, work groups) per dispatch, for info()

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        """Whether this execution can run the op with these tensors."""
        return True

    @classmethod
    def dtypes_ok(cls, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        """Element types accepted: float32 only, unless an op overrides this (Gather, ArgMax, Cast)."""
        return all(t.desc.dtype == np.float32 for t in (*inputs, *outputs))

    def encode(self) -> None:
        """Prepare the dispatches (override)."""
        raise NotImplementedError

    def on_resize(self) -> None:
        self.imports = []
        self.weights = []
        self.launches = []
        start = len(self.backend.dispatches)
        self.encode()
        self._end = self.backend.seal(start)

    def info(self) -> dict[str, Any]:
        """Algorithm plus the prepared launches (shader variant and work-group count of each dispatch)."""
        return {**super().info(), "dispatches": [f"{name} x{groups}" for name, groups in self.launches]}

    def on_execute(self) -> None:
        for ref, mirror in self.imports:
            np.copyto(mirror, np.asarray(ref.array).reshape(mirror.shape), casting="unsafe")
        self.backend.advance(self._end)

    def dispatch(self, shader: str, reads: Sequence[Binding], writes: Sequence[Binding], push_fmt: str,
                 push_values: Sequence[float], items: int, spec: tuple[int, ...] = ()) -> None:
        """Prepare one launch of `shader` over `items` invocations (grid-stride loops cover the rest); `spec` are
        the shader's int specialization constants 1, 2, ..."""
        push = pack_push(push_fmt, *push_values)
        vdev = self.backend.vdev
        name = self.backend.variant(shader)
        pipe = vdev.pipelines.get(name, len(reads) + len(writes), len(push), vdev.group_size(), spec)
        self.backend.add_dispatch(pipe, reads, writes, push, items)
        self.launches.append((name, self.backend.dispatches[-1].groups))

    def upload(self, array: np.ndarray, dtype: Any = None) -> Binding:
        """Read-only device copy of a table (one per content, kept across resizes); float32 unless `dtype` is given."""
        binding = self.backend.upload_constant(array, dtype)
        self.weights.append(binding)
        return binding

    def upload_once(self, tag: str, make: Callable[[], np.ndarray]) -> Binding:
        """Device copy of data derived from the op's parameters only (packed weights), kept across resizes."""
        return self.backend.cached_upload(self.op, tag, make)

    def bind(self, tensor: TensorRef) -> Binding:
        """The device range of an input or output tensor (foreign inputs get a mirror refreshed in on_execute)."""
        binding, mirrored = self.backend.binding(tensor)
        if mirrored:
            shape = tensor.desc.physical_shape
            self.imports.append((tensor, binding.buffer.array(binding.offset, tensor.desc.dtype, shape)))
        return binding


def max_binding_bytes() -> int:
    """The device's maxStorageBufferRange: the largest buffer range one shader binding may cover."""
    from mnnpy.backends.vulkan.runtime import VulkanRuntime

    shared = VulkanRuntime._shared
    return shared.limits.max_storage_range if shared is not None else 128 << 20


def op_param(op: Any) -> Any:
    """The op's parameter table (`fb.OpT.main`), or None."""
    return getattr(op, "main", None)
