"""`mnnpy bench`: the table with every engine present, missing peers reported, the per-op profile (no timing checks)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from support.models import bench_models

from mnnpy.cli.main import main

onnx = pytest.importorskip("onnx", reason="onnx not installed")
from onnx import TensorProto, numpy_helper  # noqa: E402
from onnx import helper as oh  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Conv 3x3 (8 -> 8, pad 1) + Relu + MaxPool 2x2 + 1x1 conv on a 1x8x12x12 input."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2, "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32), "w2")]
    nodes = [oh.make_node("Conv", ["x", "w1", "b1"], ["c"], name="conv3x3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             oh.make_node("Relu", ["c"], ["r"], name="relu"),
             oh.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             oh.make_node("Conv", ["p", "w2"], ["y"], name="conv1x1", kernel_shape=[1, 1])]
    graph = oh.make_graph(nodes, "tiny", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("bench") / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def _engine_rows(out: str) -> dict[str, str]:
    rows = {}
    for line in out.splitlines():
        head = line.split(" ", 1)[0]
        if head in ("mnnpy", "ort", "mnn", "mnn-cvt", "foo"):
            rows[head] = line
    return rows


def test_bench_table_with_peers(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("MNN")
    assert main(["bench", str(tiny), "--runs", "2", "--warmup", "1", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = _engine_rows(out)
    assert set(rows) == {"mnnpy", "ort", "mnn", "mnn-cvt"}, out
    assert "missing" not in out
    assert "median ms" in out and "ratios (mnnpy median / peer median" in out and "ort " in out
    assert "interleaved, mnnpy on cpu" in out
    assert "pre-inference (load + createSession) ms: mnnpy" in out
    assert "OpenBLAS core " in out  # the GEMM kernel family decides mnnpy's speed, so the header names it
    for name in ("ort", "mnn", "mnn-cvt"):  # same inputs, same answer
        assert float(rows[name].split()[-1]) < 1e-3, rows[name]
    assert (tmp_path / "tiny.mnnpy.mnn").exists() and (tmp_path / "tiny.official.mnn").exists()


def test_official_mnn_runs_our_file(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("MNN")
    assert main(["bench", str(tiny), "--runs", "2", "--warmup", "0", "--compare", "mnn",
                 "--workdir", str(tmp_path)]) == 0
    rows = _engine_rows(capsys.readouterr().out)
    assert set(rows) == {"mnnpy", "mnn"} and float(rows["mnn"].split()[-1]) < 1e-3
    assert not (tmp_path / "tiny.official.mnn").exists()


def test_missing_peer_is_reported_not_fatal(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    assert main(["bench", str(tiny), "--runs", "2", "--warmup", "0", "--compare", "ort,foo",
                 "--workdir", str(tmp_path)]) == 0
    rows = _engine_rows(capsys.readouterr().out)
    assert "missing: not installed" in rows["ort"]
    assert "missing: unknown engine" in rows["foo"]
    assert "median" not in rows["mnnpy"] and float(rows["mnnpy"].split()[1]) > 0


def test_mnn_file_runs_without_onnxruntime(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnnpy.converter import convert

    model = tmp_path / "tiny.mnn"
    convert(tiny, model)
    assert main(["bench", str(model), "--runs", "2", "--warmup", "0", "--compare", "ort"]) == 0
    rows = _engine_rows(capsys.readouterr().out)
    assert "mnnpy" in rows and "needs the .onnx" in rows["ort"] and "mnn-cvt" not in rows


def test_profile_lists_ops(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "ops.png"
    assert main(["bench", str(tiny), "--runs", "2", "--warmup", "0", "--compare", "", "--profile",
                 "--png", str(png), "--json", str(tmp_path / "r.json")]) == 0
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["engines"]["mnnpy"]["median_ms"] > 0 and len(record["ops"]) >= 4
    out = capsys.readouterr().out
    assert "per-op profile:" in out and "GFLOP/s" in out
    table = out.split("per-op profile:")[1].split("by type/algorithm")[0]
    assert table.count(" Convolution ") == 2 and " Pooling " in table
    assert "by type/algorithm" in out and "us per command" in out
    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in out and not png.exists()
    else:
        assert png.stat().st_size > 0


def test_profile_flops_and_threads(tiny: Path, tmp_path: Path) -> None:
    from mnnpy.converter import convert

    from mnnpy.bench import threads
    from mnnpy.bench.engines import MnnpyEngine, random_inputs
    from mnnpy.bench.profile import profile_session

    model = tmp_path / "t.mnn"
    convert(tiny, model)
    engine = MnnpyEngine(model, threads=1)
    engine.feed(random_inputs(engine.input_shapes()))
    ops = profile_session(engine.session, runs=2, warmup=0)
    convs = [o for o in ops if o.op_type == "Convolution"]
    assert [o.flops for o in convs] == [2 * 8 * 12 * 12 * 8 * 9, 2 * 4 * 6 * 6 * 8]
    assert all(o.ms >= 0 for o in ops) and all(o.flops == 0 for o in ops if o.op_type != "Convolution")
    before = threads.get_blas_threads()
    with threads.blas_threads(1):
        if threads.backend() != "none":
            assert threads.get_blas_threads() == 1
    assert threads.get_blas_threads() == before


@pytest.mark.parametrize("name, kwargs, shape", [
    ("unet_block", {"size": 12, "channels": 8}, (1, 8, 12, 12)),
    ("bert4l", {"seq": 6, "dim": 16, "heads": 2, "layers": 1}, (1, 6, 16)),
    ("vit_tiny", {"size": 32, "dim": 24, "heads": 2, "layers": 1}, (1, 3, 32, 32)),
])
def test_bench_models_convert_and_match_onnxruntime(name: str, kwargs: dict, shape: tuple, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from mnnpy.converter import convert

    from mnnpy.bench.engines import MnnpyEngine

    src = getattr(bench_models(), name)(tmp_path / f"{name}.onnx", **kwargs)
    convert(src, tmp_path / f"{name}.mnn")
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    engine = MnnpyEngine(tmp_path / f"{name}.mnn", threads=1)
    engine.feed({"input": x})
    engine.run()
    expected = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    np.testing.assert_allclose(engine.output(), expected, rtol=1e-3, atol=1e-4)


def test_blas_core_names_the_kernels_and_any_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header says which OpenBLAS kernels numpy runs, and says so when OPENBLAS_CORETYPE pins them."""
    from mnnpy.bench import threads

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    pinned = threads.blas_core()
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    free = threads.blas_core()
    assert pinned.startswith("OpenBLAS core ") and pinned.endswith("(pinned by OPENBLAS_CORETYPE=Haswell)")
    assert free.startswith("OpenBLAS core ") and "pinned" not in free
    assert "unknown" not in free  # numpy's wheels bundle OpenBLAS, whose core name ctypes reads


def test_cpu_name_gives_the_model_and_the_simd_numpy_found() -> None:
    """The header names the CPU and the widest vector extension numpy's own loops use (exp/tanh speed depends on
    it); on x86 that is what numpy's CPU-feature table says."""
    from mnnpy.bench import threads

    name = threads.cpu_name()
    found = np._core._multiarray_umath.__cpu_features__
    want = "AVX-512" if found.get("AVX512F") else "AVX2" if found.get("AVX2") else None
    if want is not None:
        assert name.endswith(f", {want}"), name
    assert not name.startswith(",")  # a model name (or the platform's) comes first
    assert ("no SIMD" in name) == (not any(found.get(key) for key, _ in threads._SIMD))


def test_thread_counts_interleaved_with_scaling(tiny: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`--threads 1,2`: one table per count from the same rounds, then each engine's speed-up; JSON per count."""
    pytest.importorskip("onnxruntime")
    record_path = tmp_path / "r.json"
    assert main(["bench", str(tiny), "--threads", "1,2", "--runs", "3", "--warmup", "1", "--compare", "ort",
                 "--workdir", str(tmp_path), "--json", str(record_path)]) == 0
    out = capsys.readouterr().out
    assert "1 thread(s), 3 runs" in out and "2 thread(s), 3 runs" in out and "in the same rounds as" in out
    scaling = out.split("thread scaling")[1].splitlines()
    rows = {line.split()[0]: line.split() for line in scaling[2:] if line.strip()}
    assert set(rows) == {"mnnpy", "ort"}
    for cells in rows.values():
        assert cells[1:4] == ["1", "->", "2"] and float(cells[4].rstrip("x")) > 0 and float(cells[5].rstrip("x")) > 0
    record = json.loads(record_path.read_text())
    assert record["threads"] == [1, 2] and [r["threads"] for r in record["by_threads"]] == [1, 2]
    assert {r["engine"] for r in record["scaling"]} == {"mnnpy", "ort"}
    for by in record["by_threads"]:
        assert by["engines"]["mnnpy"]["median_ms"] > 0 and by["engines"]["ort"]["max_rel_diff"] < 1e-3


def test_paired_speedup_cancels_a_drift() -> None:
    """Each round's ratio is taken within the round: a machine that slows 2x halfway leaves the paired figure exact,
    while the medians of the two counts mix slow and fast rounds."""
    from mnnpy.bench.measure import Stats, scaling_record

    one = [10.0] * 5 + [20.0] * 6
    two = [5.0] * 5 + [10.0] * 6
    rows = scaling_record([(1, [Stats("mnnpy", one, 0, 0)]), (2, [Stats("mnnpy", two, 0, 0)])])
    assert rows == [{"engine": "mnnpy", "from_threads": 1, "threads": 2, "speedup_medians": 2.0,
                     "speedup_paired": 2.0}]
    drift = scaling_record([(1, [Stats("x", [10.0, 20.0, 20.0], 0, 0)]), (2, [Stats("x", [5.0, 5.0, 10.0], 0, 0)])])
    assert drift[0]["speedup_paired"] == 2.0 and drift[0]["speedup_medians"] == 4.0


@pytest.mark.parametrize("text", ["0", "1,1", "two", ""])
def test_bad_thread_counts_are_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "model.onnx", "--threads", text])
    assert exc.value.code == 2 and "thread counts" in capsys.readouterr().err


def test_bench_value_shaped_net_runs_as_segments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A net whose shapes depend on values it computes (Relu -> NonZero -> GatherND) is timed through a Module's
    segments: a session would fold it whole with the first input's values and time nothing. Official MNN, whose
    Session API refuses the net, runs it through its Module API. The outputs agree (the table's max rel diff) and
    the profile is declined, saying why."""
    pytest.importorskip("onnxruntime")
    nodes = [oh.make_node("Relu", ["x"], ["r"]), oh.make_node("NonZero", ["r"], ["nz"]),
             oh.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]), oh.make_node("GatherND", ["x", "idx"], ["y"])]
    graph = oh.make_graph(nodes, "nz", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "nz.onnx"
    onnx.save(model, str(path))
    peers = ["ort"] + (["mnn"] if importlib.util.find_spec("MNN") else [])  # official MNN: through its Module API
    args = ["bench", str(path), "--runs", "3", "--warmup", "1", "--compare", ",".join(peers), "--profile",
            "--workdir", str(tmp_path), "--json", str(tmp_path / "r.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "as a Module's segments" in out and "no per-op profile" in out, out
    assert "missing" not in out, out
    record = json.loads((tmp_path / "r.json").read_text())
    for peer in peers:
        assert record["engines"][peer]["max_rel_diff"] <= 1e-6, record
