"""NC4HW4 pack/unpack round trips, including channel tails and preallocated outputs."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4


@pytest.mark.parametrize("shape", [(1, 1, 3, 5), (2, 3, 4, 4), (1, 4, 2, 3), (2, 13, 5, 7), (1, 127, 3, 2), (3, 6)])
def test_round_trip(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    packed = pack_nc4hw4(x)
    assert packed.shape == packed_shape(shape)
    c = shape[1]
    # element (n, c, ...) lives at [n, c // 4, ..., c % 4]; tail lanes are zero
    for ch in range(c):
        np.testing.assert_array_equal(packed[:, ch // 4, ..., ch % 4], x[:, ch])
    if c % 4:
        assert not packed[:, -1, ..., c % 4 :].any()
    np.testing.assert_array_equal(unpack_nc4hw4(packed, c), x)


def test_out_arguments_filled_in_place() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 3, 3)).astype(np.float32)
    out = np.full(packed_shape(x.shape), 7.0, dtype=np.float32)
    res = pack_nc4hw4(x, out=out)
    assert res is out
    assert not out[:, 1, ..., 1:].any()
    back = np.empty_like(x)
    assert unpack_nc4hw4(out, 5, out=back) is back
    np.testing.assert_array_equal(back, x)


def test_bad_shapes() -> None:
    with pytest.raises(ValueError):
        unpack_nc4hw4(np.zeros((1, 2, 3, 3, 4), np.float32), 13)
    with pytest.raises(ValueError):
        pack_nc4hw4(np.zeros((1, 5, 2, 2), np.float32), out=np.zeros((1, 1, 2, 2, 4), np.float32))
