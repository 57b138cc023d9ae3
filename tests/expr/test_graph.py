"""Var graphs run through the core: plan cache, no replanning, invalidation on write, replace / fix_as_*."""

from __future__ import annotations

import numpy as np
import pytest
from support import runners

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use
from mnnpy.core.session import COUNTERS as CORE
from mnnpy.expr.graph import COUNTERS


def test_second_evaluation_does_not_plan_again() -> None:
    x = F.placeholder([2, 3])
    y = F.exp(x) * 2.0 + F.reduce_sum(x, [1], True)
    x.write(np.arange(6, dtype=np.float32).reshape(2, 3))
    first = y.read().copy()
    plans, resizes, runs = COUNTERS["plans"], CORE["resizes"], COUNTERS["runs"]
    assert np.array_equal(y.read(), first)  # cached value: no run at all
    assert COUNTERS["runs"] == runs
    x.write(np.ones((2, 3), np.float32))  # new value, same shapes: run again, no planning
    ref = np.exp(np.ones((2, 3))) * 2 + 3
    np.testing.assert_allclose(y.read(), ref, rtol=1e-6)
    assert (COUNTERS["plans"], CORE["resizes"]) == (plans, resizes)
    assert COUNTERS["runs"] == runs + 1
    z = F.exp(x) * 2.0 + F.reduce_sum(x, [1], True)  # the same structure built again reuses the plan
    np.testing.assert_allclose(z.read(), ref, rtol=1e-6)
    assert (COUNTERS["plans"], CORE["resizes"]) == (plans, resizes)


def test_shape_values_computed_from_big_constants_stay_baked() -> None:
    big = F.const(np.full(100, 2, np.int32), [100], dtype=F.int)  # big enough to be fed, but a shape depends on it
    shape = F.const([4, 6], [2], dtype=F.int) * (big[:2] // 2)
    assert F.reshape(F.const(np.arange(24.0), [24]), shape).shape == [4, 6]


def test_placeholder_without_value_and_write_checks() -> None:
    x = F.placeholder([2], F.NCHW, F.int)
    y = x + 1
    with pytest.raises(Exception, match="no value"):
        y.read()
    x.write([4, 5])
    assert y.read().tolist() == [5, 6]
    assert y.dtype == F.int
    with pytest.raises(Exception, match="values"):
        x.write([1, 2, 3])
    with pytest.raises(Exception, match="placeholder or constant"):
        y.write([1, 2])


def test_replace_fix_and_properties() -> None:
    a = F.const([1.0, 2.0], [2])
    b = a * 3.0
    c = b + 1.0
    assert c.read().tolist() == [4.0, 7.0]
    assert (b.op_type, a.op_type, F.placeholder([1]).op_type) == ("BinaryOp", "Const", "Input")
    b.replace(F.const([10.0, 20.0], [2]))
    assert c.read().tolist() == [11.0, 21.0]  # dependents see the replacement
    b.fix_as_const()
    assert b.op_type == "Const" and c.read().tolist() == [11.0, 21.0]
    b.fix_as_placeholder()
    b.write([0.0, 1.0])
    assert b.op_type == "Input" and c.read().tolist() == [1.0, 2.0]
    s = F.scalar(2.5)
    assert (s.shape, s.ndim, s.size, float(s)) == ([], 0, 1, 2.5)
    m = F.const(np.zeros((2, 3, 4), np.float32), [2, 3, 4], F.NHWC)
    assert (m.data_format, m.shape, len(m), m.ndim) == (F.NHWC, [2, 3, 4], 2, 3)
    assert [v.shape for v in m] == [[3, 4], [3, 4]]
    assert np.asarray(m).shape == (2, 3, 4) and m.read_as_tuple() == (0.0,) * 24
    for shp in [(1, 2, 2, 3), (1, 8, 8, 3)]:  # small (baked) and big (fed) NHWC constants convert alike
        x = np.arange(np.prod(shp), dtype=np.float32).reshape(shp)
        np.testing.assert_array_equal(F.convert(F.const(x, shp, F.NHWC), F.NCHW).read(), x.transpose(0, 3, 1, 2))
    n = F.convert(F.const(np.ones((1, 3, 2, 2), np.float32)), F.NC4HW4)
    assert n.data_format == F.NC4HW4 and n.shape == [1, 3, 2, 2]


def test_indexing_matches_numpy() -> None:
    ref = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = F.const(ref)
    for index in [1, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (slice(1, None), slice(None, None, 2)),
                  (None, 0), (slice(None, None, -1), 0, slice(3, 0, -2)), (0, None, slice(None), 4)]:
        np.testing.assert_array_equal(x[index].read(), ref[index], err_msg=str(index))
    np.testing.assert_array_equal(x[[2, 0]].read(), ref[[2, 0]])
    y = F.const(ref.copy())
    y[1] = 7.0
    y[0, 1:3] = F.const(np.full((2, 5), -1.0, np.float32))
    expect = ref.copy()
    expect[1] = 7.0
    expect[0, 1:3] = -1.0
    np.testing.assert_array_equal(y.read(), expect)
    with pytest.raises(IndexError):
        x[3]
    np.testing.assert_array_equal(x[x > 30.0].read(), ref[ref > 30.0])
    np.testing.assert_array_equal(x[ref < 5].read(), ref[ref < 5])
    z = F.const(ref.copy())
    z[z > 30.0] = 0.0
    expect = ref.copy()
    expect[expect > 30.0] = 0.0
    np.testing.assert_array_equal(z.read(), expect)


def test_save_and_load_as_dict(tmp_path: object) -> None:
    x = F.placeholder([2, 3])
    x.name = "data"
    y = F.relu(F.matmul(x, F.const(np.eye(3, dtype=np.float32) * -1.0)))
    y.name = "prob"
    path = f"{tmp_path}/g.mnn"
    F.save([y], path)
    loaded = F.load_as_dict(path)
    inputs, outputs = F.get_inputs_and_outputs(loaded)
    assert list(inputs) == ["data"] and list(outputs) == ["prob"]
    inputs["data"].write(np.array([[1, -2, 3], [-4, 5, -6]], np.float32))
    np.testing.assert_array_equal(outputs["prob"].read(), [[0, 2, 0], [4, 0, 6]])
    mnn = pytest.importorskip("MNN", reason="official MNN wheel for the interop check")
    # MNN 3.6.1's own expr.load_as_dict(...).read() crashes here even on its converter's models: use a session
    interp = mnn.Interpreter(path)
    session = interp.createSession()
    data = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    interp.getSessionInput(session, "data").copyFrom(
        mnn.Tensor((2, 3), mnn.Halide_Type_Float, data, mnn.Tensor_DimensionType_Caffe))
    interp.runSession(session)
    np.testing.assert_array_equal(interp.getSessionOutput(session, "prob").getNumpyData(), [[0, 2, 0], [4, 0, 6]])


def test_executor_config_replans_and_keeps_results() -> None:
    from mnnpy.expr import graph

    x = F.const(np.arange(6.0, dtype=np.float32), [6])
    y = F.exp(x) + 1.0
    ref = y.read().copy()
    try:
        F.set_global_executor_config(F.CPU, F.High, 2)
        assert graph.CONFIG == {"backend": "CPU", "numThread": 2, "precision": "high"}
        np.testing.assert_allclose((F.exp(x) + 1.0).read(), ref, rtol=1e-6)
    finally:
        F.set_global_executor_config(F.CPU, F.Normal, 1)
    assert graph.CONFIG["numThread"] == 1


@pytest.mark.parametrize("backend", ["OPENCL", "VULKAN"])
def test_expressions_run_on_other_backends(backend: str) -> None:
    from mnnpy.expr import graph

    runners.require_backend(backend)
    rng = np.random.default_rng(0)
    data = rng.normal(size=(1, 5, 7, 6)).astype(np.float32)
    w = rng.normal(size=(4, 5, 3, 3)).astype(np.float32)

    def net() -> F.Var:
        x = F.placeholder([1, 5, 7, 6])
        x.write(data)
        conv = F.conv2d(x, F.const(w, w.shape), F.const(np.zeros(4, np.float32), [4]))
        return F.softmax(F.relu(conv), 1)

    ref = net().read()
    try:
        F.set_global_executor_config(getattr(F, backend), F.Normal, 1)
        y = net()
        np.testing.assert_allclose(y.read(), ref, rtol=1e-4, atol=1e-5)
        assert graph.plan([y]).session.main.name == backend.lower()
    finally:
        F.set_global_executor_config(F.CPU, F.Normal, 1)


def test_expr_exports_mnn_names() -> None:
    mnn = pytest.importorskip("MNN", reason="official MNN wheel lists the names")
    theirs = {n for n in dir(mnn.expr) if not n.startswith("_") and n != "np"}
    missing = sorted(theirs - set(dir(F)))
    assert not missing, missing
    members = {n for n in dir(mnn.expr.Var) if not n.startswith("_")}
    assert not sorted(members - set(dir(F.Var)))
