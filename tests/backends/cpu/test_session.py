"""Session-level behaviour on the CPU backend: memory plan, forced conv algorithms, threads, leaks, errors."""

from __future__ import annotations

import gc
import os
import sys
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import mnnpy as MNN  # noqa: N812 - as official scripts do
from mnnpy.core.pipeline import UnsupportedOp
from mnnpy.core.session import Session

sys.path.insert(0, str(Path(__file__).parents[2] / "core"))
from netbuild import NetBuilder


def resnet_like(c: int = 8, blocks: int = 4, hw: int = 16) -> Any:
    """Stem conv + `blocks` residual blocks (conv-relu-conv-add-relu) + GAP + FC."""
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def conv(x: str, y: str, cin: int, cout: int, k: int = 3, relu: bool = True) -> None:
        w = nh.from_array((rng.standard_normal((cout, cin, k, k)) * (1.0 / np.sqrt(cin * k * k))).astype(np.float32),
                          f"{y}_w")
        b = nh.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), f"{y}_b")
        inits.extend([w, b])
        out = f"{y}_pre" if relu else y
        nodes.append(h.make_node("Conv", [x, w.name, b.name], [out], pads=[k // 2] * 4))
        if relu:
            nodes.append(h.make_node("Relu", [out], [y]))

    conv("x", "s", 3, c)
    cur = "s"
    for i in range(blocks):
        conv(cur, f"b{i}a", c, c)
        conv(f"b{i}a", f"b{i}b", c, c, relu=False)
        nodes.append(h.make_node("Add", [f"b{i}b", cur], [f"b{i}s"]))
        nodes.append(h.make_node("Relu", [f"b{i}s"], [f"b{i}"]))
        cur = f"b{i}"
    nodes.append(h.make_node("GlobalAveragePool", [cur], ["g"]))
    nodes.append(h.make_node("Flatten", ["g"], ["f"]))
    inits.append(nh.from_array((rng.standard_normal((10, c)) * 0.3).astype(np.float32), "fc"))
    nodes.append(h.make_node("Gemm", ["f", "fc"], ["y"], transB=1))
    graph = h.make_graph(nodes, "resnet", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, hw, hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    pytest.importorskip("MNN")
    import onnx
    from support.official import convert

    model = resnet_like()
    src = tmp_path_factory.mktemp("resnet") / "r.onnx"
    onnx.save(model, str(src))
    return model, convert(src, src.with_suffix(".mnn"))


def _run(interp: Any, s: Any, x: np.ndarray) -> np.ndarray:
    interp.getSessionInput(s).copyFrom(x)
    interp.runSession(s)
    return interp.getSessionOutput(s).getNumpyData()


def test_resnet_matches_and_arena_is_small(resnet: tuple, e2e: Any) -> None:
    model, path = resnet
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    interp = MNN.Interpreter(str(path))
    s = interp.createSession()
    np.testing.assert_allclose(_run(interp, s, x), e2e.ort(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)
    mem = s.info()["memory"]
    assert mem["arena_bytes"] < 0.4 * mem["tensor_bytes"], mem


@pytest.mark.parametrize("algo", ["im2col", "winograd:2", "winograd:4", "winograd:6"])
def test_forced_conv_algorithms(resnet: tuple, e2e: Any, algo: str) -> None:
    model, path = resnet
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    interp = MNN.Interpreter(str(path))
    s = interp.createSession({"convAlgorithm": algo})
    got = _run(interp, s, x)
    algos = {c.get("algorithm") for c in s.info()["commands"] if c["type"] == "Convolution"}
    assert algo.split(":")[0] in algos
    np.testing.assert_allclose(got, e2e.ort(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_two_threads_two_sessions(resnet: tuple) -> None:
    _, path = resnet
    interp = MNN.Interpreter(str(path))
    xs = [np.random.default_rng(i).standard_normal((1, 3, 16, 16)).astype(np.float32) for i in range(2)]
    config = {"numThread": 1}  # one BLAS thread: summation order, hence every bit, is reproducible
    want = [_run(interp, interp.createSession(config), x) for x in xs]
    sessions = [interp.createSession(config), interp.createSession(config)]
    got: list[list[np.ndarray]] = [[], []]

    def work(k: int) -> None:
        for _ in range(5):
            got[k].append(_run(interp, sessions[k], xs[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(2):
        for g in got[k]:
            np.testing.assert_array_equal(g, want[k])


def _rss() -> int | None:
    """Resident set size in bytes (Linux /proc), or None where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _pool_bytes() -> int:
    """Bytes touched in the current chunks of the process's weight and scratch pools (``memory.StaticPool``: each
    hands out fresh memory from an 8 MB chunk until it is full, the earlier chunk freed once its arrays die), in
    whole 2 MB pages: the sawtooth they add to the RSS whatever the sessions do."""
    from mnnpy.core import memory

    return sum(-(-pool.used // memory.HUGE) * memory.HUGE for pool in (memory.STATIC, memory.SCRATCH))


def test_sessions_do_not_leak(resnet: tuple) -> None:
    """200 Interpreters and 200 sessions created, run and dropped: traced Python memory and RSS stay flat."""
    _, path = resnet
    x = np.ones((1, 3, 16, 16), np.float32)
    interp = MNN.Interpreter(str(path))

    def cycle(i: int) -> None:
        it = MNN.Interpreter(str(path))
        s = it.createSession()
        _run(it, s, x)
        it.releaseSession(s)
        s2 = interp.createSession()  # and one more session of a long-lived Interpreter
        _run(interp, s2, x)
        interp.releaseSession(s2)

    tracemalloc.start()
    for i in range(10):  # warm caches (and tracemalloc's own tables)
        cycle(i)
    gc.collect()
    base = tracemalloc.take_snapshot()
    rss0, pools0 = _rss(), _pool_bytes()
    for i in range(200):  # 200 new Interpreters with a session each, and 200 sessions of one Interpreter
        cycle(i)
    gc.collect()
    rss1, pools1 = _rss(), _pool_bytes()
    grown = sum(st.size_diff for st in tracemalloc.take_snapshot().compare_to(base, "filename"))
    tracemalloc.stop()
    assert grown < 5 * 2**20, grown
    if rss0 is not None and rss1 is not None:
        grew = (rss1 - rss0) - (pools1 - pools0)  # less the pools' current chunks filling (or starting afresh)
        assert grew < 5 * 2**20, f"RSS grew by {grew / 2**20:.1f} MiB (pools {(pools1 - pools0) / 2**20:+.1f} MiB)"
    assert not interp.sessions


def test_unsupported_op_is_named() -> None:
    nb = NetBuilder()
    nb.input("x", (2, 3))
    nb.op(fb.OpType.Texture, ["x"], ["u"], name="my_texture")
    nb.outputs("u")
    with pytest.raises(UnsupportedOp, match="my_texture"):
        Session(nb.net)
    nb = NetBuilder()
    nb.input("x", (2, 3, 4))
    nb.op(fb.OpType.BatchNorm, ["x"], ["y"], name="gn_no_kernel")
    nb.outputs("y")
    with pytest.raises(ModelError, match="gn_no_kernel"):
        Session(nb.net)


def test_bad_reshape_is_a_model_error() -> None:
    nb = NetBuilder()
    nb.input("x", (2, 3))
    nb.const("s", np.array([4, 4]))
    nb.op(fb.OpType.Reshape, ["x", "s"], ["y"], name="bad_reshape")
    nb.outputs("y")
    with pytest.raises(ModelError, match="bad_reshape"):
        Session(nb.net)


def resnet18(hw: int = 224) -> Any:
    """ResNet-18's layer structure (random weights, BN folded away)."""
    rng = np.random.default_rng(11)
    inits, nodes, count = [], [], [0]

    def conv(x: str, cin: int, cout: int, k: int, s: int, relu: bool = True) -> str:
        count[0] += 1
        n = f"c{count[0]}"
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        inits.extend([nh.from_array(w, n + "w"), nh.from_array(np.zeros(cout, np.float32), n + "b")])
        nodes.append(h.make_node("Conv", [x, n + "w", n + "b"], [n], strides=[s, s], pads=[k // 2] * 4))
        if not relu:
            return n
        nodes.append(h.make_node("Relu", [n], [n + "r"]))
        return n + "r"

    x = conv("x", 3, 64, 7, 2)
    nodes.append(h.make_node("MaxPool", [x], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "mp", 64
    for cout, s in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]:
        b = conv(conv(x, cin, cout, 3, s), cout, cout, 3, 1, relu=False)
        sc = x if (s == 1 and cin == cout) else conv(x, cin, cout, 1, s, relu=False)
        nodes += [h.make_node("Add", [b, sc], [b + "a"]), h.make_node("Relu", [b + "a"], [b + "o"])]
        x, cin = b + "o", cout
    nodes += [h.make_node("GlobalAveragePool", [x], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
              h.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    inits.append(nh.from_array((rng.standard_normal((1000, 512)) * 0.01).astype(np.float32), "fc"))
    graph = h.make_graph(nodes, "r18", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, hw, hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


def test_resnet18_arena_under_40_percent(e2e: Any) -> None:
    x = np.random.default_rng(12).standard_normal((1, 3, 224, 224)).astype(np.float32)
    model = resnet18()
    interp = MNN.Interpreter(str(e2e.convert(model)))
    s = interp.createSession()
    np.testing.assert_allclose(_run(interp, s, x), e2e.ort(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)
    mem = s.info()["memory"]
    assert mem["arena_bytes"] < 0.4 * mem["tensor_bytes"], mem


def test_corrupted_models_fail_cleanly(resnet: tuple) -> None:
    """Byte-mutated .mnn files either run or raise ModelError naming what is wrong; nothing else escapes."""
    _, path = resnet
    data = path.read_bytes()
    rng = np.random.default_rng(13)
    outcomes = {"ok": 0, "error": 0}
    with np.errstate(all="ignore"):
        for _ in range(60):
            mutated = bytearray(data)
            for _ in range(3):
                mutated[int(rng.integers(0, len(mutated)))] = int(rng.integers(0, 256))
            try:
                interp = MNN.Interpreter(bytes(mutated))
                s = interp.createSession()
                for t in interp.getSessionInputAll(s).values():
                    t.copyFrom(np.ones(t.getShape(), np.float32))
                interp.runSession(s)
                outcomes["ok"] += 1
            except ModelError:
                outcomes["error"] += 1
    assert outcomes["ok"] + outcomes["error"] == 60


def test_release_session_frees_memory_at_once(resnet: tuple) -> None:
    _, path = resnet
    interp = MNN.Interpreter(str(path))
    gc.collect()
    tracemalloc.start()
    s = interp.createSession()
    _run(interp, s, np.ones((1, 3, 16, 16), np.float32))
    held = tracemalloc.get_traced_memory()[0]
    interp.releaseSession(s)
    freed = held - tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert freed > 0.8 * s.info()["memory"]["arena_bytes"], (held, freed)
    with pytest.raises(ModelError):
        interp.getSessionOutput(s).getNumpyData()


def test_three_d_convolution_input() -> None:
    """MNN reads a 3-D conv input as [N, C, H] with W = 1 (converted Conv1D inside subgraphs) and keeps rank 3."""
    rng = np.random.default_rng(14)
    nb = NetBuilder()
    nb.input("x", (2, 3, 17))
    p = fb.TensorConvertInfoT()
    p.source, p.dest = 0, 2
    nb.op(fb.OpType.ConvertTensor, ["x"], ["xc"], fb.OpParameter.TensorConvertInfo, p)
    conv = fb.Convolution2DT()
    conv.common = fb.Convolution2DCommonT()
    c = conv.common
    c.kernelX, c.kernelY, c.strideX, c.strideY, c.padX, c.padY = 1, 5, 1, 2, 0, 2
    c.dilateX = c.dilateY = c.group = 1
    c.inputCount, c.outputCount, c.pads = 3, 6, [2, 0, 2, 0]
    w = rng.standard_normal((6, 3, 5, 1)).astype(np.float32)
    conv.weight, conv.bias = w.ravel(), np.zeros(6, np.float32)
    nb.op(fb.OpType.Convolution, ["xc"], ["y"], fb.OpParameter.Convolution2D, conv)
    nb.outputs("y")
    s = Session(nb.net)
    x = rng.standard_normal((2, 3, 17)).astype(np.float32)
    s.write(s.input_index("x"), x)
    s.run()
    xp = np.pad(x, [(0, 0), (0, 0), (2, 2)])
    want = np.stack([np.einsum("nck,ock->no", xp[:, :, 2 * i: 2 * i + 5], w[..., 0]) for i in range(9)], axis=-1)
    got = s.read(s.output_index("y"))
    assert got.shape == (2, 6, 9)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
