"""Object-API trees as JSON-ready dicts, in the shape of flatc's (and MNN's `-f MNN --JsonFile`) JSON dump.

Enum fields are written by name where the value is known, unions as `<field>_type` (member name) plus `<field>`,
and vectors as lists. Fields left at `None` (absent in the file) are omitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .layout_generated import LAYOUT
from .walk import fields, union_member

_ENUM_NAMES = {e: {v: k for k, v in spec["values"].items()} for e, spec in LAYOUT["enums"].items()}


def _enum(value: Any, enum: str) -> Any:
    return _ENUM_NAMES[enum].get(int(value), int(value))


def _convert(value: Any, kind: tuple, limit: int | None) -> Any:
    if kind[0] == "enum":
        return _enum(value, kind[2])
    if kind[0] == "table":
        return to_dict(value, kind[1], limit)
    if kind[0] == "vector":
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if limit is not None and len(items) > limit and kind[1][0] == "scalar":
            return {"count": len(items), "head": items[:limit]}
        return [_convert(v, kind[1], limit) for v in items]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def to_dict(obj: Any, table: str, limit: int | None = None) -> dict:
    """Convert an object-API instance of `table` (e.g. a `NetT` with table "Net") to a dict.

    Args:
        obj: the object (e.g. from `load_net`).
        table: its schema table name.
        limit: if set, numeric vectors longer than this become `{"count": n, "head": [...]}` (for readable dumps).
    """
    out: dict[str, Any] = {}
    for name, attr, kind in fields(table):
        if kind[0] == "union_type":
            continue
        value = getattr(obj, attr, None)
        if value is None:
            continue
        if kind[0] == "union":
            member = union_member(obj, table, name, kind[1])
            out[f"{name}_type"] = member
            if member != "NONE":
                out[name] = to_dict(value, member, limit)
            continue
        out[name] = _convert(value, kind, limit)
    return out
