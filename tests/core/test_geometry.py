"""Geometry is property-tested: regions applied by the numpy reference raster equal numpy."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.geometry import broadcast, slicing, transform
from mnnpy.core.geometry.fuse import fuse
from mnnpy.core.geometry.raster import raster
from mnnpy.core.ir import TensorDesc
from mnnpy.core.session import Session
from mnnpy.core.shape._slicing import strided_slice

sys.path.insert(0, str(Path(__file__).parent))
from netbuild import NetBuilder

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)
shapes = st.lists(st.integers(1, 5), min_size=1, max_size=5).map(tuple)


def _arange(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@SETTINGS
@given(shapes, st.randoms(use_true_random=False))
def test_permute(shape: tuple[int, ...], rnd: object) -> None:
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    x = _arange(shape)
    out = np.transpose(x, perm)
    regions = transform.permute_regions(shape, perm)
    np.testing.assert_array_equal(raster(regions, [x], out.shape), out)


@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=4),
       st.integers(0, 2))
def test_concat(parts: list, axis: int) -> None:
    base = parts[0]
    arrays = []
    for k, p in enumerate(parts):
        shape = list(base)
        shape[axis] = p[axis]
        arrays.append(_arange(tuple(shape)) + 100 * k)
    out = np.concatenate(arrays, axis=axis)
    op = SimpleNamespace(main=SimpleNamespace(axis=axis), name="c")
    regions = slicing.concat(op, [TensorDesc(a.shape) for a in arrays], [TensorDesc(out.shape)], [])[0]
    np.testing.assert_array_equal(raster(regions, arrays, out.shape), out)


@SETTINGS
@given(shapes, st.data())
def test_strided_slice_onnx(shape: tuple[int, ...], data: st.DataObject) -> None:
    begins, ends, steps = [], [], []
    for d in shape:
        step = data.draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        begins.append(data.draw(st.integers(-d, d + 1)))  # below -d numpy and ONNX clamp differently
        ends.append(data.draw(st.sampled_from([data.draw(st.integers(-d - 2, d + 2)), 2**31 - 1, -(2**31)])))
        steps.append(step)
    x = _arange(shape)
    want = x[tuple(slice(b, e, s) for b, e, s in zip(begins, ends, steps, strict=True))]
    op = SimpleNamespace(main=SimpleNamespace(fromType=1), name="s")
    values = [None, np.array(begins), np.array(ends), np.arange(len(shape)), np.array(steps)]
    spec, out_shape = strided_slice(op, shape, values)
    if 0 in out_shape:
        assert want.size == 0
        return
    regions = slicing.box_regions(shape, spec)
    np.testing.assert_array_equal(raster(regions, [x], out_shape), want.reshape(out_shape))


@SETTINGS
@given(shapes, st.data())
def test_pad(shape: tuple[int, ...], data: st.DataObject) -> None:
    pads = [data.draw(st.integers(0, 2)) for _ in range(2 * len(shape))]
    x = _arange(shape) + 1
    want = np.pad(x, [(pads[2 * i], pads[2 * i + 1]) for i in range(len(shape))])
    op = SimpleNamespace(main=SimpleNamespace(mode=0), name="p")
    regions = slicing.padding(op, [TensorDesc(shape)], [TensorDesc(want.shape)], [None, np.array(pads)])[0]
    np.testing.assert_array_equal(raster(regions, [x], want.shape), want)


@SETTINGS
@given(shapes, st.data())
def test_tile_and_broadcast(shape: tuple[int, ...], data: st.DataObject) -> None:
    reps = [data.draw(st.integers(1, 3)) for _ in shape]
    x = _arange(shape)
    want = np.tile(x, reps)
    regions = broadcast.tile(None, [TensorDesc(shape)], [TensorDesc(want.shape)], [None, np.array(reps)])[0]
    np.testing.assert_array_equal(raster(regions, [x], want.shape), want)
    small = tuple(1 if data.draw(st.booleans()) else d for d in shape)
    y = _arange(small)
    np.testing.assert_array_equal(raster(broadcast.broadcast_regions(small, shape), [y], shape),
                                  np.broadcast_to(y, shape))


def test_depth_to_space_and_back() -> None:
    x = _arange((2, 8, 3, 5))
    for mode in (0, 1):
        op = SimpleNamespace(type=fb.OpType.DepthToSpace, main=SimpleNamespace(blockSize=2, mode=mode))
        b = 2
        if mode == 0:
            want = x.reshape(2, b, b, 2, 3, 5).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 6, 10)
        else:
            want = x.reshape(2, 2, b, b, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
        regions = broadcast.depth_space(op, [TensorDesc(x.shape)], [TensorDesc(want.shape)], [])[0]
        np.testing.assert_array_equal(raster(regions, [x], want.shape), want)
        back = SimpleNamespace(type=fb.OpType.SpaceToDepth, main=SimpleNamespace(blockSize=2, mode=mode))
        regions = broadcast.depth_space(back, [TensorDesc(want.shape)], [TensorDesc(x.shape)], [])[0]
        if mode == 0:
            np.testing.assert_array_equal(raster(regions, [want], x.shape), x)


def test_chained_permutes_fuse_into_one_region() -> None:
    shape = (2, 3, 4)
    first = transform.permute_regions(shape, [0, 2, 1], origin=0)  # tensor 1 = permute(tensor 0)
    second = transform.permute_regions((2, 4, 3), [1, 0, 2], origin=1)  # tensor 2 = permute(tensor 1)
    regions, gathers = fuse(second, {1: first}, lambda i: 24)
    assert not gathers and len(regions) == 1 and regions[0].origin == 0
    x = _arange(shape)
    np.testing.assert_array_equal(raster(regions, [x], (4, 2, 3)), np.transpose(np.transpose(x, (0, 2, 1)), (1, 0, 2)))


def test_two_permutes_in_a_session_make_one_raster() -> None:
    nb = NetBuilder()
    nb.input("x", (2, 3, 4))
    nb.permute("x", "t1", [0, 2, 1])
    nb.permute("t1", "t2", [1, 0, 2])
    nb.unary("t2", "y", 0)
    nb.outputs("y")
    s = Session(nb.net)
    rasters = [c for c in s.commands if c.op_type == fb.OpType.Raster]
    assert len(rasters) == 1 and len(rasters[0].op.regions) == 1
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    s.tensor_ref(s.input_index("x")).array[...] = x
    s.run()
    np.testing.assert_array_equal(s.tensor_ref(s.output_index("y")).array, np.abs(np.transpose(x, (2, 0, 1))))


def _s2b_reference(x: np.ndarray, bh: int, bw: int, pads: list[int]) -> np.ndarray:
    n, c = x.shape[:2]
    p = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])])
    hp, wp = p.shape[2] // bh, p.shape[3] // bw
    out = p.reshape(n, c, hp, bh, wp, bw).transpose(3, 5, 0, 1, 2, 4)
    return out.reshape(bh * bw * n, c, hp, wp)


@SETTINGS
@given(st.integers(1, 2), st.integers(1, 3), st.sampled_from([(2, 2), (1, 3), (3, 2)]), st.data())
def test_space_to_batch_and_back(n: int, c: int, block: tuple, data: st.DataObject) -> None:
    from mnnpy.core.geometry.space_batch import space_batch

    bh, bw = block
    pads = [data.draw(st.integers(0, 2)) for _ in range(4)]
    h = data.draw(st.integers(1, 3)) * bh - pads[0] - pads[1]
    w = data.draw(st.integers(1, 3)) * bw - pads[2] - pads[3]
    if h <= 0 or w <= 0:
        return
    x = _arange((n, c, h, w)) + 1
    want = _s2b_reference(x, bh, bw, pads)
    values = [None, np.array([bh, bw]), np.array(pads)]
    op = SimpleNamespace(type=fb.OpType.SpaceToBatchND, name="s2b")
    regions = space_batch(op, [TensorDesc(x.shape)], [TensorDesc(want.shape)], values)[0]
    np.testing.assert_array_equal(raster(regions, [x], want.shape), want)
    back = SimpleNamespace(type=fb.OpType.BatchToSpaceND, name="b2s")
    regions = space_batch(back, [TensorDesc(want.shape)], [TensorDesc(x.shape)], values)[0]
    np.testing.assert_array_equal(raster(regions, [want], x.shape), x)
