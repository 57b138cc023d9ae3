"""clone, randomuniform and the executor settings (gc, set_thread_number, lazy_eval, set_lazy_mode)."""

from __future__ import annotations

import numpy as np
import pytest
from support import official

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use
from mnnpy.expr import graph


def test_clone_shallow_shares_and_deep_copies() -> None:
    x = F.placeholder([2, 2])
    x.write(np.arange(4, dtype=np.float32).reshape(2, 2))
    shallow, deep = F.clone(x), F.clone(x, True)
    x.write(np.full((2, 2), 9.0, np.float32))
    np.testing.assert_array_equal(shallow.read(), np.full((2, 2), 9.0))
    np.testing.assert_array_equal(deep.read(), np.arange(4).reshape(2, 2))
    assert deep.op_type == "Const"


def test_randomuniform_range_dtype_and_core_op() -> None:
    v = F.randomuniform([3, 5000], F.float, -2.0, 3.0)
    assert v.op_type == "RandomUniform"
    r = v.read()
    assert r.shape == (3, 5000) and r.dtype == np.float32 and r.min() >= -2.0 and r.max() < 3.0
    assert abs(float(r.mean()) - 0.5) < 0.05  # uniform on [-2, 3): mean 0.5, std of the mean ~0.012
    assert F.randomuniform([4], F.float, 0.0, 1.0, 0, 0).read()[0] == np.float32(16806 / 2147483646)  # minstd_rand0


@pytest.mark.parametrize(("shape", "dt", "low", "high", "seeds"),
                         [([7], "float", 0.0, 1.0, (0, 1)), ([2, 3000], "float", -2.0, 3.0, (0, 0)),
                          ([5000], "float", 1.0, 1.5, (4, 9)), ([3, 4], "int", 0.0, 10.0, (0, 1)),
                          ([9], "int", -5.0, 5.0, (0, 0))])
def test_randomuniform_draws_what_official_mnn_draws(shape: list, dt: str, low: float, high: float,
                                                      seeds: tuple) -> None:
    mnn = official.require_mnn()
    theirs = np.asarray(mnn.expr.randomuniform(shape, getattr(mnn.expr, dt), low, high, *seeds).read())
    ours = F.randomuniform(shape, getattr(F, dt), low, high, *seeds).read()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_executor_settings_replan_and_keep_results() -> None:
    x = F.const(np.linspace(-1, 1, 100, dtype=np.float32), [100])
    y = F.tanh(x) * 2.0
    ref = y.read().copy()
    plans = graph.COUNTERS["plans"]
    F.set_thread_number(2)
    try:
        np.testing.assert_allclose(F.tanh(x).read() * 2.0, ref, rtol=1e-6)
        assert graph.CONFIG["numThread"] == 2 and graph.COUNTERS["plans"] > plans
    finally:
        F.set_thread_number(1)
    F.lazy_eval(True)
    F.set_lazy_mode(1)
    z = F.tanh(x) * 2.0
    z.read()
    plans = graph.COUNTERS["plans"]
    F.gc(True)
    np.testing.assert_allclose((F.tanh(x) * 2.0).read(), ref, rtol=1e-6)
    assert graph.COUNTERS["plans"] == plans + 1  # gc dropped the cached plan
