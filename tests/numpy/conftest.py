"""Shared comparison helper for mnnpy.numpy tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mnnpy.expr import Var


def to_host(x: Any) -> Any:
    """Vars (also inside tuples / lists) as numpy arrays."""
    if isinstance(x, Var):
        return np.asarray(x.read())
    if isinstance(x, (tuple, list)):
        return type(x)(to_host(v) for v in x)
    return x


def check(ours: Any, ref: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Same shape, same dtype kind (bool as int), values close."""
    ours = to_host(ours)
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(ref), (ours, ref)
        for o, r in zip(ours, ref, strict=True):
            check(o, r, rtol, atol)
        return
    o, r = np.asarray(ours), np.asarray(ref)
    assert o.shape == r.shape, (o.shape, r.shape)
    kind = {"b": "i", "u": "iu", "i": "iu", "f": "f"}.get(r.dtype.kind, r.dtype.kind)
    assert o.dtype.kind in kind, (o.dtype, r.dtype)
    np.testing.assert_allclose(o.astype(np.float64), r.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


@pytest.fixture(name="check")
def check_fixture() -> Any:
    """The `check` helper."""
    return check
