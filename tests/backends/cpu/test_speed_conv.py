"""Convolution paths rewritten for speed (issue 5) against a float64 direct convolution: the unpadded im2col with
the bias folded into the GEMM (image stems), the NC4HW4 -> C-channel NHWC copy it uses, and Winograd blocks whose
transforms run as column bands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import im2col, winograd_conv
from mnnpy.backends.cpu.compute.common import copy_channels
from mnnpy.backends.cpu.compute.conv import conv2d_params
from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4
from support.models import make_conv

sys.path.insert(0, str(Path(__file__).parent / "compute"))
from helpers import assert_close, reference_conv, run_kernel

CONV = 12


def _check(conv: object, x_shape: tuple[int, ...], force: str, threads: int = 1, seed: int = 0) -> object:
    x = np.random.default_rng(seed).standard_normal(x_shape).astype(np.float32)
    got, kernel = run_kernel(conv, CONV, x, force=force, threads=threads)
    ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, CONV, x_shape))
    assert_close(got, ref, rtol=2e-5)
    return kernel


@pytest.mark.parametrize("channels", [1, 3, 5, 7, 9])
def test_copy_channels_drops_padded_lanes(channels: int) -> None:
    x = np.random.default_rng(channels).standard_normal((2, channels, 5, 6)).astype(np.float32)
    packed = pack_nc4hw4(x)
    packed[:, -1, ..., channels % 4 or 4:] = 7.0  # garbage in the padded lanes must not leak
    buf = np.full((2, 9, 10, channels), -1.0, np.float32)
    copy_channels(buf[:, 2:7, 1:7], packed)
    np.testing.assert_array_equal(buf[:, 2:7, 1:7], x.transpose(0, 2, 3, 1))
    assert (buf[:, :2] == -1).all() and (buf[:, 7:] == -1).all() and (buf[:, :, 0] == -1).all()


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "pads", "relu", "relu6", "x_shape", "threads", "tile"),
                         [(3, 64, 7, 2, 3, True, False, (1, 3, 40, 36), 1, 4096),
                          (3, 13, 7, 2, 3, False, True, (2, 3, 23, 29), 2, 2000),
                          (5, 10, 3, 1, 1, False, False, (1, 5, 12, 11), 2, 1 << 20),
                          (7, 6, 5, 3, 0, True, False, (2, 7, 17, 16), 1, 1 << 20)])
def test_im2col_unpadded_channels_fold_bias(monkeypatch: pytest.MonkeyPatch, ic: int, oc: int, k: int, stride: int,
                                            pads: int, relu: bool, relu6: bool, x_shape: tuple[int, ...],
                                            threads: int, tile: int) -> None:
    monkeypatch.setattr(im2col, "TILE_BYTES", tile)  # several tiles, claimed by one or two lanes
    conv = make_conv(ic, oc, (k, k), stride=(stride, stride), pads=(pads,) * 4, relu=relu, relu6=relu6, seed=ic)
    conv.bias = (np.asarray(conv.bias) * 10).astype(np.float32)  # a bias that matters against the taps
    kernel = _check(conv, x_shape, "im2col", threads)
    assert kernel.fold_bias and kernel.weight.shape[0] == k * k * ic + 1
    assert len(kernel.steps) > 1 or tile == 1 << 20


def test_im2col_padded_channels_keep_bias_pass() -> None:
    kernel = _check(make_conv(8, 12, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1), relu=True), (1, 8, 9, 9), "im2col")
    assert not kernel.fold_bias and kernel.weight.shape[0] == 9 * 8


@pytest.mark.parametrize(("unit", "channels", "hw", "block_bytes", "threads"),
                         [(6, 16, (26, 25), 20000, 1), (4, 12, (17, 20), 30000, 2), (2, 20, (9, 7), 1, 1),
                          (6, 8, (13, 13), 1 << 21, 1)])
def test_winograd_column_band_transforms(monkeypatch: pytest.MonkeyPatch, unit: int, channels: int,
                                         hw: tuple[int, int], block_bytes: int, threads: int) -> None:
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", block_bytes)
    conv = make_conv(channels, channels + 4, (3, 3), pads=(1, 1, 1, 1), relu=True, seed=unit)
    kernel = _check(conv, (1, channels, *hw), f"winograd:{unit}", threads)
    assert kernel.plan.unit == unit


@pytest.mark.parametrize(("unit", "x_shape", "pads"), [(6, (2, 8, 26, 19), (1, 1, 1, 1)),
                                                      (4, (1, 12, 15, 22), (2, 0, 1, 2)),
                                                      (2, (1, 5, 9, 11), (0, 1, 2, 1))])
def test_winograd_row_copies_at_one_lane(monkeypatch: pytest.MonkeyPatch, unit: int, x_shape: tuple[int, ...],
                                         pads: tuple[int, ...]) -> None:
    """Above ``ROW_COPY_FROM`` the single lane copies each block's input rows just before the block (halo rows of
    neighbouring blocks twice); small blocks, batch 2 and uneven pads put block edges everywhere."""
    monkeypatch.setattr(winograd_conv, "ROW_COPY_FROM", 0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 1)
    conv = make_conv(x_shape[1], 7, (3, 3), pads=pads, relu=True, seed=unit)
    kernel = _check(conv, x_shape, f"winograd:{unit}")
    assert kernel.plan.unit == unit and len(kernel.blocks) > 2


def test_runs_merges_trailing_contiguous_axes() -> None:
    """``runs`` views the trailing axes contiguous in both arrays as one element; the copy is the plain one."""
    from mnnpy.backends.cpu.compute.common import runs
    from numpy.lib.stride_tricks import as_strided

    rng = np.random.default_rng(3)
    src_base = rng.standard_normal((7, 9, 6)).astype(np.float32)
    src = as_strided(src_base, shape=(3, 4, 2, 6), strides=(48, 2 * 216, 24, 4), writeable=False)  # overlapping
    dst = np.zeros((3, 4, 2, 6), np.float32)
    pair = runs(dst, src)
    assert pair[0].dtype == np.dtype("V48") and pair[0].shape == (3, 4) and np.shares_memory(pair[0], dst)
    np.copyto(*pair)
    np.testing.assert_array_equal(dst, src)
    column = np.zeros((5, 8), np.float32)[:, ::2]  # nothing contiguous: the arrays as they are
    assert runs(column, column)[0] is column
    half = np.zeros((4, 8), np.float32)[:, :4]  # contiguous last axis only
    assert runs(half, np.ones((4, 4), np.float32))[0].dtype == np.dtype("V16")


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "hw", "relu6"),
                         [(256, 512, 1, 2, 14, False), (256, 260, 1, 1, 7, True), (7, 300, 3, 2, 9, False)])
def test_im2col_lanes_split_output_channels_when_weight_heavy(monkeypatch: pytest.MonkeyPatch, ic: int, oc: int,
                                                              k: int, stride: int, hw: int, relu6: bool) -> None:
    """Weight-heavy single tile with one tap (1x1) or a folded bias: output-channel bands (3x3 and larger split
    their taps instead, test_speed_threads.py)."""
    from mnnpy.backends.cpu.compute import blas

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    conv = make_conv(ic, oc, (k, k), stride=(stride, stride), pads=(k // 2,) * 4, relu=not relu6, relu6=relu6)
    kernel = _check(conv, (1, ic, hw, hw), "im2col", threads=2)
    assert kernel.bands is not None and len(kernel.bands) == 2 and kernel.tap_lanes is None
    assert all(c0 % 4 == 0 for c0, _ in kernel.bands) and kernel.bands[-1][1] == 4 * -(-oc // 4)
    assert _check(conv, (1, ic, hw, hw), "im2col", threads=1).bands is None


def test_conv_kernels_share_session_scratch() -> None:
    """Ungrouped Winograd and im2col kernels built with one pool reuse its buffers (Winograd: V in D's, Y in M's);
    interleaved runs stay exact; grouped and folded-bias kernels keep private buffers."""
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import packed_shape, unpack_nc4hw4

    pool: dict = {}
    cases = [(make_conv(16, 20, (3, 3), pads=(1, 1, 1, 1), relu=True, seed=1), (1, 16, 23, 21), "winograd:4"),
             (make_conv(8, 12, (3, 3), pads=(1, 1, 1, 1), seed=2), (2, 8, 9, 10), "winograd:2"),
             (make_conv(12, 18, (3, 3), pads=(1, 1, 1, 1), group=3, relu6=True, seed=3), (1, 12, 11, 9), "winograd:6"),
             (make_conv(8, 16, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1), relu=True, seed=4), (1, 8, 15, 16), "im2col"),
             (make_conv(12, 8, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1), seed=5), (2, 12, 9, 7), "im2col"),
             (make_conv(3, 8, (5, 5), stride=(2, 2), pads=(2, 2, 2, 2), seed=6), (1, 3, 14, 12), "im2col"),
             (make_conv(12, 18, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1), group=3, seed=7), (1, 12, 9, 9), "im2col")]
    kernels = [make_conv2d_kernel(conv, CONV, shape, force=force, scratch=pool) for conv, shape, force in cases]
    assert {key for key in pool if key[0] != "zeros"} == {(0, name) for name in ("d", "e", "m", "f", "cols",
                                                                                  "y")}
    assert len([key for key in pool if key[0] == "zeros"]) == len(cases)  # padded inputs: no two alike here
    cases.append((make_conv(16, 20, (3, 3), pads=(1, 1, 1, 1), seed=9), cases[0][1], "winograd:4"))
    kernels.append(make_conv2d_kernel(cases[-1][0], CONV, cases[-1][1], force=cases[-1][2], scratch=pool))
    assert kernels[-1].xp is kernels[0].xp and kernels[-1].xp is not kernels[1].xp  # same input geometry: shared
    for kernel in kernels[:2]:
        block = kernel.blocks[0]
        assert np.shares_memory(block.d, pool[(0, "d")]) and np.shares_memory(block.v, pool[(0, "d")])
        assert np.shares_memory(block.y, pool[(0, "m")])
    assert not any(np.shares_memory(kernels[2].blocks[0].m_groups, buf) for buf in pool.values())
    for kernel in kernels[3:5]:
        assert np.shares_memory(kernel.y, pool[(0, "y")]) and np.shares_memory(kernel.steps[0][0][0], pool[(0, "cols")])
    folded, grouped = kernels[5:7]  # folded-bias columns (their 1s) and grouped Y (zero padded channels) stay private
    assert np.shares_memory(folded.y, pool[(0, "y")])
    assert not any(np.shares_memory(folded.steps[0][1], buf) for buf in pool.values())
    assert not any(np.shares_memory(grouped.steps[0][1], buf) or np.shares_memory(grouped.y, buf)
                   for buf in pool.values())
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(shape).astype(np.float32) for _, shape, _ in cases]
    for _ in range(2):  # interleaved: each run overwrites the shared buffers the others use
        for (conv, shape, _), kernel, x in zip(cases, kernels, xs, strict=True):
            out = np.full(packed_shape(kernel.out_shape), np.nan, np.float32)
            kernel.run(pack_nc4hw4(x), out)
            oc = kernel.out_shape[1]
            assert not out[:, -1, ..., oc % 4 or 4:].any()
            ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, CONV, shape))
            assert_close(unpack_nc4hw4(out, oc), ref, rtol=2e-5)


POOL_CASES = [("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
              ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1]))]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(("op", "attrs"), POOL_CASES)
@pytest.mark.parametrize(("threads", "band_bytes"), [(2, None), (2, 150000), (1, 150000)])
def test_pooling_lanes_over_channel_blocks(e2e: Any, monkeypatch: pytest.MonkeyPatch, op: str, attrs: dict,
                                           threads: int, band_bytes: int | None, compiled: bool) -> None:
    """Windowed pooling with numThread 2 splits the channel blocks of a > 1 MB input over two lanes (odd block
    count: unequal bands), each lane in bands of ``POOL_BAND_BYTES`` (here 1 or 2 blocks, or all of its own), or
    (max pooling, ``compiled``) in one compiled call per lane, against onnxruntime."""
    from mnnpy.backends.cpu.compute.blas import run_lanes
    from mnnpy.backends.cpu.ops import pool
    from onnx import TensorProto as T
    from onnx import helper as h

    calls: list[int] = []
    monkeypatch.setattr(pool, "run_lanes",
                        lambda tasks, n, *shared: (calls.append(len(tasks)), run_lanes(tasks, n, *shared)))
    if band_bytes is not None:
        monkeypatch.setattr(pool, "POOL_BAND_BYTES", band_bytes)
    monkeypatch.setattr(pool, "POOL_COMPILED", compiled)
    shape = (1, 36, 120, 128)  # 9 channel blocks, 2.2 MB
    node = h.make_node(op, ["x"], ["y"], **attrs)
    graph = h.make_graph([node], "p", [h.make_tensor_value_info("x", T.FLOAT, list(shape))],
                         [h.make_tensor_value_info("y", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    e2e.check(model, {"x": x}, rtol=1e-5, atol=1e-6, config={"numThread": threads})
    assert set(calls) == ({2} if threads == 2 else set())


def test_weight_preparation_runs_blas_single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """createSession's weight GEMMs run with one BLAS thread (a pool of 2 stalls in 4 ms scheduler ticks when the
    other core is busy); the caller's pool size is restored."""
    from mnnpy.backends.cpu.compute import blas, winograd
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel

    if blas.backend() == "none":
        pytest.skip("no controllable BLAS thread pool")
    seen: list[int | None] = []
    original = winograd_conv.transform_weights
    into = winograd_conv.transform_weights_into_panels  # the packed GEMM's direct path
    monkeypatch.setattr(winograd_conv, "transform_weights",
                        lambda *a: (seen.append(blas.get_blas_threads()), original(*a))[1])
    monkeypatch.setattr(winograd_conv, "transform_weights_into_panels",
                        lambda *a: (seen.append(blas.get_blas_threads()), into(*a))[1])
    with blas.blas_threads(2):
        make_conv2d_kernel(make_conv(8, 8, (3, 3), pads=(1, 1, 1, 1)), CONV, (1, 8, 12, 12), force="winograd:4")
        assert blas.get_blas_threads() == 2
    assert seen == [1] and winograd.transform_weights is original
