"""Our whole schema against the type tables compiled into the official MNN 3.6.1 wheel (see official_types.py):
every table's fields in id order with their wire types and referenced types, every enum's members and values,
every union's members. The only differences allowed are MNN's additions after 3.6.1, listed here by name.
"""

from __future__ import annotations

import pytest
from mnnpy.schema.layout_generated import LAYOUT

from .official_types import OfficialSchema, official_schema

# newer than 3.6.1 (mnn-facts section 0): present in our schema, absent from the 3.6.1 binary
NEWER_TABLES = {"FusedLinearParam"}
NEWER_FIELDS = {"LinearAttentionParam": ["gate_fold", "gate_coef", "gate_bias"]}
NEWER_ENUM_VALUES = {"OpType": {"FusedLinear", "GatedRMSNorm"}}
NEWER_UNION_MEMBERS = {"OpParameter": ["FusedLinearParam"]}
_WIRE = {"BOOL": "B", "CHAR": "b", "UCHAR": "B", "SHORT": "h", "USHORT": "H", "INT": "i", "UINT": "I", "LONG": "q",
         "ULONG": "Q", "FLOAT": "f", "DOUBLE": "d"}


def _ours(kind: tuple) -> tuple:
    """(wire type, is a vector, referenced type) of one of our layout fields."""
    if kind[0] == "vector":
        return (*_ours(kind[1])[:1], True, _ours(kind[1])[2])
    return {"scalar": lambda: (kind[1], False, None), "enum": lambda: (kind[1], False, kind[2]),
            "string": lambda: ("STRING", False, None), "union_type": lambda: ("UTYPE", False, kind[1]),
            "union": lambda: ("SEQUENCE", False, kind[1]), "table": lambda: ("SEQUENCE", False, kind[1])}[kind[0]]()


@pytest.fixture(scope="module")
def official() -> OfficialSchema:
    try:
        schema = official_schema()
    except LookupError as exc:  # a stripped build: nothing to read
        pytest.skip(str(exc))
    if schema is None:
        pytest.skip("official MNN wheel (its _tools extension) not installed")
    return schema


def test_every_table_has_mnns_fields_in_order(official: OfficialSchema) -> None:
    assert NEWER_TABLES.isdisjoint(official.names())
    for table, fields in LAYOUT["tables"].items():
        if table in NEWER_TABLES:
            continue
        ours = [(name, _ours(kind)) for name, kind in fields]
        newer = NEWER_FIELDS.get(table, [])
        assert [name for name, _ in ours[len(ours) - len(newer):]] == newer or not newer, table
        theirs = [(f.name, (_WIRE.get(f.elementary, f.elementary), f.repeated, f.ref)) for f in official[table].fields]
        assert ours[:len(ours) - len(newer)] == theirs, table


def test_the_tables_that_were_empty_are_complete(official: OfficialSchema) -> None:
    """Spot check of issue #2/#6: the union members mnnpy once declared empty carry MNN's fields now."""
    for table, first, count in [("CropAndResize", "extrapolationValue", 2), ("DetectionPostProcessParam",
                                "maxDetections", 8), ("TfQuantizedConv2D", "bias", 15), ("ImageProcessParam",
                                "filterType", 11), ("StftParam", "n_fft", 3), ("Proposal", "featStride", 9)]:
        assert LAYOUT["tables"][table][0][0] == first and len(LAYOUT["tables"][table]) == count, table
        assert len(official[table].fields) == count, table


def test_every_enum_and_union_matches(official: OfficialSchema) -> None:
    for name, spec in LAYOUT["enums"].items():
        members = official[name].fields
        assert official[name].kind == "ENUM", name
        values = [f.value for f in members] if members[0].value is not None else list(range(len(members)))
        ours = {k: v for k, v in spec["values"].items() if k not in NEWER_ENUM_VALUES.get(name, set())}
        assert ours == dict(zip([f.name for f in members], values, strict=True)), name
    for name, members in LAYOUT["unions"].items():
        newer = NEWER_UNION_MEMBERS.get(name, [])
        assert members[len(members) - len(newer):] == newer or not newer, name
        theirs = official[name].fields
        assert official[name].kind == "UNION" and members[:len(members) - len(newer)] == [f.name for f in theirs]
        assert all(f.ref == f.name for f in theirs[1:]), name  # member k is table k


def test_reader_sees_known_facts(official: OfficialSchema) -> None:
    """The ELF reader itself: fields and references known from mnn-facts (so a broken reader cannot pass)."""
    op = official["Op"].fields
    assert [f.name for f in op][:3] == ["inputIndexes", "main_type", "main"]
    assert (op[5].elementary, op[5].ref, op[6].elementary, op[6].ref) == ("INT", "OpType", "CHAR", "MNN_DATA_FORMAT")
    values = {f.name: f.value for f in official["OpType"].fields}
    assert (values["Raster"], values["Extra"], values["GridSample"]) == (128, 512, 604)
    assert [(f.name, f.repeated) for f in official["Crop"].fields] == [("axis", False), ("offset", True)]
