"""The small, fixed backend interface: Runtime, Backend, Execution (MNN: `Runtime`, `Backend`, `Execution`).

A backend package (`mnnpy.backends.<name>`) exposes a `Runtime` subclass as `RUNTIME`. The core finds it by name
through `mnnpy.core.registry.get_runtime`, so the core never imports a backend at import time.

Order of calls made by the pipeline for one resize:
`on_resize_begin` -> `on_create` per command -> `on_acquire`/`on_release` (memory plan) -> `on_resize_end` (arena
allocated, tensors bound) -> `Execution.on_resize` per command. One run: `on_execute_begin` ->
`Execution.on_execute` per command -> `on_execute_end`.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from mnnpy.core.ir import TensorDesc


class StorageType(enum.Enum):
    """MNN's `Backend::StorageType`: STATIC is never reused (weights); DYNAMIC is planned and reused."""

    STATIC = 0
    DYNAMIC = 1
    DYNAMIC_SEPARATE = 2


class BackendUnavailable(RuntimeError):  # noqa: N818 - the name the design uses
    """A backend's runtime cannot be created here (no driver, no device)."""


class TensorRef:
    """A tensor as an execution sees it: descriptor plus the backing array, bound after memory planning.

    Attributes:
        index: the tensor's index in the session tensor table.
        desc: shape, dtype and format.
        array: the physical array (a view into the backend's arena, or a static array); None until bound.
        const: True when the value is known at resize time (weights, folded constants).
        extent: the shape an op gave its output while running, when that is smaller than the planned one (MNN: an
            execution setting ``dim[k].extent`` in onExecute, as DetectionOutput does with the rows it found); the
            tensor API reads through it. None: the planned ``desc.shape``.
    """

    __slots__ = ("array", "const", "desc", "extent", "index", "name")

    def __init__(self, index: int, desc: TensorDesc, name: str = "", array: Any = None, const: bool = False) -> None:
        self.index = index
        self.desc = desc
        self.name = name
        self.array = array
        self.const = const
        self.extent: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"TensorRef({self.index}, {self.name!r}, {self.desc.shape}, {self.desc.fmt})"


class Execution(ABC):
    """One command's kernel (MNN: `Execution`): `on_resize` does all per-shape work, `on_execute` only runs.

    Attributes:
        backend: the Backend that created it.
        algorithm: short name of the chosen algorithm, reported by `session.info()`.
    """

    algorithm: str = ""
    scratch_ref: TensorRef | None = None  # the planned chunk for `scratch_bytes()`, bound before on_resize
    # A layout copy whose consumer may read the copy's source itself (`fuse_after`, offered before chains form)
    feeds_one: bool = False

    def __init__(self, backend: Backend, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> None:
        self.backend = backend
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def on_resize(self) -> None:  # noqa: B027 - optional hook
        """Per-shape preparation (weight packing, index tables, views). Arrays are bound when it is called."""

    def scratch_bytes(self) -> int:
        """Work memory (bytes) this command needs while it runs; the memory plan gives it an arena chunk that later
        commands reuse (`scratch_ref`). 0: none (MNN: an execution's onResize acquiring and releasing a buffer)."""
        return 0

    def alias_input(self) -> int | None:
        """The input position whose bytes this command's one output repeats unchanged (same dtype, same size: a
        byte-for-byte copy, decided from the descriptors before memory is planned). The schedule may then bind the
        output as a view of that input's memory and drop the command (`Scheduler.plan`). None: it needs its own."""
        return None

    def fuse_between(self, producer: Execution, consumer: Execution) -> list[Callable[[], None]] | None:
        """Runs for three commands (``producer`` -> this -> ``consumer``, each link the only use of its tensor) that
        together compute the consumer's output faster than one by one, possibly leaving the two linking tensors in
        another layout (the schedule offers this after every ``on_resize``). A callback-free run calls them in place
        of the three ``on_execute``; a run with callbacks keeps the plain ones. None: no such runs."""
        del producer, consumer
        return None

    def fuse_after(self, producer: Execution) -> list[Callable[[], None]] | None:
        """Runs for two consecutive commands (``producer`` -> this, the link the only use of its tensor) that
        together compute this command's output faster than one by one, leaving the link unwritten (the producer
        writes straight into where this command reads its input from). Offered like ``fuse_between``, for the pairs
        no chain of three took; a callback-free run calls them in place of the two ``on_execute``. None: no runs."""
        del producer
        return None

    def fuse_after_chain(self, producer: Execution) -> list[Callable[[], None]] | None:
        """``fuse_after`` for a producer that already runs as the last command of a chain (its own run reads a
        linking tensor it was given in another layout): the returned runs replace the producer's chained run and
        this command's ``on_execute``; the producer must build its replacement itself, as only it knows its chain."""
        del producer
        return None

    @abstractmethod
    def on_execute(self) -> None:
        """Compute the outputs into their bound arrays. Must not allocate arena memory or plan."""

    def info(self) -> dict[str, Any]:
        """Algorithm details for `session.info()`."""
        return {"algorithm": self.algorithm} if self.algorithm else {}


class Backend(ABC):
    """Per-session device object (MNN: `Backend`)."""

    name: str = "?"

    def __init__(self, runtime: Runtime, config: dict[str, Any] | None = None) -> None:
        self.runtime = runtime
        self.config = dict(config or {})

    @abstractmethod
    def on_create(self, op_type: int, op: Any, inputs: Sequence[TensorRef],
                  outputs: Sequence[TensorRef]) -> Execution | None:
        """Create the execution for a command, or return None when unsupported (the schedule falls back to CPU)."""

    def kernel(self, op_type: int) -> Any:
        """This backend's registered kernel entry for `op_type` (`registry.KERNELS[self.name]`), or None."""
        from mnnpy.core import registry  # registry imports this module

        return registry.KERNELS.get(self.name, {}).get(int(op_type))

    def supported_formats(self, op_type: int) -> tuple[str, ...]:
        """Formats the backend's kernel for `op_type` accepts on its main input; the first is preferred."""
        entry = self.kernel(op_type)
        return entry.formats if entry is not None else ("NCHW",)

    @abstractmethod
    def on_acquire(self, tensor: TensorRef, storage: StorageType) -> None:
        """Reserve memory for a tensor (DYNAMIC: planned in the arena, bound at `on_resize_end`)."""

    @abstractmethod
    def on_release(self, tensor: TensorRef, storage: StorageType) -> None:
        """Give a DYNAMIC tensor's memory back to the plan so later tensors may reuse it."""

    def on_clear(self) -> None:  # noqa: B027 - optional hook
        """Drop all planned memory (MNN: `onClearBuffer`)."""

    @abstractmethod
    def on_copy(self, src: TensorRef, dst: TensorRef) -> None:
        """Copy between tensors, converting layout/device as needed (MNN: `onCopyBuffer`)."""

    def on_resize_begin(self) -> None:  # noqa: B027 - optional hook
        """Start a memory plan."""

    def on_resize_end(self) -> None:  # noqa: B027 - optional hook
        """Finish the plan: allocate the arena and bind all acquired tensors."""

    def on_resize_done(self) -> None:  # noqa: B027 - optional hook
        """Called once after every command's `Execution.on_resize` (GPU backends record command buffers here)."""

    def run_groups(self, commands: Sequence[Any], runs: dict[int, Callable[[], None]]
                   ) -> dict[int, tuple[Callable[[], bool], int]]:
        """Runs of consecutive commands this backend can run together in callback-free runs: id(first command) ->
        (its run, which returns False where it cannot run this time, and how many commands it covers). None here."""
        return {}

    def on_execute_begin(self) -> None:  # noqa: B027 - optional hook
        """Called before the first command of a run."""

    def on_execute_end(self) -> None:  # noqa: B027 - optional hook
        """Called after the last command of a run (GPU backends submit / wait here)."""

    def memory_info(self) -> dict[str, Any]:
        """Arena size and planned tensor bytes for `session.info()`."""
        return {}


class Runtime(ABC):
    """Per-device object holding caches; creates Backends (MNN: `Runtime`)."""

    name: str = "?"

    @classmethod
    def is_available(cls) -> bool:
        """Whether this runtime can be created on this machine."""
        return True

    @abstractmethod
    def create_backend(self, config: dict[str, Any] | None = None) -> Backend:
        """Create a Backend for one session (MNN: `Runtime::onCreate`)."""

    def gc(self, level: int = 0) -> None:  # noqa: B027 - optional hook
        """Drop caches (MNN: `onGabageCollect`)."""
