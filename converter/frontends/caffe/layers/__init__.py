"""Caffe layer converters, one module per layer family; every sibling module is imported here (no central list)."""

from __future__ import annotations

import importlib
import pkgutil

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
