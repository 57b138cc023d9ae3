"""CPU Runtime and Backend: one arena per session, ops discovered from `ops/` by decorator."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mnnpy.backends.cpu import layout
from mnnpy.backends.cpu.compute import procs

from mnnpy.core import memory, registry
from mnnpy.core.backend import Backend, Execution, Runtime, StorageType, TensorRef
from mnnpy.core.ir import NC4HW4

STATS: dict[str, int] = {"static_allocations": 0}


class CPURuntime(Runtime):
    """The numpy runtime (MNN: CPURuntime); `numThread` is the kernels' lane count (BLAS held at 1 thread)."""

    name = "cpu"

    def create_backend(self, config: dict[str, Any] | None = None) -> Backend:
        registry.import_all("mnnpy.backends.cpu.ops")
        return CPUBackend(self, config)


class CPUBackend(Backend):
    """Plans DYNAMIC tensors into one 64-byte-aligned arena; STATIC tensors get their own arrays."""

    name = "cpu"

    def __init__(self, runtime: Runtime, config: dict[str, Any] | None = None) -> None:
        super().__init__(runtime, config)
        self.threads = int(self.config.get("numThread", 1) or 1)
        self._planner = memory.ArenaPlanner()
        self._chunks: dict[int, tuple[TensorRef, memory.Chunk]] = {}
        self._arena: np.ndarray | None = None
        self._base = 0
        self.static_bytes = 0
        self.kernel_cache: dict = {}  # prepared weights per (op, input shape, ...): a same-shape resize reuses them
        # numThread > 1: lanes as forked worker processes over shared memory where the platform allows (procs.py)
        self.lanes = procs.ProcessLanes(self.threads - 1) if self.threads > 1 and procs.available() else None

    def scratch_pool(self, name: str) -> dict:
        """The kernels' shared scratch pool ``name`` (one per session; its kernels run in turn): its buffers in
        shared memory when worker processes run lanes (`common.scratch_buffer` reads the "shared" entry)."""
        return self.kernel_cache.setdefault(name, {"shared": True} if self.lanes is not None else {})

    def run_groups(self, commands: Sequence[Any], runs: dict[int, Callable[[], None]]
                   ) -> dict[int, tuple[Callable[[], bool], int]]:
        """With worker-process lanes: consecutive convolutions as one hand-off each run (``lane_groups``)."""
        if self.lanes is None or not procs.phased_handoffs():
            return {}
        from .lane_groups import lane_groups

        return lane_groups(commands, runs, self.threads)  # type: ignore[return-value]

    def on_create(self, op_type: int, op: Any, inputs: Sequence[TensorRef],
                  outputs: Sequence[TensorRef]) -> Execution | None:
        entry = self.kernel(op_type)
        if entry is None:
            return None
        return entry.cls(self, op, inputs, outputs)

    def on_resize_begin(self) -> None:
        if self.lanes is not None:
            self.lanes.reset()
        self._planner = memory.ArenaPlanner()
        self._chunks = {}
        self.static_bytes = 0

    def on_acquire(self, tensor: TensorRef, storage: StorageType) -> None:
        if storage == StorageType.STATIC:
            tensor.array = np.zeros(tensor.desc.physical_shape, dtype=tensor.desc.dtype)
            STATS["static_allocations"] += 1
            self.static_bytes += tensor.desc.nbytes
            return
        self._chunks[tensor.index] = (tensor, self._planner.acquire(tensor.desc.nbytes))

    def on_release(self, tensor: TensorRef, storage: StorageType) -> None:
        item = self._chunks.get(tensor.index)
        if item is not None and storage != StorageType.DYNAMIC_SEPARATE:
            self._planner.release(item[1])

    def on_resize_end(self) -> None:
        need = self._planner.peak
        if self._arena is None or self._arena.size - memory.ALIGN < need:
            self._arena, self._base = memory.allocate(need, shared=self.lanes is not None)
        for ref, chunk in self._chunks.values():
            ref.array = memory.view(self._arena, self._base, chunk, ref.desc.dtype, ref.desc.physical_shape)

    def on_execute_begin(self) -> None:
        """`numThread` from the config: the kernels' own lanes (Python threads, see compute/blas.py) run the ops in
        parallel and numpy's BLAS pool is held at 1 thread. OpenBLAS workers busy-wait for milliseconds after each
        threaded call; interleaved with the lanes they took the second core from them (ResNet-18, 2 threads, same
        process: 143 ms best with BLAS at 2 threads between the lanes' calls vs 35.5 ms with BLAS at 1; 1 thread
        58 ms). Without `numThread` the pool is left as it is."""
        if "numThread" in self.config:
            with contextlib.suppress(ImportError):
                from mnnpy.bench.threads import get_blas_threads, set_blas_threads

                if get_blas_threads() not in (None, 1):
                    set_blas_threads(1)
        if self.lanes is not None:  # after the BLAS pool is at 1: a fork's workers keep that
            self.lanes.begin()

    def on_execute_end(self) -> None:
        if self.lanes is not None:
            self.lanes.end()

    def on_clear(self) -> None:
        if self.lanes is not None:
            self.lanes.reset()
        self._arena = None
        self._chunks = {}

    def on_copy(self, src: TensorRef, dst: TensorRef) -> None:
        if src.desc.fmt == dst.desc.fmt and src.desc.shape == dst.desc.shape:
            np.copyto(dst.array, src.array, casting="unsafe")
        else:
            layout.store(dst, layout.logical(src))

    def memory_info(self) -> dict[str, Any]:
        return {"arena_bytes": self._planner.peak, "tensor_bytes": self._planner.requested,
                "static_bytes": self.static_bytes, "formats": NC4HW4}
