"""The registry shape shared by the frontends: converter functions by op (or layer) type, registered with a decorator
from the modules of one package, which is imported (and so registers everything) on the first lookup."""

from __future__ import annotations

import importlib
from collections.abc import Callable

Handler = Callable[..., None]


class OpRegistry:
    """Converter functions of one frontend. Types may have versioned variants (`since`, the ONNX opset a variant is
    valid from); registering a type again with the same `since` makes the later function the one looked up."""

    def __init__(self, package: str) -> None:
        self._package = package
        self._handlers: dict[str, list[tuple[int, Handler]]] = {}
        self._loaded = False

    def register(self, *op_types: str, since: int = 1) -> Callable[[Handler], Handler]:
        """Decorator registering `fn` for `op_types`, valid from version `since` on."""

        def wrap(fn: Handler) -> Handler:
            for op_type in op_types:
                variants = self._handlers.setdefault(op_type, [])
                variants.append((since, fn))
                variants.sort(key=lambda item: item[0])
            return fn

        return wrap

    def lookup(self, op_type: str, version: int | None = None) -> Handler | None:
        """The newest variant of `op_type` whose `since` is not newer than `version` (any version when None; the
        oldest variant when all are newer), or None when `op_type` is unsupported."""
        self._load()
        variants = self._handlers.get(op_type)
        if not variants:
            return None
        valid = [fn for since, fn in variants if version is None or since <= version]
        return valid[-1] if valid else variants[0][1]

    def types(self) -> list[str]:
        """Sorted list of the registered types."""
        self._load()
        return sorted(self._handlers)

    def _load(self) -> None:
        if not self._loaded:
            importlib.import_module(self._package)
            self._loaded = True
