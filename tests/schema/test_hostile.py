"""Hostile `.mnn` input: truncations, aimed corruptions and bit flips never crash, hang or raise anything but
ModelError (the whole batch runs in a subprocess so that a crash is seen as a failure, not lost)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net, net_to_bytes, verify_buffer
from support import official
from support.models import interop_onnx, scratch_cnn

from mnnpy import ModelError

RUNNER = Path(__file__).resolve().parents[1] / "support" / "hostile_runner.py"
BAD_VALUES = {
    "uoffset": (0xFFFFFFF0, 0x7FFFFFFF),
    "vlen": (0x7FFFFFFF, 0x40000000),
    "soffset": (0x7FFFFFFF, -0x7FFFFFF0),
}


def _bases(tmp_path: Path) -> list[bytes]:
    bases = [net_to_bytes(scratch_cnn()[0])]
    try:
        official.require_mnn()
        bases.append(official.convert(interop_onnx(tmp_path / "m.onnx"), tmp_path / "m.mnn").read_bytes())
    except pytest.skip.Exception:
        pass  # the object-API net alone still gives well over 1,000 cases
    return bases


def _must_fail(base: bytes, rng: np.random.Generator) -> list[bytes]:
    """Corruptions that can never be a valid model: truncations and out-of-range offsets/lengths."""
    cases = []
    # truncations: removing >= 8 bytes always cuts real data (a builder pads by at most 7)
    if len(base) <= 1200:
        cuts = range(0, len(base) - 8)  # every cut point of a small file
    else:
        cuts = sorted(set(rng.integers(0, len(base) - 8, size=300).tolist()) | {0, 3, 11, len(base) - 8})
    for cut in cuts:
        cases.append(base[:cut])
    trace: list[tuple[str, int]] = []
    verify_buffer(base, trace=trace)
    picks = rng.choice(len(trace), size=min(len(trace), 260), replace=False)
    for i in picks:
        kind, pos = trace[i]
        for value in BAD_VALUES[kind]:
            buf = bytearray(base)
            struct.pack_into("<i" if value < 0 or kind == "soffset" else "<I", buf, pos, value)
            cases.append(bytes(buf))
    return cases


def _may_load(base: bytes, rng: np.random.Generator, count: int) -> list[bytes]:
    """Random bit flips and byte splats: some still form a valid model, none may crash."""
    cases = []
    for _ in range(count):
        buf = bytearray(base)
        for pos in rng.integers(0, len(buf), size=int(rng.integers(1, 6))):
            if rng.random() < 0.7:
                buf[pos] ^= 1 << int(rng.integers(0, 8))
            else:
                buf[pos] = int(rng.integers(0, 256))
        cases.append(bytes(buf))
    return cases


def test_hostile_files_give_model_error_fast(tmp_path: Path) -> None:
    rng = np.random.default_rng(1234)
    folder = tmp_path / "hostile"
    folder.mkdir()
    must_fail: set[str] = set()
    for b, base in enumerate(_bases(tmp_path)):
        for i, data in enumerate(_must_fail(base, rng)):
            name = f"fail_{b}_{i:04d}.mnn"
            (folder / name).write_bytes(data)
            must_fail.add(name)
        for i, data in enumerate(_may_load(base, rng, 250)):
            (folder / f"flip_{b}_{i:04d}.mnn").write_bytes(data)
    assert len(must_fail) >= 1000
    proc = subprocess.run([sys.executable, str(RUNNER), str(folder)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"loader process died (rc {proc.returncode}): {proc.stderr[-2000:]}"
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(list(folder.iterdir()))
    others = [r for r in results if r["outcome"] not in ("ok", "ModelError")]
    assert not others, f"{len(others)} files raised something else than ModelError, e.g. {others[:3]}"
    loaded = [r["file"] for r in results if r["outcome"] == "ok" and r["file"] in must_fail]
    assert not loaded, f"corrupt files were accepted: {loaded[:5]}"
    slow = [r for r in results if r["seconds"] > 1.0]
    assert not slow, f"files took over 1 s: {slow[:3]}"
    messages = [r["message"] for r in results if r["outcome"] == "ModelError"]
    assert all(".mnn" in m for m in messages), "every error names the file"


def test_error_names_offset_and_path() -> None:
    base = bytearray(net_to_bytes(scratch_cnn()[0]))
    trace: list[tuple[str, int]] = []
    verify_buffer(bytes(base), trace=trace)
    _, pos = next(t for t in trace if t[0] == "vlen")
    struct.pack_into("<I", base, pos, 0x7FFFFFFF)  # the length of Net.bizCode
    with pytest.raises(ModelError, match=rf"string of 2147483647 bytes .* at byte {pos} \(path Net\.bizCode\)"):
        load_net(bytes(base))


def _shared_dag_net(levels: int) -> bytes:
    """An Extra op whose Attribute -> NamedAttrList -> [Attribute, Attribute] chain reuses one child per level:
    a few hundred bytes that unpack into 2**levels objects."""
    import flatbuffers
    from mnnpy.schema import mnn_generated as fb

    b = flatbuffers.Builder(0)
    fb.NamedAttrListStart(b)
    node = fb.NamedAttrListEnd(b)
    for _ in range(levels):
        fb.AttributeStart(b)
        fb.AttributeAddFunc(b, node)
        attr = fb.AttributeEnd(b)
        fb.NamedAttrListStartAttrVector(b, 2)
        b.PrependUOffsetTRelative(attr)
        b.PrependUOffsetTRelative(attr)
        attrs = b.EndVector()
        fb.NamedAttrListStart(b)
        fb.NamedAttrListAddAttr(b, attrs)
        node = fb.NamedAttrListEnd(b)
    fb.AttributeStart(b)
    fb.AttributeAddFunc(b, node)
    top = fb.AttributeEnd(b)
    fb.ExtraStartAttrVector(b, 1)
    b.PrependUOffsetTRelative(top)
    extra_attrs = b.EndVector()
    fb.ExtraStart(b)
    fb.ExtraAddAttr(b, extra_attrs)
    extra = fb.ExtraEnd(b)
    fb.OpStart(b)
    fb.OpAddType(b, fb.OpType.Extra)
    fb.OpAddMainType(b, fb.OpParameter.Extra)
    fb.OpAddMain(b, extra)
    op = fb.OpEnd(b)
    fb.NetStartOplistsVector(b, 1)
    b.PrependUOffsetTRelative(op)
    ops = b.EndVector()
    fb.NetStart(b)
    fb.NetAddOplists(b, ops)
    b.Finish(fb.NetEnd(b))
    return bytes(b.Output())


def test_shared_subtables_cannot_blow_up_work() -> None:
    """A DAG of shared sub-tables is refused by the visit budget instead of unpacking 2**25 objects."""
    load_net(_shared_dag_net(3))  # small sharing is legal FlatBuffers and loads
    with pytest.raises(ModelError, match="too many objects"):
        load_net(_shared_dag_net(25))
