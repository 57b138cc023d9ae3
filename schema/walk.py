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


def _children(table: str) -> set[str]:
    """Tables a `table` object can hold directly (sub-tables, union members, vector items)."""
    out = set()
    for _, kind in LAYOUT["tables"][table]:
        if kind[0] == "table":
            out.add(kind[1])
        elif kind[0] == "union":
            out.update(m for m in LAYOUT["unions"][kind[1]] if m != "NONE")
        elif kind[0] == "vector" and kind[1][0] == "table":
            out.add(kind[1][1])
    return out


@cache
def reaching(kind: tuple) -> frozenset[str]:
    """The tables that have a field of this `kind` (e.g. `("vector", ("string",))`) or hold one, at any depth: a
    `visit` limited to them sees every such field and skips the rest of the tree."""
    found = {t for t, spec in LAYOUT["tables"].items() if any(k == kind for _, k in spec)}
    children = {t: _children(t) for t in LAYOUT["tables"]}
    while True:
        more = {t for t, kids in children.items() if t not in found and kids & found}
        if not more:
            return frozenset(found)
        found |= more


def visit(obj: Any, table: str, fn: Any, within: frozenset[str] | None = None) -> None:
    """Call `fn(obj, table)` on `obj` and on every table object below it (sub-tables, union values, vectors); with
    `within`, only on tables named there (and below them only through such tables)."""
    fn(obj, table)
    for name, attr, kind in fields(table):
        value = getattr(obj, attr, None)
        if value is None:
            continue
        if kind[0] == "table":
            child, items = kind[1], (value,)
        elif kind[0] == "union":
            child, items = union_member(obj, table, name, kind[1]), (value,)
        elif kind[0] == "vector" and kind[1][0] == "table":
            child, items = kind[1][1], value
        else:
            continue
        if child != "NONE" and (within is None or child in within):
            for item in items:
                visit(item, child, fn, within)
