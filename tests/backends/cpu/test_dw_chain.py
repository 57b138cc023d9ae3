"""NHWC chains through a depthwise convolution (`Convolution.fuse_between`): MobileNet's inverted residual (1x1
expand + ReLU6 -> depthwise 3x3 + ReLU6 -> 1x1 project) runs without the NC4HW4 round trips of its expanded tensors.
Checked against onnxruntime and against the same session's plain (callback) run, with stride 1 and 2, channel counts
that are not multiples of 4, and the cases that must not chain (two lanes, a command between the links)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnnpy.interpreter import Interpreter

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _model(tmp_path: Path, c: int, e: int, out: int, hw: int, stride: int, side_op: bool = False,
           stem: bool = False, batch: int = 1, expand_act: bool = True, k: int = 3, dilation: int = 1,
           keep_input: bool = False) -> Path:
    """x [1, C, HW, HW] -> expand 1x1 (E) -> ReLU6 -> depthwise 3x3 / stride -> ReLU6 -> project 1x1 (OUT), plus x
    when the shapes allow (a residual); ``side_op``: a Relu of x placed between the expand and the depthwise;
    ``stem``: a 3x3 stride-2 convolution (im2col) instead of the expand, on an input of 2 HW; ``expand_act``
    False: no ReLU6 after the expand (its bias alone must not leak into the depthwise's zero border); ``k`` x ``k``
    depthwise taps ``dilation`` apart (same padding); ``keep_input``: the block reads a 1x1 convolution of x, which a
    ReduceMean after the block also reads (so the block's output cannot take its memory in the arena)."""
    from mnnpy.converter import convert

    rng = np.random.default_rng(c * 100 + e + stride)
    k1 = 3 if stem else 1
    inits = [nh.from_array((rng.standard_normal((e, c, k1, k1)) / np.sqrt(c * k1 * k1)).astype(np.float32), "w1"),
             nh.from_array(rng.standard_normal(e).astype(np.float32), "b1"),
             nh.from_array((rng.standard_normal((e, 1, k, k)) / k).astype(np.float32), "w2"),
             nh.from_array(rng.standard_normal(e).astype(np.float32), "b2"),
             nh.from_array((rng.standard_normal((out, e, 1, 1)) / np.sqrt(e)).astype(np.float32), "w3"),
             nh.from_array(rng.standard_normal(out).astype(np.float32), "b3"),
             nh.from_array(np.array(0.0, np.float32), "lo"), nh.from_array(np.array(6.0, np.float32), "hi")]
    src = "x"
    if keep_input:
        inits.append(nh.from_array((rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(np.float32), "w0"))
        nodes0 = [h.make_node("Conv", ["x", "w0"], ["x0"], kernel_shape=[1, 1])]
        src = "x0"
    nodes = [h.make_node("Conv", [src, "w1", "b1"], ["a"], kernel_shape=[1, 1]) if not stem else
             h.make_node("Conv", [src, "w1", "b1"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             h.make_node("Clip", ["a", "lo", "hi"], ["a6"]) if expand_act else h.make_node("Identity", ["a"], ["a6"])]
    if side_op:
        nodes.append(h.make_node("Relu", ["x"], ["side"]))
    pad = dilation * (k // 2)
    nodes += [h.make_node("Conv", ["a6", "w2", "b2"], ["d"], kernel_shape=[k, k], pads=[pad] * 4,
                          strides=[stride, stride], dilations=[dilation] * 2, group=e),
              h.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
              h.make_node("Conv", ["d6", "w3", "b3"], ["p"], kernel_shape=[1, 1])]
    ohw = (hw - 1) // stride + 1
    if keep_input:
        nodes = nodes0 + nodes + [h.make_node("ReduceMean", ["x0"], ["m0"], axes=[1, 2, 3], keepdims=1),
                                  h.make_node("Add", ["p", "m0"], ["y"])]
    elif side_op:
        nodes.append(h.make_node("ReduceMean", ["side"], ["sm"], keepdims=1))
        nodes.append(h.make_node("Add", ["p", "sm"], ["y"]))
    elif stride == 1 and out == c and not stem:
        nodes.append(h.make_node("Add", ["p", "x"], ["y"]))
    else:
        nodes.append(h.make_node("Identity", ["p"], ["y"]))
    in_hw = 2 * hw if stem else hw
    graph = h.make_graph(nodes, "block", [h.make_tensor_value_info("x", T.FLOAT, [batch, c, in_hw, in_hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, [batch, out, ohw, ohw])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    src, dst = tmp_path / "block.onnx", tmp_path / "block.mnn"
    onnx.save(model, str(src))
    convert(str(src), str(dst))
    return src


def _run(src: Path, x: np.ndarray, threads: int = 1) -> tuple[np.ndarray, np.ndarray, object]:
    """(chained run, plain run with callbacks, session) of the converted block."""
    interp = Interpreter(str(src.with_suffix(".mnn")))
    session = interp.createSession({"numThread": threads})
    interp.getSessionInput(session).copyFrom(x)
    interp.runSession(session)
    fast = np.array(interp.getSessionOutput(session).getNumpyData(), copy=True)
    interp.runSessionWithCallBack(session, lambda *_: True, lambda *_: True)
    plain = np.array(interp.getSessionOutput(session).getNumpyData(), copy=True)
    return fast, plain, session


def _onnxruntime(src: Path, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime (the reference) is not installed")
    return ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize(("c", "e", "out", "hw", "stride", "batch", "k", "dilation"),
                         [(16, 96, 16, 14, 1, 1, 3, 1), (16, 96, 24, 15, 2, 1, 3, 1), (6, 30, 6, 9, 1, 1, 3, 1),
                          (5, 22, 7, 12, 2, 1, 3, 1), (24, 144, 24, 56, 1, 1, 3, 1), (8, 48, 8, 10, 1, 2, 3, 1),
                          (8, 48, 12, 11, 2, 3, 3, 1), (8, 40, 8, 13, 1, 1, 3, 2), (6, 36, 10, 13, 2, 1, 3, 2),
                          (8, 40, 8, 12, 1, 1, 5, 1), (8, 44, 12, 13, 2, 1, 5, 1), (8, 48, 8, 13, 1, 1, 3, 2),
                          (8, 32, 8, 14, 2, 2, 3, 2)])
def test_inverted_residual_chains_and_matches(tmp_path: Path, c: int, e: int, out: int, hw: int, stride: int,
                                              batch: int, k: int, dilation: int, cpu_impl: str) -> None:
    src = _model(tmp_path, c, e, out, hw, stride, batch=batch, k=k, dilation=dilation)
    x = np.random.default_rng(hw).standard_normal((batch, c, hw, hw)).astype(np.float32)
    fast, plain, session = _run(src, x)
    chained = [cmd for cmd in session.commands if id(cmd) in session.scheduler.fused]
    assert [c.op_type for c in chained] == [12, 13, 12], "expand, depthwise, project chained"
    fill = session.scheduler.fused[id(chained[0])]
    middle = session.scheduler.fused[id(chained[1])].__self__  # 3 x 3: the nine taps in one pass per chunk
    llvm = getattr(middle, "dw_llvm", None) is not None  # the LLVM-IR 3 x 3 kernel (channels in whole vectors)
    # the expand's ReLU6: in its own pass (numpy) or the packed GEMM's store (with the LLVM-IR depthwise), or
    # applied by the numba depthwise to each row it reads
    assert fill.func.__name__ == "_run_padded" and fill.args[2] == (cpu_impl == "numpy" or llvm)
    assert not llvm or (k == 3 and cpu_impl == "jit")
    project = session.scheduler.fused[id(chained[2])].func.__self__  # its bias + NC4HW4 store: one compiled pass
    assert (project.store_jit is not None) == (cpu_impl == "jit")
    kernel = getattr(getattr(middle, "jit_nhwc", None), "__name__", None)
    assert kernel == (None if cpu_impl == "numpy" else "depthwise3x3_nhwc" if k == 3 else "depthwise_nhwc")
    want = _onnxruntime(src, x)
    scale = max(float(np.abs(want).max()), 1.0)
    assert np.abs(fast - want).max() <= 1e-5 * scale
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * scale)
    interp = Interpreter(str(src.with_suffix(".mnn")))  # runs on new values in one session: clamped every run
    s2 = interp.createSession({"numThread": 1})
    for seed in (1, 2):
        x2 = np.random.default_rng(seed).standard_normal(x.shape).astype(np.float32) * 3
        interp.getSessionInput(s2).copyFrom(x2)
        interp.runSession(s2)
        got = interp.getSessionOutput(s2).getNumpyData()
        want2 = _onnxruntime(src, x2)
        assert np.abs(got - want2).max() <= 1e-5 * max(float(np.abs(want2).max()), 1.0)


@pytest.mark.parametrize(("stride", "hw", "batch"), [(1, 12, 1), (2, 15, 1), (2, 10, 2)])
def test_expand_writes_the_padded_input_itself(tmp_path: Path, stride: int, hw: int, batch: int,
                                               cpu_impl: str) -> None:
    """The expand GEMM writes the depthwise's zero-bordered input (column phases at stride 2) directly: its border
    stays exactly zero with an expand that has a bias and no activation, and the result matches onnxruntime."""
    src = _model(tmp_path, 8, 20, 12, hw, stride, batch=batch, expand_act=False)
    x = np.random.default_rng(hw + stride).standard_normal((batch, 8, hw, hw)).astype(np.float32)
    fast, plain, session = _run(src, x)
    runs = [fn for cmd in session.commands if (fn := session.scheduler.fused.get(id(cmd))) is not None]
    assert len(runs) == 3, "expand, depthwise, project chained"
    assert getattr(runs[0], "func", None).__name__ == "_run_padded" and runs[1].__name__ == "run_filled"
    want = _onnxruntime(src, x)
    scale = max(float(np.abs(want).max()), 1.0)
    assert np.abs(fast - want).max() <= 1e-5 * scale
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * scale)
    dw = runs[1].__self__  # the chain's own depthwise kernel: its padded input, as the expand left it
    assert (dw.jit is not None) == (cpu_impl == "jit")
    top, phases = dw.chain_rows, dw.phases
    assert phases.shape[0] == stride
    border = np.ones(phases.shape[:4], bool)
    for b, d0, _, count in dw.chain_phases:
        border[b, :, top:top + hw, d0:d0 + count] = False
    assert np.any(phases[~border]) and not np.any(phases[border]), "the zero border stays zero"


@pytest.mark.parametrize(("threads", "keep_input", "hw"), [(1, False, 28), (2, False, 28), (3, True, 13)])
def test_stem_chains_and_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int, keep_input: bool,
                                 hw: int, cpu_impl: str) -> None:
    """MobileNetV2's first block: the 3x3 / 2 stem (im2col) -> depthwise -> project; with lanes, each lane's stem
    convolves the input rows its band needs (its pads cut where the band is inside the image). On the model input
    the stem copies from the NCHW input itself (the input pack's run does nothing)."""
    from mnnpy.backends.cpu.ops import conv

    monkeypatch.setattr(conv, "CHAIN_LANE_MIN_FLOPS", 1.0)
    src = _model(tmp_path, 3, 32, 16, hw, 1, stem=True, keep_input=keep_input)
    x = np.random.default_rng(8).standard_normal((1, 3, 2 * hw, 2 * hw)).astype(np.float32)
    fast, plain, session = _run(src, x, threads=threads)
    chained = [cmd for cmd in session.commands if id(cmd) in session.scheduler.fused]
    assert [c.op_type for c in chained] == ([] if keep_input else [128]) + [12, 13, 12]  # (128: the input's Raster)
    assert chained[-3].info["algorithm"] == "im2col"
    run = session.scheduler.fused[id(chained[-3])]
    assert (getattr(run, "func", None) is not None and run.func.__name__ == "run_lanes") == (threads > 1)
    want = _onnxruntime(src, x)
    assert np.abs(fast - want).max() <= 1e-5 * max(float(np.abs(want).max()), 1.0)
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("c", "e", "out", "hw", "stride", "batch", "k", "dilation", "threads"),
                         [(16, 96, 16, 28, 1, 1, 3, 1, 2), (16, 96, 24, 15, 2, 1, 3, 1, 2),
                          (8, 48, 12, 11, 2, 3, 3, 1, 3), (8, 40, 8, 13, 1, 1, 3, 2, 2), (6, 36, 10, 13, 2, 1, 3, 2, 3),
                          (8, 40, 8, 12, 1, 2, 5, 1, 2), (8, 44, 12, 7, 2, 1, 5, 1, 4)])
@pytest.mark.parametrize("keep_input", [False, True])
def test_chain_split_over_lanes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c: int, e: int, out: int, hw: int,
                                stride: int, batch: int, k: int, dilation: int, threads: int, keep_input: bool,
                                cpu_impl: str) -> None:
    """numThread > 1: each lane runs its band of output rows through the whole chain (expand rows with their halo,
    depthwise, project): the expand command runs the lanes, the other two have nothing left to do; where the output
    has the input's memory (the block's input dies at the expand), the lanes meet again before the projects."""
    from mnnpy.backends.cpu.ops import conv

    monkeypatch.setattr(conv, "CHAIN_LANE_MIN_FLOPS", 1.0)  # lanes even for these small blocks
    src = _model(tmp_path, c, e, out, hw, stride, batch=batch, k=k, dilation=dilation, keep_input=keep_input)
    x = np.random.default_rng(hw).standard_normal((batch, c, hw, hw)).astype(np.float32)
    fast, plain, session = _run(src, x, threads=threads)
    chained = [cmd for cmd in session.commands if id(cmd) in session.scheduler.fused]
    assert [cmd.op_type for cmd in chained] == [12, 13, 12]
    runs = [session.scheduler.fused[id(cmd)] for cmd in chained]
    ohw = (hw - 1) // stride + 1
    assert runs[0].func.__name__ == "run_lanes" and len(runs[0].args[0]) == min(threads, ohw)
    x_view, y_view = chained[0].execution.x_view, chained[2].execution.y_view
    assert np.may_share_memory(x_view, y_view) != keep_input  # the two arena layouts a chain meets
    if keep_input:
        assert [r.__name__ for r in runs[1:]] == ["_nothing", "_nothing"]
    else:
        assert runs[1].func.__name__ == "run_lanes" and runs[2].__name__ == "_nothing"
    want = _onnxruntime(src, x)
    scale = max(float(np.abs(want).max()), 1.0)
    assert np.abs(fast - want).max() <= 1e-5 * scale
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * scale)
    interp = Interpreter(str(src.with_suffix(".mnn")))  # new values, same session: each lane clamps its rows anew
    s2 = interp.createSession({"numThread": threads})
    for seed in (1, 2, 3):  # run 1 records the hand-offs, runs 2-3 send lanes 1.. to worker processes (Linux)
        x2 = np.random.default_rng(seed).standard_normal(x.shape).astype(np.float32) * 3
        interp.getSessionInput(s2).copyFrom(x2)
        interp.runSession(s2)
        want2 = _onnxruntime(src, x2)
        got = interp.getSessionOutput(s2).getNumpyData()
        assert np.abs(got - want2).max() <= 1e-5 * max(float(np.abs(want2).max()), 1.0)
    procs = s2.main.lanes
    assert procs is None or procs.dispatched >= 2, "the chain's lanes ran in the worker processes"
    interp.releaseSession(s2)


def test_no_chain_with_lanes_or_a_command_between(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnnpy.backends.cpu.compute import blas
    from mnnpy.backends.cpu.ops import conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)  # lanes even for this small block
    monkeypatch.setattr(conv, "CHAIN_LANE_MIN_FLOPS", 1e12)  # ...but not for the chain as a whole
    x = np.random.default_rng(3).standard_normal((1, 16, 28, 28)).astype(np.float32)
    src = _model(tmp_path, 16, 96, 16, 28, 1)
    fast, plain, session = _run(src, x, threads=2)  # the depthwise splits its rows over two lanes: no chain
    assert not any(c.op_type == 13 for c in session.commands if id(c) in session.scheduler.fused)
    np.testing.assert_allclose(fast, _onnxruntime(src, x), rtol=1e-4, atol=1e-4)
    side = tmp_path / "side"
    side.mkdir()
    src = _model(side, 16, 96, 16, 28, 1, side_op=True)
    fast, plain, session = _run(src, x)
    types = [c.op_type for c in session.commands]
    dw = types.index(13)
    assert types[dw - 1] == 69 and types[dw - 2] == 12  # the Relu runs between the expand and the depthwise
    assert not session.scheduler.fused  # not consecutive: no chain
    np.testing.assert_allclose(fast, _onnxruntime(src, x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5)


def test_profile_times_the_chains(tmp_path: Path) -> None:
    """`mnnpy bench --profile` times what a plain run executes (the chains), marks the chained commands, restores
    the runs, and measures dispatch with the chains off (their work is not dispatch)."""
    from mnnpy.bench.profile import profile_session, profile_table, run_overhead

    src = _model(tmp_path, 24, 144, 24, 28, 1)
    x = np.random.default_rng(5).standard_normal((1, 24, 28, 28)).astype(np.float32)
    _, _, session = _run(src, x)
    fused = session.scheduler.fused
    before = dict(fused)
    ops = profile_session(session, runs=3, warmup=1)
    assert dict(fused) == before
    chained = [o for o in ops if o.algorithm.endswith("+")]
    assert [o.op_type for o in chained] == ["Convolution", "ConvolutionDepthwise", "Convolution"]
    assert all(o.ms > 0 for o in chained)
    assert "3 commands run as chains" in profile_table(ops)
    calls = {key: 0 for key in before}

    def counted(key: int) -> object:
        def run() -> None:
            calls[key] += 1
            before[key]()
        return run

    fused.update({key: counted(key) for key in before})
    try:
        run_overhead(session, runs=4)
    finally:
        fused.update(before)
    assert set(calls.values()) == {4}  # the timed runs only, not the 40 no-op runs


@pytest.mark.parametrize(("c", "hw", "batch", "relu"), [(16, 14, 1, False), (24, 9, 2, True), (8, 7, 1, False)])
def test_residual_add_fused_into_the_chain(tmp_path: Path, c: int, hw: int, batch: int, relu: bool,
                                           cpu_impl: str) -> None:
    """A block's residual Add on an internal NC4HW4 tensor (MobileNetV2's: x -> s, s -> expand -> depthwise ->
    project -> Add(s)): the chain's project stores its rows plus the residual (then the Add's ReLU) in one compiled
    pass and the Add does nothing (with the packed GEMM; numpy keeps the Add). Against onnxruntime and the plain
    run."""
    from mnnpy.backends.cpu.compute import packed_gemm
    from mnnpy.converter import convert

    rng = np.random.default_rng(c + hw)
    e = 6 * c

    def conv(name: str, cin: int, cout: int, k: int, group: int = 1) -> list:
        return [nh.from_array((rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(k * k * cin // group))
                              .astype(np.float32), f"w{name}"),
                nh.from_array(rng.standard_normal(cout).astype(np.float32), f"b{name}")]

    inits = conv("0", c, c, 1) + conv("1", c, e, 1) + conv("2", e, e, 3, e) + conv("3", e, c, 1) + \
        conv("o", c, c, 1) + [nh.from_array(np.float32(0), "lo"), nh.from_array(np.float32(6), "hi")]
    nodes = [h.make_node("Conv", ["x", "w0", "b0"], ["s"], kernel_shape=[1, 1]),
             h.make_node("Conv", ["s", "w1", "b1"], ["a"], kernel_shape=[1, 1]),
             h.make_node("Clip", ["a", "lo", "hi"], ["a6"]),
             h.make_node("Conv", ["a6", "w2", "b2"], ["d"], kernel_shape=[3, 3], pads=[1] * 4, group=e),
             h.make_node("Clip", ["d", "lo", "hi"], ["d6"]),
             h.make_node("Conv", ["d6", "w3", "b3"], ["p"], kernel_shape=[1, 1]),
             h.make_node("Add", ["p", "s"], ["q"]),
             h.make_node("Relu" if relu else "Identity", ["q"], ["z"]),
             h.make_node("Conv", ["z", "wo", "bo"], ["y"], kernel_shape=[1, 1])]
    graph = h.make_graph(nodes, "block", [h.make_tensor_value_info("x", T.FLOAT, [batch, c, hw, hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, [batch, c, hw, hw])], inits)
    src = tmp_path / "block.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(src))
    convert(str(src), str(src.with_suffix(".mnn")))
    x = rng.standard_normal((batch, c, hw, hw)).astype(np.float32)
    fast, plain, session = _run(src, x)
    fused = session.scheduler.fused  # type: ignore[attr-defined]
    adds = [cmd for cmd in session.commands if cmd.op_type == 7]  # type: ignore[attr-defined]
    assert len(adds) == 1 and (id(adds[0]) in fused) == packed_gemm.available()
    want = _onnxruntime(src, x)
    scale = max(float(np.abs(want).max()), 1.0)
    assert np.abs(fast - want).max() <= 1e-5 * scale
    np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * scale)
