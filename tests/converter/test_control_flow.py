"""If with an LSTM in a branch fed from an outer-scope value that has no shape (the silero-vad structure).

The converter must derive the LSTM's sequence length from the graph (an Unsqueeze of the outer value gives 1) and,
as the branches give outputs of different shapes, emit MNN's If op with both branches as subgraphs. The .mnn runs
on mnnpy's Interpreter and is compared with onnxruntime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import runners

from .helpers import F, make_model, oh, onnx, rel_diff, run_ort

HIDDEN, FEATURES = 6, 4


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def rand(*shape: int) -> np.ndarray:
        return rng.uniform(-0.5, 0.5, shape).astype(np.float32)

    return {"w": rand(1, 4 * HIDDEN, FEATURES), "r": rand(1, 4 * HIDDEN, HIDDEN), "b": rand(1, 8 * HIDDEN),
            "axis0": np.array([0], np.int64)}


def _model(rng: np.random.Generator, with_state: bool) -> Any:
    # then: one LSTM step on x ([batch, features] from the outer scope, shape unknown) -> Y_h [batch, H]
    state = ["", "h0", "c0"] if with_state else []
    then_nodes = [
        oh.make_node("Unsqueeze", ["x", "axis0"], ["x3"]),
        oh.make_node("LSTM", ["x3", "w", "r", "b", *state], ["", "yh", "yc"], hidden_size=HIDDEN),
        oh.make_node("Squeeze", ["yh", "axis0"], ["h"]),
        oh.make_node("Squeeze", ["yc", "axis0"], ["c"]),
        oh.make_node("Add", ["h", "c"], ["out"]),
    ]
    then_branch = oh.make_graph(then_nodes, "then", [], [oh.make_tensor_value_info("out", F, None)])
    # else (x of rank 1): a different shape ([features]), so the branches cannot be merged by a Select
    else_branch = oh.make_graph([oh.make_node("Tanh", ["x"], ["other"])], "else", [],
                                [oh.make_tensor_value_info("other", F, None)])
    nodes = [*_rank_is(2, "x", "cond"),
             oh.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    inputs = [("x", F, None)]
    if with_state:
        inputs += [("h0", F, [1, None, HIDDEN]), ("c0", F, [1, None, HIDDEN])]
    return make_model(nodes, inputs, ["y"], {**_weights(rng), "two": np.int64(2)}, opset=13)


def _rank_is(rank: int, x: str, out: str) -> list[Any]:
    """cond = (rank(x) == rank), as torch exports `if x.dim() == 2` (the silero-vad form)."""
    assert rank == 2
    return [oh.make_node("Shape", [x], [f"{out}_shape"]), oh.make_node("Size", [f"{out}_shape"], [f"{out}_rank"]),
            oh.make_node("Equal", [f"{out}_rank", "two"], [out])]


def _run_mnnpy(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    got = runners.run(path, feeds, ["y"], dim=None, config={"backend": "CPU", "numThread": 1}, resize=True)
    return got["y"].astype(np.float32)


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
def test_if_lstm_outer_value_without_shape(with_state: bool, tmp_path: Path) -> None:
    from mnnpy.converter import convert
    from mnnpy.schema import mnn_generated as fb

    rng = np.random.default_rng(7)
    model = _model(rng, with_state)
    src, dst = tmp_path / "if_lstm.onnx", tmp_path / "if_lstm.mnn"
    onnx.save(model, str(src))
    net, _ = convert(src, dst)
    assert [op.type for op in net.oplists].count(fb.OpType.If) == 1
    assert {sg.name for sg in net.subgraphs} == {"y/then", "y/else"}
    for x_shape in ((1, FEATURES), (3, FEATURES), (FEATURES,)):  # rank 2: the LSTM branch; rank 1: the other
        batch = x_shape[0] if len(x_shape) == 2 else 1
        feeds = {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)}
        if with_state:
            feeds["h0"] = rng.uniform(-1, 1, (1, batch, HIDDEN)).astype(np.float32)
            feeds["c0"] = rng.uniform(-1, 1, (1, batch, HIDDEN)).astype(np.float32)
        (ref,) = run_ort(model, feeds)
        got = _run_mnnpy(dst, feeds)
        assert got.shape == ref.shape, f"x {x_shape}: shape {got.shape} != {ref.shape}"
        assert rel_diff(got, ref) <= 1e-4, f"x {x_shape}: rel diff {rel_diff(got, ref):.3g}"


def test_nested_if_reads_enclosing_branch_tensors(tmp_path: Path) -> None:
    """An If inside a branch reads a tensor made in the enclosing branch (its renamed name must be used)."""
    from mnnpy.converter import convert

    inner_then = oh.make_graph([oh.make_node("Unsqueeze", ["t", "axis0"], ["u"])], "inner_then", [],
                               [oh.make_tensor_value_info("u", F, None)])
    inner_else = oh.make_graph([oh.make_node("Identity", ["t"], ["v"])], "inner_else", [],
                               [oh.make_tensor_value_info("v", F, None)])
    outer_then = oh.make_graph([oh.make_node("Tanh", ["x"], ["t"]),
                                oh.make_node("If", ["c2"], ["w"], then_branch=inner_then, else_branch=inner_else)],
                               "outer_then", [], [oh.make_tensor_value_info("w", F, None)])
    outer_else = oh.make_graph([oh.make_node("Neg", ["x"], ["n"])], "outer_else", [],
                               [oh.make_tensor_value_info("n", F, None)])
    nodes = [*_rank_is(2, "x", "c1"), oh.make_node("Shape", ["x"], ["shape"]),
             oh.make_node("Gather", ["shape", "zero"], ["rows"]), oh.make_node("Equal", ["rows", "one"], ["c2"]),
             oh.make_node("If", ["c1"], ["y"], then_branch=outer_then, else_branch=outer_else)]
    model = make_model(nodes, [("x", F, None)], ["y"], {"two": np.int64(2), "one": np.int64(1), "zero": np.int64(0),
                                                         "axis0": np.array([0], np.int64)}, opset=13)
    src, dst = tmp_path / "nested.onnx", tmp_path / "nested.mnn"
    onnx.save(model, str(src))
    convert(src, dst)
    rng = np.random.default_rng(3)
    for x_shape in ((1, 3), (2, 3), (4,)):  # then-then, then-else, else
        feeds = {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)}
        (ref,) = run_ort(model, feeds)
        got = _run_mnnpy(dst, feeds)
        assert got.shape == ref.shape and rel_diff(got, ref) <= 1e-4, x_shape


def _loop_model(trips: str, with_scan: bool) -> Any:
    """y = x; repeat: y = y * 2 + bias (bias read from the outer scope); cond_out = sum(y) < limit (or true).

    Body inputs (i, cond, y); outputs (cond, y[, scan = y + i]).
    """
    body_nodes = [oh.make_node("Mul", ["y_in", "two_f"], ["y2"]), oh.make_node("Add", ["y2", "bias"], ["y_out"]),
                  oh.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
                  oh.make_node("Less", ["total", "limit"], ["cond_out"])]
    outs = [oh.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
            oh.make_tensor_value_info("y_out", F, None)]
    if with_scan:
        body_nodes += [oh.make_node("Cast", ["i"], ["i_f"], to=F), oh.make_node("Add", ["y_out", "i_f"], ["scan"])]
        outs.append(oh.make_tensor_value_info("scan", F, None))
    body = oh.make_graph(body_nodes, "body", [oh.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                                              oh.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, []),
                                              oh.make_tensor_value_info("y_in", F, None)], outs)
    node = oh.make_node("Loop", [trips, "", "x"], ["y", "ys"] if with_scan else ["y"], body=body)
    nodes = [oh.make_node("Neg", ["x0"], ["bias"]), node]
    inputs = [("x", F, [2, 3]), ("x0", F, [2, 3])] + ([("m", onnx.TensorProto.INT64, [])] if trips == "m" else [])
    outputs = ["y", "ys"] if with_scan else ["y"]
    inits = {"two_f": np.float32(2), "limit": np.float32(1e4)} | ({"four": np.int64(4)} if trips == "four" else {})
    return make_model(nodes, inputs, outputs, inits, opset=13)


def _run_mnnpy_all(path: Path, feeds: dict[str, np.ndarray], outputs: list[str]) -> list[np.ndarray]:
    from mnnpy.core.session import Session
    from mnnpy.interpreter import Interpreter

    net = Interpreter(str(path)).net
    names = [str(t) for t in net.tensorName]
    session = Session(net, {"backend": "CPU", "outputPaths": outputs},
                      {names.index(k): tuple(v.shape) for k, v in feeds.items()})
    for name, value in feeds.items():
        session.write(names.index(name), value)
    session.run()
    return [np.array(session.read(names.index(o))) for o in outputs]


@pytest.mark.parametrize("trip_count", [0, 1, 5])
def test_loop_runtime_trip_count_as_while(trip_count: int, tmp_path: Path) -> None:
    """Loop with M a graph input -> MNN's While (ONNX Loop form, the outer value `bias` carried through); mnnpy's
    runtime iterates the body session; carried value and stacked scan output equal onnxruntime's."""
    from mnnpy.converter import convert
    from mnnpy.schema import mnn_generated as fb

    model = _loop_model("m", with_scan=True)
    src, dst = tmp_path / "loop.onnx", tmp_path / "loop.mnn"
    onnx.save(model, str(src))
    net, _ = convert(src, dst)
    (loop_op,) = [op for op in net.oplists if op.type == fb.OpType.While]
    assert [sg.name for sg in net.subgraphs] == [loop_op.main.bodyGraph]
    body = net.subgraphs[0]
    assert len(body.inputs) == 4 and len(body.outputs) == 4  # (i, cond, y, bias) -> (cond, y, bias, scan)
    assert len(loop_op.inputIndexes) == 4 and len(loop_op.outputIndexes) == 3
    rng = np.random.default_rng(5)
    feeds = {"x": rng.uniform(-1, 1, (2, 3)).astype(np.float32), "x0": rng.uniform(-1, 1, (2, 3)).astype(np.float32),
             "m": np.array(trip_count, np.int64)}
    refs = run_ort(model, feeds)
    gots = _run_mnnpy_all(dst, feeds, ["y", "ys"])
    if trip_count == 0:  # onnxruntime gives the empty scan output shape (0,) (it warns it cannot know (0, 2, 3))
        assert gots[1].shape == (0, 2, 3) and refs[1].size == 0
        refs, gots = refs[:1], gots[:1]
    for ref, got in zip(refs, gots, strict=True):
        assert got.shape == ref.shape and rel_diff(got, ref) <= 1e-6


def test_loop_ended_by_condition(tmp_path: Path) -> None:
    """Loop without M, stopped by its condition (sum(y) >= 1e4 after a data-dependent number of iterations)."""
    from mnnpy.converter import convert

    model = _loop_model("", with_scan=False)
    src, dst = tmp_path / "loop.onnx", tmp_path / "loop.mnn"
    onnx.save(model, str(src))
    convert(src, dst)
    for scale in (1.0, 30.0):
        feeds = {"x": np.full((2, 3), scale, np.float32), "x0": np.full((2, 3), -0.5, np.float32)}
        (ref,) = run_ort(model, feeds)
        (got,) = _run_mnnpy_all(dst, feeds, ["y"])
        assert got.shape == ref.shape and rel_diff(got, ref) <= 1e-6, scale


def test_loop_constant_trip_count_is_unrolled(tmp_path: Path) -> None:
    """M a constant 4 with a condition that cannot stop it early -> unrolled (no While), so official MNN's Session
    runs it; equal to onnxruntime there."""
    from mnnpy.schema import mnn_generated as fb

    from .helpers import check_model

    model = _loop_model("four", with_scan=True)
    # the condition output becomes the condition input passed through: the loop always runs M times
    body = model.graph.node[1].attribute[0].g
    body.output[0].name = "cond_in"
    rng = np.random.default_rng(9)
    feeds = {"x": rng.uniform(-1, 1, (2, 3)).astype(np.float32), "x0": rng.uniform(-1, 1, (2, 3)).astype(np.float32)}
    net = check_model(model, feeds, tmp_path)
    assert fb.OpType.While not in [op.type for op in net.oplists]


def _scan_model() -> Any:
    """Scan over x [T (run-time), 2, 3] (reversed) and z [T, 3]: state s += x_t * 2 + z_t; scan outputs s
    (stacked on axis 1) and x_t - s (reversed)."""
    body = oh.make_graph(
        [oh.make_node("Mul", ["xt", "two_f"], ["x2"]), oh.make_node("Add", ["x2", "zt"], ["inc"]),
         oh.make_node("Add", ["s_in", "inc"], ["s_out"]), oh.make_node("Identity", ["s_out"], ["scan_s"]),
         oh.make_node("Sub", ["xt", "s_out"], ["scan_d"])], "scan_body",
        [oh.make_tensor_value_info("s_in", F, [2, 3]), oh.make_tensor_value_info("xt", F, [2, 3]),
         oh.make_tensor_value_info("zt", F, [3])],
        [oh.make_tensor_value_info(n, F, [2, 3]) for n in ("s_out", "scan_s", "scan_d")])
    node = oh.make_node("Scan", ["s0", "x", "z"], ["s", "ss", "ds"], body=body, num_scan_inputs=2,
                        scan_input_directions=[1, 0], scan_output_axes=[1, 0], scan_output_directions=[0, 1])
    return make_model([node], [("s0", F, [2, 3]), ("x", F, ["T", 2, 3]), ("z", F, ["T", 3])], ["s", "ss", "ds"],
                      {"two_f": np.float32(2)}, opset=16)


def test_scan_with_run_time_length_runs_as_while(tmp_path: Path) -> None:
    """A Scan whose length is unknown when converting becomes MNN's While (no unrolling); equal to onnxruntime for
    several lengths in one file, reversed input and output and a scan output stacked on axis 1 included."""
    from mnnpy.converter import convert
    from mnnpy.schema import mnn_generated as fb

    model = _scan_model()
    src, dst = tmp_path / "scan.onnx", tmp_path / "scan.mnn"
    onnx.save(model, str(src))
    net, _ = convert(src, dst)
    assert [op.type for op in net.oplists].count(fb.OpType.While) == 1
    rng = np.random.default_rng(11)
    for steps in (1, 4, 7):
        feeds = {"s0": rng.uniform(-1, 1, (2, 3)).astype(np.float32),
                 "x": rng.uniform(-1, 1, (steps, 2, 3)).astype(np.float32),
                 "z": rng.uniform(-1, 1, (steps, 3)).astype(np.float32)}
        refs = run_ort(model, feeds)
        gots = _run_mnnpy_all(dst, feeds, ["s", "ss", "ds"])
        for name, ref, got in zip(("s", "ss", "ds"), refs, gots, strict=True):
            assert got.shape == ref.shape and rel_diff(got, ref) <= 1e-5, (steps, name)


def test_if_branch_shape_from_an_outer_input_value(tmp_path: Path) -> None:
    """An If whose branch reshapes to a shape given as a graph input: planning the branch needs that input's
    value, which the session takes from the fed inputs (before, the need stopped inside the branch as a plain
    error), against onnxruntime for two shapes and both branches."""
    from .onnx_backend import BACKENDS

    then_b = oh.make_graph([oh.make_node("Reshape", ["x", "s"], ["t"])], "then", [],
                           [oh.make_tensor_value_info("t", F, None)])
    else_b = oh.make_graph([oh.make_node("Mul", ["x", "two"], ["x2"]), oh.make_node("Reshape", ["x2", "s"], ["e"])],
                           "else", [], [oh.make_tensor_value_info("e", F, None)])
    node = oh.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)
    model = make_model([node], [("x", F, [12]), ("s", onnx.TensorProto.INT64, [2]), ("c", onnx.TensorProto.BOOL, [])],
                       ["y"], {"two": np.array(2.0, np.float32)}, 13)
    rep = BACKENDS["mnnpy"].prepare(model)
    x = np.arange(12, dtype=np.float32)
    for shape, cond in (([3, 4], True), ([2, 6], False)):
        feeds = {"x": x, "s": np.array(shape, np.int64), "c": np.array(cond)}
        got, ref = rep.run(feeds)[0], run_ort(model, feeds)[0]
        assert got.shape == ref.shape and rel_diff(got, ref) == 0.0
