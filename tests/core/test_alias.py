"""Aliased copies: a byte-identical Raster (NCHW <-> NC4HW4 [N, C%4==0, 1, 1] around MatMuls converted to 1x1
convolutions) shares its input's memory and leaves the run list, only where that is safe; outputs match numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnnpy.core import schedule
from mnnpy.interpreter import Interpreter

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

RNG = np.random.default_rng(11)
W1 = RNG.standard_normal((16, 12)).astype(np.float32) / 4
W2 = RNG.standard_normal((12, 12)).astype(np.float32) / 4


def _model(tmp_path: Path, save_a: bool = False) -> Path:
    """x [1, 8, 16] -> a = x @ W1 -> a long chain on a (Sin, Abs, Neg, @ W2) -> y = chain + a: `a` is an aliased copy
    of the convolution's output whose last reader comes long after the copy."""
    from mnnpy.converter import convert

    nodes = [h.make_node("MatMul", ["x", "w1"], ["a"]), h.make_node("Sin", ["a"], ["s1"]),
             h.make_node("Abs", ["s1"], ["s2"]), h.make_node("Neg", ["s2"], ["s3"]),
             h.make_node("MatMul", ["s3", "w2"], ["s4"]), h.make_node("Add", ["s4", "a"], ["y"])]
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None)]
    if save_a:
        outputs.append(h.make_tensor_value_info("a", T.FLOAT, None))
    graph = h.make_graph(nodes, "m", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 16])], outputs,
                         [nh.from_array(W1, "w1"), nh.from_array(W2, "w2")])
    path = tmp_path / f"m{int(save_a)}.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    convert(path, path.with_suffix(".mnn"))
    return path.with_suffix(".mnn")


def _reference(x: np.ndarray) -> np.ndarray:
    a = x.astype(np.float64) @ W1
    return -np.abs(np.sin(a)) @ W2 + a


def _run(interp: Interpreter, session: object, x: np.ndarray, name: str | None = None) -> np.ndarray:
    interp.getSessionInput(session).copyFrom(x)
    interp.runSession(session)
    return np.array(interp.getSessionOutput(session, name).getNumpyData())


def test_byte_identical_copies_share_memory_and_leave_the_run_list(tmp_path: Path) -> None:
    interp = Interpreter(str(_model(tmp_path)))
    session = interp.createSession({"numThread": 1})
    info = session.info()
    aliased = [c for c in info["commands"] if c.get("algorithm") == "alias"]
    assert aliased and info["memory"]["aliased"] == len(aliased)
    assert len(info["commands"]) == len(session.commands) + len(aliased)
    assert all(c.op_type != schedule.RASTER or c.execution.algorithm != "raster-copy" or
               c.inputs[0] in session.graph.inputs or c.outputs[0] in session.graph.outputs
               for c in session.commands)  # every remaining flat copy touches a graph input or output
    for c in session.scheduler.listed:
        if c not in session.commands:
            src, dst = session.tensor_ref(c.inputs[0]), session.tensor_ref(c.outputs[0])
            assert np.shares_memory(src.array, dst.array)
    for seed in (1, 2):  # fresh inputs each run: no stale bytes
        x = np.random.default_rng(seed).standard_normal((1, 8, 16)).astype(np.float32)
        np.testing.assert_allclose(_run(interp, session, x).reshape(1, 8, 12), _reference(x), rtol=1e-5, atol=1e-5)


def test_lifetimes_merge_so_a_late_reader_sees_the_shared_bytes(tmp_path: Path, monkeypatch) -> None:
    """With the copy gone the convolution output's memory must live until `a`'s last reader (the Add): planned
    without merged lifetimes, Sin/Abs/Neg reuse it and the result is wrong, which this test sees."""
    x = np.random.default_rng(3).standard_normal((1, 8, 16)).astype(np.float32)
    interp = Interpreter(str(_model(tmp_path)))
    session = interp.createSession({"numThread": 1})
    np.testing.assert_allclose(_run(interp, session, x).reshape(1, 8, 12), _reference(x), rtol=1e-5, atol=1e-5)
    with monkeypatch.context() as m:  # the same session planned with aliasing off: identical output bytes
        m.setattr(schedule.Scheduler, "_aliases", lambda self, pinned: {})
        plain = interp.createSession({"numThread": 1})
    assert plain.info()["memory"]["aliased"] == 0
    np.testing.assert_array_equal(_run(interp, plain, x), _run(interp, session, x))


def test_no_alias_for_inputs_outputs_and_saved_tensors(tmp_path: Path) -> None:
    interp = Interpreter(str(_model(tmp_path, save_a=True)))
    session = interp.createSession({"numThread": 1})
    pinned = set(session.graph.inputs) | set(session.graph.outputs) | session.save
    for c in session.scheduler.listed:
        if c.info.get("algorithm") == "alias":
            assert not pinned & {c.inputs[0], c.outputs[0]}
    names = [session.names[i] for i in session.graph.outputs]
    assert "a" in names
    x = np.random.default_rng(4).standard_normal((1, 8, 16)).astype(np.float32)
    y = _run(interp, session, x, "y")
    a = np.array(interp.getSessionOutput(session, "a").getNumpyData())
    np.testing.assert_allclose(a.reshape(1, 8, 12), x.astype(np.float64) @ W1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.reshape(1, 8, 12), _reference(x), rtol=1e-5, atol=1e-5)
    saved = interp.createSession({"numThread": 1, "saveTensors": ["a"]})
    assert all(saved.names[c.outputs[0]] != "a" for c in saved.scheduler.listed if c.info.get("algorithm") == "alias")


def test_aliases_are_replanned_on_resize(tmp_path: Path) -> None:
    interp = Interpreter(str(_model(tmp_path)))
    session = interp.createSession({"numThread": 1})
    for rows in (5, 8, 3):
        interp.resizeTensor(interp.getSessionInput(session), (1, rows, 16))
        interp.resizeSession(session)
        assert session.info()["memory"]["aliased"] > 0
        x = np.random.default_rng(rows).standard_normal((1, rows, 16)).astype(np.float32)
        np.testing.assert_allclose(_run(interp, session, x).reshape(1, rows, 12), _reference(x), rtol=1e-5,
                                   atol=1e-5)
