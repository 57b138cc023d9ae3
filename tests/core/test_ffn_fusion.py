"""Chain runs (`Scheduler._fuse`, `Execution.fuse_between`): a transformer FFN (MatMul + bias -> GELU -> MatMul +
bias, converted to 1x1 convolutions around a UnaryOp GELU) runs with its hidden tensors transposed where the rule in
`compute.gemm` says so; plain runs, callback runs and unfused shapes all match float64."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import gemm

from mnnpy.interpreter import Interpreter

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _weights(k: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k * 7 + n)
    return [(rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            (rng.standard_normal((n, k)) / np.sqrt(n)).astype(np.float32), rng.standard_normal(k).astype(np.float32)]


def _model(tmp_path: Path, m: int, k: int, n: int, save_hidden: bool = False) -> Path:
    """x [1, M, K] -> FFN (GELU in ONNX's erf form, fused to one UnaryOp by the converter) -> y [1, M, K]."""
    from mnnpy.converter import convert

    w1, b1, w2, b2 = _weights(k, n)
    nodes = [h.make_node("MatMul", ["x", "w1"], ["a"]), h.make_node("Add", ["a", "b1"], ["hid"]),
             h.make_node("Div", ["hid", "sq2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
             h.make_node("Add", ["e", "one"], ["e1"]), h.make_node("Mul", ["hid", "e1"], ["p"]),
             h.make_node("Mul", ["p", "half"], ["g"]), h.make_node("MatMul", ["g", "w2"], ["c"]),
             h.make_node("Add", ["c", "b2"], ["y"])]
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None)]
    if save_hidden:
        outputs.append(h.make_tensor_value_info("g", T.FLOAT, None))
    consts = [nh.from_array(v, name) for v, name in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    consts += [nh.from_array(np.array(v, np.float32), name) for v, name in ((math.sqrt(2), "sq2"), (1.0, "one"),
                                                                             (0.5, "half"))]
    graph = h.make_graph(nodes, "ffn", [h.make_tensor_value_info("x", T.FLOAT, [1, m, k])], outputs, consts)
    path = tmp_path / f"ffn{m}_{k}_{n}_{int(save_hidden)}.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    convert(path, path.with_suffix(".mnn"))
    return path.with_suffix(".mnn")


def _reference(x: np.ndarray, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hidden before GELU, y) in float64."""
    w1, b1, w2, b2 = (v.astype(np.float64) for v in _weights(k, n))
    hid = x.astype(np.float64) @ w1 + b1
    erf = np.vectorize(math.erf)
    return hid, (0.5 * hid * (1 + erf(hid / math.sqrt(2)))) @ w2 + b2


def _session(path: Path) -> tuple[Interpreter, object]:
    interp = Interpreter(str(path))
    return interp, interp.createSession({"numThread": 1})


@pytest.mark.parametrize(("m", "k", "n"), [(128, 256, 1024), (16, 256, 1024)])
def test_ffn_runs_transposed_and_matches_float64(tmp_path: Path, m: int, k: int, n: int) -> None:
    interp, session = _session(_model(tmp_path, m, k, n))
    gelu = [c for c in session.commands if c.info.get("algorithm", "").startswith("gelu-erf")]
    assert len(gelu) == 1 and len(session.scheduler.fused) == 3  # both GEMMs and the GELU
    calls = []
    for key, run in list(session.scheduler.fused.items()):  # count the chain runs taken
        session.scheduler.fused[key] = lambda run=run, key=key: (calls.append(key), run())
    seen: dict[str, np.ndarray] = {}
    for seed in (0, 1):  # fresh inputs each run
        x = np.random.default_rng(seed).standard_normal((1, m, k)).astype(np.float32)
        hid, want = _reference(x, k, n)
        interp.getSessionInput(session).copyFrom(x)
        interp.runSession(session)
        got = np.array(interp.getSessionOutput(session).getNumpyData()).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
        assert len(calls) == 3 * (seed + 1)  # a run without callbacks took the chain's runs
        seen.clear()

        def after(cmd: object) -> bool:
            if cmd is gelu[0]:
                seen["hidden"] = session.read(cmd.inputs[0]).reshape(m, n)
            return True

        session.run(after=after)  # with a callback: every command plain, every tensor in its own layout
        assert len(calls) == 3 * (seed + 1)
        np.testing.assert_allclose(seen["hidden"], hid[0], rtol=2e-4, atol=2e-4)
        again = np.array(interp.getSessionOutput(session).getNumpyData()).reshape(want.shape)
        np.testing.assert_allclose(again, got, rtol=1e-5, atol=1e-5)  # both ways within float32 rounding


@pytest.mark.parametrize(("m", "k", "n", "save_hidden"), [
    (197, 192, 768, False),  # ViT-tiny's MLP: measured slower transposed (the rule in compute.gemm)
    (200, 256, 1024, False),  # more rows than FFN_MAX_ROWS
    (64, 256, 1024, True),  # the GELU output is a graph output: someone reads it
])
def test_ffn_left_plain_where_the_rule_or_a_reader_says_so(tmp_path: Path, m: int, k: int, n: int,
                                                            save_hidden: bool, cpu_impl: str) -> None:
    """Not transposed, and no pair runs either (a GEMM -> GELU pair with the bias in the compiled GELU's pass was
    measured neutral on ViT-tiny and dropped): the plain run and the run with callbacks match float64."""
    assert m > gemm.FFN_MAX_ROWS or k < gemm.FFN_MIN_CHANNELS or save_hidden
    interp, session = _session(_model(tmp_path, m, k, n, save_hidden))
    gelu = [c for c in session.commands if c.info.get("algorithm", "").startswith("gelu-erf")]
    fused = [c for c in session.commands if id(c) in session.scheduler.fused]
    before = session.commands[session.commands.index(gelu[0]) - 1]  # the up-projection GEMM
    assert len(gelu) == 1 and before.op_type == 12 and not fused
    seen: dict[str, np.ndarray] = {}

    def after(cmd: object) -> bool:
        if cmd is gelu[0]:
            seen["hidden"] = session.read(cmd.inputs[0]).reshape(m, n)
        return True

    for seed in (2, 3):
        x = np.random.default_rng(seed).standard_normal((1, m, k)).astype(np.float32)
        hid, want = _reference(x, k, n)
        interp.getSessionInput(session).copyFrom(x)
        interp.runSession(session)
        got = np.array(interp.getSessionOutput(session, "y").getNumpyData()).reshape(1, m, k)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
        seen.clear()

        session.run(after=after)  # with a callback: plain commands, the GEMM's own bias pass
        np.testing.assert_allclose(seen["hidden"], hid[0], rtol=2e-4, atol=2e-4)
        again = np.array(interp.getSessionOutput(session, "y").getNumpyData()).reshape(1, m, k)
        np.testing.assert_allclose(again, got, rtol=1e-5, atol=1e-5)


def test_static_pool_hands_out_zeroed_aligned_distinct_memory() -> None:
    """Weights from `memory.StaticPool`: zero-filled, 64-byte aligned, never overlapping, a new chunk when one is
    full, and a piece larger than a chunk gets a chunk of its own."""
    from mnnpy.core.memory import StaticPool

    pool = StaticPool(chunk=1 << 20)
    pieces = [pool.zeros((100, 33)), pool.zeros((5,), np.int32), pool.zeros((300, 300)), pool.zeros((700, 700))]
    for k, a in enumerate(pieces):
        assert a.flags.c_contiguous and a.ctypes.data % 64 == 0 and not np.any(a)
        a[...] = k + 1
        assert all(not np.shares_memory(a, b) for b in pieces[:k])
    assert [int(a.ravel()[0]) for a in pieces] == [1, 2, 3, 4]  # nothing written over
    assert pieces[3].nbytes > 1 << 20


def _residual_model(tmp_path: Path, m: int, k: int, n: int, computed: bool, relu: bool = False) -> Path:
    """x [1, M, K], r [1, M, N] -> MatMul + bias -> Add r (``computed``: Relu(r) instead, an intermediate whose
    memory the sum may take) -> y."""
    from mnnpy.converter import convert

    w, b = _weights(k, n)[:2]
    nodes = [h.make_node("MatMul", ["x", "w"], ["a"]), h.make_node("Add", ["a", "b"], ["p"])]
    if computed:
        nodes.append(h.make_node("Relu", ["r"], ["rr"]))
    nodes.append(h.make_node("Add", ["p", "rr" if computed else "r"], ["s" if relu else "y"]))
    if relu:  # the converter folds it into the Add (BinaryOp activationType 1)
        nodes.append(h.make_node("Relu", ["s"], ["y"]))
    graph = h.make_graph(nodes, "res", [h.make_tensor_value_info("x", T.FLOAT, [1, m, k]),
                                        h.make_tensor_value_info("r", T.FLOAT, [1, m, n])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], [nh.from_array(w, "w"), nh.from_array(b, "b")])
    path = tmp_path / f"res{m}_{k}_{n}_{int(computed)}_{int(relu)}.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    convert(path, path.with_suffix(".mnn"))
    return path.with_suffix(".mnn")


@pytest.mark.parametrize(("m", "k", "n", "computed", "relu"), [(197, 192, 192, False, False), (37, 64, 48, True, False),
                                                              (37, 64, 48, False, True)])
def test_gemm_bias_and_residual_add_in_one_pass(tmp_path: Path, m: int, k: int, n: int, computed: bool, relu: bool,
                                                cpu_impl: str) -> None:
    """With compiled kernels a flat GEMM -> Add(residual) pair runs the GEMM without its bias pass and adds GEMM
    output, bias and residual in one (`Binary.fuse_after`), whether the sum has its own memory or an operand's."""
    interp = Interpreter(str(_residual_model(tmp_path, m, k, n, computed, relu)))
    session = interp.createSession({"numThread": 1})
    fused = [c.execution.__class__.__name__ for c in session.commands if id(c) in session.scheduler.fused]
    assert fused == ([] if cpu_impl == "numpy" else ["Convolution", "Binary"])
    w, b = (v.astype(np.float64) for v in _weights(k, n)[:2])
    for seed in (4, 5):
        rng = np.random.default_rng(seed)
        x, r = rng.standard_normal((1, m, k)).astype(np.float32), rng.standard_normal((1, m, n)).astype(np.float32)
        interp.getSessionInput(session, "x").copyFrom(x)
        interp.getSessionInput(session, "r").copyFrom(r)
        interp.runSession(session)
        got = np.array(interp.getSessionOutput(session, "y").getNumpyData()).reshape(1, m, n)
        res = np.maximum(r, 0) if computed else r
        want = x.astype(np.float64) @ w + b + res
        np.testing.assert_allclose(got, np.maximum(want, 0) if relu else want, rtol=2e-5, atol=2e-5)


def test_bias_add_kernels_match_numpy() -> None:
    """The two compiled kernels of that pair: a separate output, and the sum written over an operand."""
    from mnnpy.backends.cpu.compute import jit

    if jit.kernels() is None:
        pytest.skip("numba (the `jit` extra) is not installed: the compiled kernels cannot run here")
    k = jit.kernels()
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 9, 20)).astype(np.float32)
    bias = rng.standard_normal(20).astype(np.float32)
    out = np.full_like(a, np.nan)
    k.bias_add3(jit.readonly(a), jit.readonly(bias), jit.readonly(b), out, np.float32(0.0), np.float32(np.inf))
    np.testing.assert_allclose(out, np.maximum(a + bias + b, 0), rtol=1e-6, atol=1e-6)  # float32 sum order
    into = b.copy()
    k.bias_add_into(jit.readonly(a), jit.readonly(bias), into, np.float32(-np.inf), np.float32(np.inf))
    np.testing.assert_allclose(into, a + bias + b, rtol=1e-6, atol=1e-6)
