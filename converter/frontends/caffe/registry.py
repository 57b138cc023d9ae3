"""Registry of Caffe layer converters: `@caffe_layer("Convolution")`; modules under `layers/` found with pkgutil."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Handler = Callable[..., None]

_HANDLERS: dict[str, Handler] = {}


def caffe_layer(*layer_types: str) -> Callable[[Handler], Handler]:
    """Register a converter function for Caffe layer types; it is called as `fn(ctx, layer)`."""

    def wrap(fn: Handler) -> Handler:
        for layer_type in layer_types:
            _HANDLERS[layer_type] = fn
        return fn

    return wrap


def lookup(layer_type: str) -> Handler | None:
    """The converter of `layer_type`, or None when it is unsupported."""
    _load_layers()
    return _HANDLERS.get(layer_type)


def supported_layers() -> list[str]:
    """Sorted list of supported Caffe layer types."""
    _load_layers()
    return sorted(_HANDLERS)


_LOADED: list[Any] = []


def _load_layers() -> None:
    if not _LOADED:
        from . import layers

        _LOADED.append(layers)
