"""Walking object-API trees with the generated layout: each field's schema name, object attribute and kind."""

from __future__ import annotations

from functools import cache
from typing import Any

from .layout_generated import LAYOUT


@cache
def fields(table: str) -> tuple[tuple[str, str, tuple], ...]:
    """`(schema name, object-API attribute, kind)` for every field of `table`, in field-id order.

    flatc renames some fields in the Python object API (`useRMSNorm` -> `useRmsnorm`, `T` -> `t`,
    `main_type` -> `mainType`); the attribute is the name to use with getattr/setattr.
    """
    renamed = LAYOUT["attrs"].get(table, {})
    return tuple((name, renamed.get(name, name), kind) for name, kind in LAYOUT["tables"][table])


def union_member(obj: Any, table: str, field: str, union: str) -> str:
    """Name of the member table held by union `field` of `obj` ("NONE" when empty or unknown)."""
    attr = LAYOUT["attrs"].get(table, {}).get(field + "_type", field + "_type")
    members = LAYOUT["unions"][union]
    tag = int(getattr(obj, attr, 0) or 0)
    return members[tag] if 0 <= tag < len(members) else "NONE"


def visit(obj: Any, table: str, fn: Any) -> None:
    """Call `fn(obj, table)` on `obj` and on every table object below it (sub-tables, union values, vectors)."""
    fn(obj, table)
    for name, attr, kind in fields(table):
        value = getattr(obj, attr, None)
        if value is None:
            continue
        if kind[0] == "table":
            visit(value, kind[1], fn)
        elif kind[0] == "union":
            member = union_member(obj, table, name, kind[1])
            if member != "NONE":
                visit(value, member, fn)
        elif kind[0] == "vector" and kind[1][0] == "table":
            for item in value:
                visit(item, kind[1][1], fn)
