"""Registries filled by decorators: shape functions, geometry functions and backend kernels.

Nothing is listed by hand: `mnnpy.core.shape` and `mnnpy.core.geometry` import their modules with pkgutil on first
use, and a backend's `ops` package does the same when the backend is first asked for by name (`get_runtime`).
The core never imports a backend module at import time (MNN: `REGISTER_SHAPE`, `REGISTER_GEOMETRY`,
`REGISTER_CPU_OP_CREATOR`).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from mnnpy.core.backend import BackendUnavailable, Runtime


@dataclass(frozen=True)
class ShapeEntry:
    """A shape function and the input positions whose values (not only shapes) it reads."""

    fn: Callable[..., Any]
    needs_values: tuple[int, ...] = ()


@dataclass(frozen=True)
class KernelEntry:
    """A backend execution class and the formats it accepts (the first is preferred)."""

    cls: type
    formats: tuple[str, ...]


SHAPES: dict[int, ShapeEntry] = {}
GEOMETRY: dict[int, Callable[..., Any]] = {}
KERNELS: dict[str, dict[int, KernelEntry]] = {}
_LOADED: set[str] = set()
_LOCK = threading.RLock()


def shape_fn(*op_types: int, needs_values: tuple[int, ...] = ()) -> Callable[[Callable], Callable]:
    """Register a shape function `fn(op, descs, values) -> list[TensorDesc]` for op types (MNN: REGISTER_SHAPE).

    Args:
        op_types: MNN OpType numbers.
        needs_values: input positions whose contents the function reads (MNN: REGISTER_SHAPE_INPUTS).
    """

    def wrap(fn: Callable) -> Callable:
        for t in op_types:
            SHAPES[int(t)] = ShapeEntry(fn, tuple(needs_values))
        return fn

    return wrap


def geometry_fn(*op_types: int) -> Callable[[Callable], Callable]:
    """Register a geometry function `fn(op, in_descs, out_descs, values) -> list[list[Region]] | None`.

    Region origins are input positions. Returning None means "not expressible as regions here": the op then
    runs as a backend kernel (MNN: REGISTER_GEOMETRY).
    """

    def wrap(fn: Callable) -> Callable:
        for t in op_types:
            GEOMETRY[int(t)] = fn
        return fn

    return wrap


def kernel(backend: str, *op_types: int, formats: tuple[str, ...] = ("NCHW",)) -> Callable[[type], type]:
    """Register an Execution class of `backend` for op types (MNN: REGISTER_<BACKEND>_OP_CREATOR)."""

    def wrap(cls: type) -> type:
        table = KERNELS.setdefault(backend, {})
        for t in op_types:
            table[int(t)] = KernelEntry(cls, tuple(formats))
        return cls

    return wrap


def cpu_kernel(*op_types: int, formats: tuple[str, ...] = ("NCHW",)) -> Callable[[type], type]:
    """Register a CPU Execution class: `@cpu_kernel(OpType.ReLU, formats=("NC4HW4", "NCHW"))`."""
    return kernel("cpu", *op_types, formats=formats)


def import_all(package: str) -> ModuleType:
    """Import every module of a package once (pkgutil discovery; registration happens by decorator)."""
    pkg = importlib.import_module(package)
    if package in _LOADED:
        return pkg
    with _LOCK:  # two threads creating their first sessions must not see a half-filled registry
        if package not in _LOADED:
            for info in pkgutil.iter_modules(pkg.__path__):
                importlib.import_module(f"{package}.{info.name}")
            _LOADED.add(package)
    return pkg


def load_core() -> None:
    """Load all shape and geometry functions."""
    import_all("mnnpy.core.shape")
    import_all("mnnpy.core.geometry")


_RUNTIMES: dict[str, Runtime] = {}


def get_runtime(name: str) -> Runtime:
    """The Runtime of backend `name` ("cpu", "opencl", "vulkan"), importing `mnnpy.backends.<name>` on first use.

    Raises:
        BackendUnavailable: the backend is not installed or has no device here.
    """
    key = name.lower()
    with _LOCK:
        return _RUNTIMES[key] if key in _RUNTIMES else _load_runtime(key)


def _load_runtime(key: str) -> Runtime:
    """Import a backend package and create its Runtime (called under the registry lock)."""
    try:
        module = importlib.import_module(f"mnnpy.backends.{key}")
    except ImportError as exc:
        raise BackendUnavailable(f"{key}: cannot import backend ({exc})") from exc
    runtime_cls = getattr(module, "RUNTIME", None)
    if runtime_cls is None:
        raise BackendUnavailable(f"{key}: backend package has no RUNTIME")
    if not runtime_cls.is_available():
        reason = getattr(runtime_cls, "unavailable_reason", lambda: "")() or f"{key}: not available on this machine"
        raise BackendUnavailable(reason)
    runtime = runtime_cls()
    _RUNTIMES[key] = runtime
    return runtime
