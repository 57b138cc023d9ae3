"""numThread > 1 paths (issue 5, 2-thread target): the persistent lane threads behind ``run_lanes`` and the kernel
paths that only run with lanes, against references (numpy, float64 direct convolution)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import blas

sys.path.insert(0, str(Path(__file__).parent / "compute"))


def _record(log: list, key: int) -> None:
    log.append((key, threading.get_ident()))


def test_run_lanes_runs_every_task_first_on_caller_others_on_persistent_lanes() -> None:
    seen: list[tuple[int, int]] = []
    blas.run_lanes([lambda k=k: _record(seen, k) for k in range(3)], 3)
    first = dict(seen)
    assert sorted(first) == [0, 1, 2]
    assert first[0] == threading.get_ident() and len({first[1], first[2], first[0]}) == 3
    seen.clear()
    blas.run_lanes([lambda k=k: _record(seen, k) for k in range(3)], 3)
    assert dict(seen) == first  # the same lane threads again (nothing started per call)


def test_run_lanes_reraises_lane_errors_and_stays_usable() -> None:
    done: list[int] = []

    def boom() -> None:
        raise ValueError("lane failed")

    with pytest.raises(ValueError, match="lane failed"):
        blas.run_lanes([lambda: done.append(0), boom], 2)
    assert done == [0]  # the caller's own task ran; the failing lane's error came back
    blas.run_lanes([lambda: done.append(1), lambda: done.append(2)], 2)
    assert sorted(done) == [0, 1, 2]


def test_run_lanes_nested_and_concurrent_callers_run_inline() -> None:
    """A lane task that itself calls run_lanes, and two Python threads calling at once, both complete."""
    out = np.zeros(8)

    def inner(i: int) -> None:
        blas.run_lanes([lambda: out.__setitem__(i, 1.0), lambda: out.__setitem__(i + 4, 1.0)], 2)

    blas.run_lanes([lambda: inner(0), lambda: inner(1)], 2)
    errors: list[BaseException] = []
    results = np.zeros((4, 64))

    def caller(row: int) -> None:
        try:
            for _ in range(50):
                blas.run_lanes([lambda: results.__setitem__((row, slice(0, 32)), row + 1.0),
                                lambda: results.__setitem__((row, slice(32, 64)), row + 1.0)], 2)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(r,)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(out[[0, 1, 4, 5]], 1.0)
    np.testing.assert_array_equal(results, np.arange(1, 5)[:, None] * np.ones((4, 64)))


@pytest.mark.parametrize(("kind", "ic", "oc", "k", "stride", "pads", "hw", "n"),
                         [("winograd:2", 8, 12, 3, 1, (1, 1, 1, 1), (13, 11), 1),
                          ("winograd:4", 6, 8, 3, 1, (2, 0, 1, 2), (17, 10), 2),
                          ("winograd:6", 4, 4, 3, 1, (1, 1, 1, 1), (30, 9), 1),
                          ("im2col", 8, 8, 3, 2, (1, 1, 1, 1), (21, 15), 1),
                          ("im2col", 3, 16, 7, 2, (3, 3, 2, 2), (27, 19), 2),
                          ("im2col", 5, 6, 5, 1, (0, 2, 0, 2), (14, 12), 1)])
def test_lanes_copy_their_own_input_rows(monkeypatch: pytest.MonkeyPatch, kind: str, ic: int, oc: int, k: int,
                                         stride: int, pads: tuple[int, ...], hw: tuple[int, int], n: int) -> None:
    """With lanes, each Winograd block / im2col tile copies the input rows it reads (halo rows twice): the padded
    buffer's interior starts as NaN, so a row no block copied would show; result vs float64 direct convolution."""
    from helpers import assert_close, reference_conv
    from mnnpy.backends.cpu.compute import im2col, winograd_conv
    from mnnpy.backends.cpu.compute.conv import conv2d_params, make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 6000)  # several blocks of tile rows
    monkeypatch.setattr(im2col, "TILE_BYTES", 3000)  # several tiles of output rows
    conv = make_conv(ic, oc, (k, k), stride=(stride, stride), pads=pads, relu=True, seed=ic + oc)
    shape = (n, ic, *hw)
    x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
    kernel = make_conv2d_kernel(conv, 12, shape, threads=2, force=kind)
    assert len(kernel.lanes) == 2 and len(kernel.lanes[0]) >= 3 and getattr(kernel, "positions", None) is None
    kernel.interior[...] = np.nan
    out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
    kernel.run(pack_nc4hw4(x), out)
    ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, shape))
    assert_close(unpack_nc4hw4(out, oc), ref, rtol=2e-5)


@pytest.mark.parametrize(("threads", "unit", "hw"), [(1, 4, (10, 9)), (2, 2, (13, 14)), (2, 4, (16, 16))])
def test_winograd_kept_output_copies_follow_the_output_array(monkeypatch: pytest.MonkeyPatch, threads: int,
                                                             unit: int, hw: tuple[int, int]) -> None:
    """The Winograd kernel keeps its tile -> output copies for the output array it ran into; a run into another
    array (a resized session's new arena) rebuilds them: alternating two outputs, both match float64."""
    from helpers import assert_close, reference_conv
    from mnnpy.backends.cpu.compute import winograd_conv
    from mnnpy.backends.cpu.compute.conv import conv2d_params, make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 8000)
    conv = make_conv(8, 8, (3, 3), pads=(1, 1, 1, 1), relu=False, seed=unit)
    shape = (1, 8, *hw)
    kernel = make_conv2d_kernel(conv, 12, shape, threads=threads, force=f"winograd:{unit}")
    outs = [np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32) for _ in range(2)]
    for step in range(4):
        x = np.random.default_rng(step).standard_normal(shape).astype(np.float32)
        out = outs[step % 2]
        out[...] = np.nan
        kernel.run(pack_nc4hw4(x), out)
        ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, shape))
        assert_close(unpack_nc4hw4(out, 8), ref, rtol=2e-5)


class _InterruptedOnce:
    """A lock whose first acquire raises KeyboardInterrupt (a Ctrl-C while the caller waits for a lane)."""

    def __init__(self, lock: object) -> None:
        self.lock, self.raised = lock, False

    def acquire(self, *args: object) -> bool:
        if not self.raised:
            self.raised = True
            raise KeyboardInterrupt
        return self.lock.acquire(*args)

    def release(self) -> None:
        self.lock.release()


def test_run_lanes_interrupted_wait_still_waits_for_the_lane() -> None:
    """KeyboardInterrupt while waiting is re-raised only once the lane finished its task, and the next hand-off
    waits for its own task (no stale completion left behind)."""
    import time

    blas.run_lanes([lambda: None, lambda: None], 2)
    lane = blas._LANES[0]
    real = lane.done
    lane.done = _InterruptedOnce(real)
    finished: list[str] = []

    def slow(tag: str) -> None:
        time.sleep(0.05)
        finished.append(tag)

    try:
        with pytest.raises(KeyboardInterrupt):
            blas.run_lanes([lambda: None, lambda: slow("first")], 2)
        assert finished == ["first"]
        blas.run_lanes([lambda: None, lambda: slow("second")], 2)
        assert finished == ["first", "second"]
    finally:
        lane.done = real


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "hw", "threads", "relu6"),
                         [(256, 512, (3, 3), 1, 7, 2, False), (128, 260, (3, 3), 2, 13, 3, True),
                          (64, 300, (5, 5), 1, 6, 3, False), (96, 400, (1, 3), 1, 5, 2, False),
                          (36, 300, (3, 3), 1, 4, 2, False)])
def test_im2col_weight_heavy_lanes_split_taps(monkeypatch: pytest.MonkeyPatch, ic: int, oc: int, k: tuple[int, int],
                                              stride: int, hw: int, threads: int, relu6: bool) -> None:
    """A weight-heavy single tile (few pixels, many output channels): each lane gathers a contiguous range of K
    (taps x channels: kernel rows and taps split where needed) and multiplies its rows of the weights; the partial
    products are summed. Against float64 direct convolution (summation order differs from 1 lane)."""
    from helpers import assert_close, reference_conv
    from mnnpy.backends.cpu.compute import ir_binds
    from mnnpy.backends.cpu.compute.conv import conv2d_params, make_conv2d_kernel
    from mnnpy.backends.cpu.compute.im2col import _k_ranges
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    conv = make_conv(ic, oc, k, stride=(stride, stride), pads=(k[0] // 2, k[1] // 2) * 2, relu=not relu6,
                     relu6=relu6, seed=oc)
    conv.bias = (np.asarray(conv.bias) * 10).astype(np.float32)
    shape = (1, ic, hw, hw)
    x = np.random.default_rng(ic).standard_normal(shape).astype(np.float32)
    ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, shape))
    for compiled_store in (True, False):  # the sum, clamp and layout in one compiled pass, or numpy's passes
        if not compiled_store:
            monkeypatch.setattr(ir_binds, "bind_store_nc4", lambda *_, **__: None)
        kernel = make_conv2d_kernel(conv, 12, shape, threads=threads, force="im2col")
        assert kernel.tap_lanes is not None and len(kernel.tap_lanes) == threads
        out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
        for _ in range(2):  # the partial buffers are reused: a second run must not accumulate
            kernel.run(pack_nc4hw4(x), out)
        assert_close(unpack_nc4hw4(out, oc), ref, rtol=2e-5)
    kc = ic + -ic % 4  # the column buffer's channels (padded to 4)
    ranges = _k_ranges(k[0], k[1], kc, threads)
    covered = [(ky * k[1] + kx) * kc + c for _, _, pieces in ranges for ky, x0, x1, c0, c1 in pieces
               for kx in range(x0, x1) for c in range(c0, c1)]
    assert covered == list(range(k[0] * k[1] * kc))  # every k once, in order
    assert [k0 for k0, _, _ in ranges] == [0] + [k1 for _, k1, _ in ranges[:-1]]
    sizes = [k1 - k0 for k0, k1, _ in ranges]
    assert max(sizes) - min(sizes) <= 8 * threads, sizes  # balanced


@pytest.mark.parametrize(("ic", "oc", "stride", "hw", "batch", "threads", "split"),
                         [(64, 128, 2, 15, 1, 1, "rows"), (64, 128, 2, 15, 2, 2, "rows"), (32, 40, 1, 9, 3, 2, "rows"),
                          (256, 512, 2, 13, 1, 2, "channels"), (128, 300, 3, 8, 2, 3, "channels")])
def test_im2col_1x1_reads_nc4hw4_in_place(monkeypatch: pytest.MonkeyPatch, ic: int, oc: int, stride: int, hw: int,
                                         batch: int, threads: int, split: str) -> None:
    """A 1 x 1 unpadded convolution (channels a multiple of 4) runs the packed GEMM on the NC4HW4 input itself (K as
    C/4 runs of 4 floats, one channel plane apart): lanes split the output rows (across images too), or the output
    channels in whole panels when there are more of them than pixels. Against float64 direct convolution, with a
    residual Add fused in on the second run, and then into an output over the input's memory."""
    from helpers import assert_close, reference_conv
    from mnnpy.backends.cpu.compute import packed_gemm
    from mnnpy.backends.cpu.compute.conv import conv2d_params, make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    if not packed_gemm.available():
        pytest.skip(f"the packed GEMM is off here: {packed_gemm.describe()}")
    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    conv = make_conv(ic, oc, (1, 1), stride=(stride, stride), pads=(0, 0, 0, 0), relu=True, seed=oc)
    conv.bias = (np.asarray(conv.bias) * 10).astype(np.float32)
    shape = (batch, ic, hw, hw)
    x = np.random.default_rng(ic).standard_normal(shape).astype(np.float32)
    kernel = make_conv2d_kernel(conv, 12, shape, threads=threads, force="im2col")
    assert kernel.direct is not None and len(kernel.direct) == threads
    if split == "channels":
        assert all(c0 % packed_gemm.panel_width() == 0 for lane in kernel.direct for *_, c0, _ in lane)
    else:
        assert all(c1 - c0 == kernel.y.shape[3] for lane in kernel.direct for *_, c0, c1 in lane)
    ref = reference_conv(x.astype(np.float64), conv, conv2d_params(conv, 12, shape))
    out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
    kernel.run(pack_nc4hw4(x), out)
    assert_close(unpack_nc4hw4(out, oc), ref, rtol=2e-5)
    residual = np.random.default_rng(1).standard_normal(ref.shape).astype(np.float32)
    kernel.run(pack_nc4hw4(x), out, pack_nc4hw4(residual), True)
    assert_close(unpack_nc4hw4(out, oc), np.maximum(ref + residual, 0), rtol=2e-5)
    # the Add's output over the input (as the arena may place it): every lane's products before any store
    xp = pack_nc4hw4(x)
    memory = np.empty(max(xp.size, out.size), dtype=np.float32)
    x_in, out_in = memory[:xp.size].reshape(xp.shape), memory[:out.size].reshape(out.shape)
    x_in[...] = xp
    products = []  # (lane, whether it stored too)
    run_direct = type(kernel)._run_direct
    monkeypatch.setattr(kernel, "_run_direct", lambda *a: products.append((a[0], a[2] is not None))
                        or run_direct(kernel, *a))
    kernel.run(x_in, out_in, pack_nc4hw4(residual), True)
    assert_close(unpack_nc4hw4(out_in, oc), np.maximum(ref + residual, 0), rtol=2e-5)
    assert sorted(products) == ([(lane, False) for lane in range(threads)] if threads > 1 else [(0, True)])


@pytest.mark.parametrize(("m", "k", "n", "threads"), [(1, 512, 1000, 2), (3, 256, 1100, 3)])
def test_flat_gemm_bands_of_output_columns(m: int, k: int, n: int, threads: int) -> None:
    """A flat GEMM of few rows and >= 1 MB of weights (a classifier) with threads: each lane takes whole panels of
    output columns over the shared packed weights; against float64."""
    from helpers import assert_close
    from mnnpy.backends.cpu.compute import packed_gemm
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4
    from support.models import make_conv

    if not packed_gemm.available():
        pytest.skip(f"the packed GEMM is off here: {packed_gemm.describe()}")
    conv = make_conv(k, n, (1, 1), relu=True, seed=n)
    x = np.random.default_rng(k).standard_normal((m, k, 1, 1)).astype(np.float32)
    kernel = make_conv2d_kernel(conv, 12, x.shape, threads=threads)
    assert kernel.col_bands is not None and len(kernel.col_bands) == threads
    assert all(c0 % packed_gemm.panel_width() == 0 for c0, _ in kernel.col_bands)
    out = np.full(packed_shape(kernel.out_shape), np.nan, dtype=np.float32)
    kernel.run(pack_nc4hw4(x), out)
    w = np.asarray(conv.weight, np.float64).reshape(n, k)
    want = np.maximum(x.reshape(m, k).astype(np.float64) @ w.T + np.asarray(conv.bias, np.float64), 0)
    assert_close(unpack_nc4hw4(out, n).reshape(m, n), want, rtol=2e-5)
