"""`expr.jsonop`: an op built from its JSON description (MNN: `_JSONOp`).

The description is an `Op` table in flatc's JSON form, as `mnnpy.schema.jsonify.to_dict` (and MNN's
`MNNDump2Json`) write it: `{"type": "ReLU", "main_type": "Relu", "main": {"slope": 0.1}}`. Enums are given by name
or number, unions as `<field>_type` plus `<field>`; `inputIndexes`, `outputIndexes` are ignored (the Vars given
are the inputs). The result is a lazy op like any other: the core infers its shapes and runs it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr.graph import OP, Node
from mnnpy.expr.var import Var, to_var
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.layout_generated import LAYOUT
from mnnpy.schema.walk import fields


def _enum(value: Any, enum: str, where: str) -> int:
    values = LAYOUT["enums"][enum]["values"]
    if isinstance(value, str):
        if value not in values:
            raise ValueError(f"mnnpy.expr.jsonop: {where}: {value!r} is not a {enum} name")
        return int(values[value])
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"mnnpy.expr.jsonop: {where}: expected a {enum} name or number, got {value!r}")
    return int(value)


def _scalar(value: Any, code: str, where: str) -> Any:
    if isinstance(value, (list, dict, str)) or value is None:
        raise ValueError(f"mnnpy.expr.jsonop: {where}: expected a number, got {value!r}")
    return float(value) if code in "fd" else (bool(value) if isinstance(value, bool) else int(value))


def _value(value: Any, kind: tuple, where: str) -> Any:
    if kind[0] == "scalar":
        return _scalar(value, kind[1], where)
    if kind[0] == "enum":
        return _enum(value, kind[2], where)
    if kind[0] == "string":
        if not isinstance(value, str):
            raise ValueError(f"mnnpy.expr.jsonop: {where}: expected a string, got {value!r}")
        return value
    if kind[0] == "table":
        return from_dict(value, kind[1], where)
    if not isinstance(value, list):  # vector
        raise ValueError(f"mnnpy.expr.jsonop: {where}: expected a list, got {value!r}")
    item = kind[1]
    if item[0] == "scalar":
        return np.asarray([_scalar(v, item[1], where) for v in value], np.dtype(item[1]))
    if item[0] == "enum":
        return np.asarray([_enum(v, item[2], where) for v in value], np.dtype(item[1]))
    return [_value(v, item, f"{where}[{k}]") for k, v in enumerate(value)]


def from_dict(data: Any, table: str, where: str = "") -> Any:
    """An object-API instance of `table` from its JSON-ready dict (the inverse of `jsonify.to_dict`)."""
    where = where or table
    if not isinstance(data, dict):
        raise ValueError(f"mnnpy.expr.jsonop: {where}: expected an object for table {table}, got {data!r}")
    obj = getattr(fb, f"{table}T")()
    known = set()
    for name, attr, kind in fields(table):
        known.add(name)
        if kind[0] == "union_type" or name not in data:
            continue
        if kind[0] == "union":
            known.add(f"{name}_type")
            members = LAYOUT["unions"][kind[1]]
            member = data.get(f"{name}_type", "NONE")
            if member not in members:
                raise ValueError(f"mnnpy.expr.jsonop: {where}.{name}_type: {member!r} is not a {kind[1]} member")
            type_attr = LAYOUT["attrs"].get(table, {}).get(f"{name}_type", f"{name}_type")
            setattr(obj, type_attr, members.index(member))
            setattr(obj, attr, None if member == "NONE" else from_dict(data[name], member, f"{where}.{name}"))
            continue
        setattr(obj, attr, _value(data[name], kind, f"{where}.{name}"))
    unknown = sorted(set(data) - known - {f"{n}_type" for n in known})
    if unknown:
        raise ValueError(f"mnnpy.expr.jsonop: {where}: unknown field(s) {unknown} for table {table}")
    return obj


def jsonop(vars: Sequence[Any], describe: str, output_number: int = 1) -> list[Var]:
    """The op described by `describe` (JSON of an Op table) applied to `vars`; its `output_number` outputs
    (MNN: `expr.jsonop`).
    """
    try:
        data = json.loads(describe) if isinstance(describe, (str, bytes)) else describe
    except json.JSONDecodeError as exc:
        raise ValueError(f"mnnpy.expr.jsonop: the description is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError("mnnpy.expr.jsonop: the description must be an Op object with a \"type\"")
    if int(output_number) < 1:
        raise ValueError(f"mnnpy.expr.jsonop: output_number must be >= 1, got {output_number}")
    data = {k: v for k, v in data.items() if k not in ("inputIndexes", "outputIndexes")}
    op = from_dict(data, "Op")
    if op.defaultDimentionFormat is None:
        op.defaultDimentionFormat = fb.MNN_DATA_FORMAT.NCHW
    ins = [Var(v.node, v.index) if isinstance(v, Var) else to_var(v) for v in vars]
    node = Node(OP, op, ins, int(output_number), dtypes=None, name=op.name or "")
    return [Var(node, k) for k in range(int(output_number))]
