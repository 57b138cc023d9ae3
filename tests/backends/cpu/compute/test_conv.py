"""Every convolution path, forced, against a direct numpy convolution on awkward shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnnpy.backends.cpu.compute.conv import COUNTERS, conv2d_output_shape, conv2d_params
from mnnpy.schema import mnn_generated as fb
from support.models import make_conv

from .helpers import assert_close, reference_conv, reference_deconv, run_kernel

CONV, DW, DECONV, DECONV_DW = 12, 13, 17, 18
SAME, VALID, CAFFE = fb.PadMode.SAME, fb.PadMode.VALID, fb.PadMode.CAFFE


def check(conv: fb.Convolution2DT, op_type: int, x_shape: tuple[int, ...], force: str | None, seed: int = 1) -> str:
    x = np.random.default_rng(seed).standard_normal(x_shape).astype(np.float32)
    got, kernel = run_kernel(conv, op_type, x, force=force)
    params = conv2d_params(conv, op_type, x_shape)
    ref = (reference_deconv if params.transposed else reference_conv)(x.astype(np.float64), conv, params)
    assert kernel.out_shape == ref.shape == conv2d_output_shape(params, x_shape)
    assert_close(got, ref)
    return kernel.plan.algorithm


IM2COL_CASES = [
    # (ic, oc, k, stride, dilation, pads, pad_mode, group, relu, relu6, x_shape)
    (1, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), CAFFE, 1, False, False, (1, 1, 5, 7)),
    (3, 13, (3, 3), (2, 2), (1, 1), None, SAME, 1, True, False, (2, 3, 9, 7)),
    (13, 3, (3, 5), (1, 2), (2, 1), (0, 2, 1, 1), CAFFE, 1, False, True, (1, 13, 11, 9)),
    (127, 5, (3, 3), (2, 1), (2, 2), None, VALID, 1, False, False, (1, 127, 9, 8)),
    (12, 18, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), CAFFE, 3, True, False, (2, 12, 7, 5)),
    (6, 6, (2, 3), (2, 2), (1, 2), None, SAME, 2, False, False, (1, 6, 8, 11)),
    (13, 13, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), CAFFE, 13, False, True, (1, 13, 6, 5)),
    (3, 6, (1, 1), (2, 2), (1, 1), None, VALID, 3, False, False, (1, 3, 7, 7)),
    (4, 8, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), CAFFE, 1, True, False, (1, 4, 15, 13)),
    (3, 40, (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), CAFFE, 1, True, False, (2, 3, 9, 140)),  # rows of 70: implicit
]


@pytest.mark.parametrize("implicit_min_ow", [None, 1])
@pytest.mark.parametrize("case", IM2COL_CASES)
def test_im2col(monkeypatch: pytest.MonkeyPatch, case: tuple, implicit_min_ow: int | None) -> None:
    """Every case with the default rule and with the packed GEMM's implicit im2col on every row width (where the
    packed GEMM runs and the taps are one pixel apart; else the gathered columns)."""
    from mnnpy.backends.cpu.compute import im2col

    if implicit_min_ow is not None:
        monkeypatch.setattr(im2col, "IMPLICIT_MIN_OW", implicit_min_ow)
    ic, oc, k, stride, dilation, pads, mode, group, relu, relu6, x_shape = case
    conv = make_conv(ic, oc, k, stride=stride, dilation=dilation, pads=pads, pad_mode=mode, group=group, relu=relu,
                     relu6=relu6)
    assert check(conv, CONV, x_shape, "im2col") == "im2col"


@pytest.mark.parametrize("unit", [2, 4, 6])
@pytest.mark.parametrize(("ic", "oc", "x_hw", "mode", "group"),
                         [(1, 3, (5, 7), CAFFE, 1), (13, 13, (9, 6), SAME, 1), (127, 6, (4, 5), VALID, 1),
                          (6, 9, (7, 7), CAFFE, 3)])
def test_winograd_3x3(unit: int, ic: int, oc: int, x_hw: tuple[int, int], mode: int, group: int) -> None:
    conv = make_conv(ic, oc, (3, 3), pads=(1, 1, 1, 1) if mode == CAFFE else None, pad_mode=mode, group=group,
                     relu=ic == 13)
    assert check(conv, CONV, (2, ic, *x_hw), f"winograd:{unit}") == "winograd"


@pytest.mark.parametrize("unit", [2, 4])
def test_winograd_5x5(unit: int) -> None:
    conv = make_conv(5, 7, (5, 5), pads=(2, 1, 2, 3), relu6=True)
    assert check(conv, CONV, (1, 5, 11, 9), f"winograd:{unit}") == "winograd"


def test_winograd_7x7_and_2x2() -> None:
    assert check(make_conv(3, 4, (7, 7), pads=(3, 3, 3, 3)), CONV, (1, 3, 10, 9), "winograd:2") == "winograd"
    assert check(make_conv(4, 5, (2, 2)), CONV, (1, 4, 8, 7), "winograd:3") == "winograd"


@pytest.mark.parametrize(("ic", "oc", "group", "x_hw"), [(1, 1, 1, (3, 5)), (13, 3, 1, (5, 7)), (127, 13, 1, (3, 3)),
                                                         (12, 8, 4, (5, 3))])
@pytest.mark.parametrize("force", ["gemm1x1", None])
def test_gemm1x1(ic: int, oc: int, group: int, x_hw: tuple[int, int], force: str | None) -> None:
    conv = make_conv(ic, oc, (1, 1), group=group, relu=True)
    assert check(conv, CONV, (2, ic, *x_hw), force) in ("gemm1x1", "strassen")


@pytest.mark.parametrize("depth", [1, 2])
def test_strassen_conv(depth: int) -> None:
    conv = make_conv(64, 40, (1, 1), relu6=True)
    kernel_algo = check(conv, CONV, (1, 64, 13, 11), f"strassen:{depth}")
    assert kernel_algo == "strassen"


@pytest.mark.parametrize(("c", "k", "stride", "dilation", "pads", "mode", "x_shape"),
                         [(1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), CAFFE, (1, 1, 5, 5)),
                          (3, (3, 3), (2, 2), (1, 1), None, SAME, (2, 3, 9, 8)),
                          (13, (5, 3), (1, 2), (2, 1), (2, 0, 1, 1), CAFFE, (1, 13, 11, 7)),
                          (127, (3, 3), (1, 1), (2, 2), None, VALID, (1, 127, 7, 6)),
                          (8, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), CAFFE, (2, 8, 9, 60)),  # NC4HW4 column phases
                          (5, (3, 3), (2, 3), (2, 2), None, SAME, (1, 5, 9, 95))])
def test_depthwise(c: int, k: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int], pads: tuple | None,
                   mode: int, x_shape: tuple[int, ...], cpu_impl: str) -> None:
    conv = make_conv(c, c, k, stride=stride, dilation=dilation, pads=pads, pad_mode=mode, group=c, relu6=c == 13,
                     relu=c == 3)
    assert check(conv, DW, x_shape, None) == "depthwise"
    _, kernel = run_kernel(conv, DW, np.zeros(x_shape, np.float32))
    assert (kernel.jit is not None) == (cpu_impl == "jit")
    assert check(conv, CONV, x_shape, "depthwise") == "depthwise"
    assert check(conv, CONV, x_shape, "im2col") == "im2col"


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "dilation", "pads", "mode", "group", "out_pads", "x_shape"),
                         [(1, 1, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), CAFFE, 1, None, (1, 1, 4, 5)),
                          (3, 13, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), CAFFE, 1, (1, 1), (2, 3, 5, 4)),
                          (13, 6, (4, 4), (2, 2), (1, 1), None, SAME, 1, None, (1, 13, 5, 6)),
                          (12, 8, (3, 2), (2, 3), (2, 1), (1, 0, 2, 1), CAFFE, 4, (1, 2), (1, 12, 4, 3)),
                          (127, 5, (2, 2), (2, 2), (1, 1), None, VALID, 1, None, (1, 127, 3, 3))])
def test_deconv(ic: int, oc: int, k: tuple, stride: tuple, dilation: tuple, pads: tuple | None, mode: int, group: int,
                out_pads: tuple | None, x_shape: tuple) -> None:
    conv = make_conv(ic, oc, k, stride=stride, dilation=dilation, pads=pads, pad_mode=mode, group=group,
                     transposed=True, out_pads=out_pads, relu=ic == 3)
    assert check(conv, DECONV, x_shape, None) == "deconv"


def test_deconv_depthwise() -> None:
    conv = make_conv(5, 5, (3, 3), stride=(2, 2), pads=(1, 1, 1, 1), group=5, transposed=True)
    assert check(conv, DECONV_DW, (1, 5, 4, 5), None) == "deconv"


@settings(derandomize=True, max_examples=60, deadline=None)
@given(g=st.sampled_from([1, 1, 2, 3]), icg=st.sampled_from([1, 2, 3, 5, 13]), ocg=st.sampled_from([1, 3, 4, 7]),
       kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3), dh=st.integers(1, 2),
       dw=st.integers(1, 2), n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9),
       mode=st.sampled_from([CAFFE, VALID, SAME]), pad=st.tuples(*[st.integers(0, 2)] * 4), relu=st.integers(0, 2))
def test_random_shapes_all_paths(g: int, icg: int, ocg: int, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int,
                                 n: int, h: int, w: int, mode: int, pad: tuple, relu: int) -> None:
    ic, oc = g * icg, g * ocg
    conv = make_conv(ic, oc, (kh, kw), stride=(sh, sw), dilation=(dh, dw), pads=pad, pad_mode=mode, group=g,
                     relu=relu == 1, relu6=relu == 2)
    shape = (n, ic, h, w)
    params = conv2d_params(conv, CONV, shape)
    try:
        conv2d_output_shape(params, shape)
    except ValueError:
        return  # window larger than the padded input
    check(conv, CONV, shape, "im2col")
    check(conv, CONV, shape, None)
    if kh == kw > 1 and (sh, sw) == (dh, dw) == (1, 1):
        check(conv, CONV, shape, "winograd:2")
    if g == ic == oc and (kh, kw) != (1, 1):
        check(conv, CONV, shape, "depthwise")
    deconv = make_conv(ic, oc, (kh, kw), stride=(sh, sw), dilation=(dh, dw), pads=pad, pad_mode=mode, group=g,
                       transposed=True, relu=relu == 1)
    try:
        conv2d_output_shape(conv2d_params(deconv, DECONV, shape), shape)
    except ValueError:
        return
    check(deconv, DECONV, shape, None)


@pytest.mark.parametrize(("k", "stride", "force"), [((3, 3), (2, 2), "winograd:2"), ((3, 3), (1, 1), "gemm1x1"),
                                                     ((1, 1), (1, 1), "depthwise"), ((3, 3), (1, 1), "fft"),
                                                     ((3, 3), (1, 1), "winograd:9"), ((3, 3), (1, 1), "winograd:x")])
def test_invalid_force_raises(k: tuple, stride: tuple, force: str) -> None:
    conv = make_conv(4, 4, k, stride=stride)
    with pytest.raises(ValueError):
        run_kernel(conv, CONV, np.zeros((1, 4, 6, 6), np.float32), force=force)


@pytest.mark.parametrize("force", ["im2col", "winograd:4", "gemm1x1", "strassen:1", "depthwise", None])
def test_weights_transformed_once(force: str | None) -> None:
    k = (1, 1) if force in ("gemm1x1", "strassen:1") else (3, 3)
    group = 16 if force == "depthwise" else 1
    conv = make_conv(16, 16, k, pads=(1, 1, 1, 1) if k == (3, 3) else None, group=group)
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape

    before = COUNTERS["weight_transforms"]
    kernel = make_conv2d_kernel(conv, CONV, (1, 16, 34, 34), force=force)
    assert COUNTERS["weight_transforms"] == before + 1
    x = pack_nc4hw4(np.random.default_rng(0).standard_normal((1, 16, 34, 34)).astype(np.float32))
    out = np.empty(packed_shape(kernel.out_shape), np.float32)
    kernel.run(x, out)
    first = out.copy()
    kernel.run(x, out)
    assert COUNTERS["weight_transforms"] == before + 1
    np.testing.assert_array_equal(out, first)


@pytest.mark.parametrize(("tile_bytes", "group"), [(600, 1), (600, 3), (20000, 1), (20000, 3)])
def test_im2col_tiles(monkeypatch: pytest.MonkeyPatch, tile_bytes: int, group: int) -> None:
    from mnnpy.backends.cpu.compute import im2col

    monkeypatch.setattr(im2col, "TILE_BYTES", tile_bytes)  # bands of rows (600) or several images (20000)
    monkeypatch.setattr(im2col, "IMPLICIT_MIN_OW", 1)  # the implicit GEMM per tile and image, where it runs
    conv = make_conv(6, 9, (3, 3), stride=(2, 1), pads=(1, 0, 1, 2), group=group, relu=True)
    assert len(im2col.output_tiles(3, 5, 7 * 54 * 4 * group, tile_bytes)) > 1
    assert check(conv, CONV, (3, 6, 9, 7), "im2col") == "im2col"


@pytest.mark.parametrize(("n", "rows", "per_tile", "lanes"), [(1, 28, 16, 2), (1, 112, 15, 2), (2, 7, 3, 3),
                                                             (1, 5, 1, 4), (1, 9, 4, 1)])
def test_output_tiles_balanced_for_lanes(n: int, rows: int, per_tile: int, lanes: int) -> None:
    """Bands of rows: as many as the byte limit asks (at most ``per_tile`` rows), rounded up to a multiple of the
    lanes (at most one per row), sizes within one row of each other, covering every row of every image once."""
    from mnnpy.core.strategy import output_tiles

    tiles = output_tiles(n, rows, 100, 100 * per_tile, lanes)
    needed = -(-rows // per_tile)  # bands the byte limit asks for
    count = min(rows, -(-needed // lanes) * lanes)
    assert len(tiles) == n * count
    sizes = [r1 - r0 for _, _, r0, r1 in tiles]
    assert max(sizes) <= per_tile and max(sizes) - min(sizes) <= 1
    assert [(i, r) for i0, _, r0, r1 in tiles for i in [i0] for r in range(r0, r1)] == \
        [(i, r) for i in range(n) for r in range(rows)]


@pytest.mark.parametrize(("block_bytes", "group", "unit", "x_shape"),
                         [(1, 1, 2, (2, 6, 9, 8)), (1, 3, 4, (2, 6, 9, 8)), (30000, 1, 2, (3, 6, 5, 4)),
                          (30000, 3, 4, (3, 6, 8, 8)), (1, 1, 4, (1, 6, 8, 8))])
def test_winograd_blocks(monkeypatch: pytest.MonkeyPatch, block_bytes: int, group: int, unit: int,
                         x_shape: tuple) -> None:
    from mnnpy.backends.cpu.compute import winograd_conv

    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", block_bytes)  # one tile row per block, or several images
    conv = make_conv(6, 9, (3, 3), pads=(1, 1, 1, 1), group=group, relu6=True)
    assert check(conv, CONV, x_shape, f"winograd:{unit}") == "winograd"


@pytest.mark.parametrize(("mode", "pads", "output_hw"), [(SAME, None, (10, 12)), (SAME, None, (9, 11)),
                                                         (CAFFE, (1, 1, 1, 1), (9, 11)),
                                                         (CAFFE, (1, 0, 0, 0), (10, 13))])
def test_deconv_given_output_shape(mode: int, pads: tuple | None, output_hw: tuple[int, int]) -> None:
    conv = make_conv(3, 5, (3, 3), stride=(2, 2), pads=pads, pad_mode=mode, transposed=True)
    x_shape = (1, 3, 5, 6)
    params = conv2d_params(conv, DECONV, x_shape, output_hw)
    assert conv2d_output_shape(params, x_shape)[2:] == output_hw
    x = np.random.default_rng(2).standard_normal(x_shape).astype(np.float32)
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape, unpack_nc4hw4

    kernel = make_conv2d_kernel(conv, DECONV, x_shape, output_hw=output_hw)
    out = np.empty(packed_shape(kernel.out_shape), np.float32)
    kernel.run(pack_nc4hw4(x), out)
    assert_close(unpack_nc4hw4(out, 5), reference_deconv(x.astype(np.float64), conv, params))


@pytest.mark.parametrize(("force", "k", "group", "op", "stride"),
                         [("im2col", (3, 3), 1, CONV, 1), ("im2col", (3, 3), 2, CONV, 2),
                          ("winograd:4", (3, 3), 1, CONV, 1), ("gemm1x1", (1, 1), 1, CONV, 1),
                          ("strassen:1", (1, 1), 1, CONV, 1), ("depthwise", (3, 3), 8, CONV, 1),
                          ("depthwise", (3, 3), 8, CONV, 2), (None, (3, 3), 1, DECONV, 1),
                          (None, (3, 3), 2, DECONV, 2)])
def test_strided_output_view(force: str | None, k: tuple, group: int, op: int, stride: int, cpu_impl: str) -> None:
    """run() must fill an output that is a strided view (e.g. a slice of a larger arena array)."""
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, unpack_nc4hw4

    pads = (1, 1, 1, 1) if k == (3, 3) else None
    conv = make_conv(8, 8, k, stride=(stride, stride), pads=pads, group=group, transposed=op == DECONV, relu=True)
    x_shape = (2, 8, 16, 9)
    x = np.random.default_rng(3).standard_normal(x_shape).astype(np.float32)
    kernel = make_conv2d_kernel(conv, op, x_shape, force=force)
    n, oc, oh, ow = kernel.out_shape
    big = np.full((n, 3, oh + 1, ow + 3, 4), np.nan, np.float32)
    out = big[:, 1:3, 1:, 2:-1]
    kernel.run(pack_nc4hw4(x), out)
    assert np.isnan(big[:, 0]).all() and np.isnan(big[:, :, 0]).all()
    params = conv2d_params(conv, op, x_shape)
    ref = (reference_deconv if op == DECONV else reference_conv)(x.astype(np.float64), conv, params)
    assert_close(unpack_nc4hw4(np.ascontiguousarray(out), oc), ref)


@pytest.mark.parametrize(("ic", "oc", "force", "act"), [(13, 6, "gemm1x1", "relu6"), (16, 20, "strassen:1", "relu"),
                                                        (256, 64, None, None)])
def test_gemm1x1_on_matmul_shaped_input(ic: int, oc: int, force: str | None, act: str | None) -> None:
    """[M, K, 1, 1] (a MatMul converted to a 1x1 convolution) runs straight on the packed arrays, same answer."""
    conv = make_conv(ic, oc, (1, 1), relu=act == "relu", relu6=act == "relu6")
    assert check(conv, CONV, (64, ic, 1, 1), force) in ("gemm1x1", "strassen")
    from mnnpy.backends.cpu.compute.conv import make_conv2d_kernel
    from mnnpy.backends.cpu.compute.nc4hw4 import pack_nc4hw4, packed_shape

    kernel = make_conv2d_kernel(conv, CONV, (64, ic, 1, 1), force=force)
    assert kernel.flat is not None
    x = np.random.default_rng(2).standard_normal((64, ic, 1, 1)).astype(np.float32)
    wide = np.full((*packed_shape(kernel.out_shape)[:-1], 8), np.nan, np.float32)
    kernel.run(pack_nc4hw4(x), wide[..., 2:6])  # a strided output view takes the general path
    contiguous = np.empty(packed_shape(kernel.out_shape), np.float32)
    kernel.run(pack_nc4hw4(x), contiguous)
    np.testing.assert_allclose(wide[..., 2:6], contiguous, rtol=1e-6, atol=1e-6)


LANE_CASES = [
    # (force, ic, oc, k, stride, group, x_shape)
    ("winograd:2", 13, 7, (3, 3), (1, 1), 1, (2, 13, 9, 11)),
    ("winograd:4", 6, 9, (3, 3), (1, 1), 3, (1, 6, 13, 8)),
    ("im2col", 13, 7, (3, 3), (2, 2), 1, (2, 13, 9, 11)),
    ("im2col", 6, 9, (5, 5), (1, 2), 3, (1, 6, 12, 9)),
    ("gemm1x1", 13, 7, (1, 1), (1, 1), 1, (2, 13, 5, 6)),
    ("gemm1x1", 13, 7, (1, 1), (1, 1), 1, (1, 13, 7, 9)),
    ("gemm1x1", 13, 7, (1, 1), (1, 1), 1, (37, 13, 1, 1)),
    ("strassen:1", 16, 16, (1, 1), (1, 1), 1, (1, 16, 8, 8)),
    ("depthwise", 13, 13, (3, 3), (1, 1), 13, (2, 13, 9, 11)),
    ("depthwise", 13, 13, (3, 3), (2, 2), 13, (1, 13, 11, 9)),
]


@pytest.mark.parametrize(("force", "ic", "oc", "k", "stride", "group", "x_shape"), LANE_CASES)
@pytest.mark.parametrize("threads", [2, 3])
def test_lanes_match_reference(monkeypatch: pytest.MonkeyPatch, force: str, ic: int, oc: int, k: tuple,
                               stride: tuple, group: int, x_shape: tuple, threads: int, cpu_impl: str) -> None:
    """numThread > 1 splits the work over lanes (forced on tiny shapes here): same answer as the direct reference."""
    from mnnpy.backends.cpu.compute import blas

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    conv = make_conv(ic, oc, k, stride=stride, pads=(k[0] // 2,) * 4 if k != (1, 1) else None, group=group,
                     relu6=True)
    x = np.random.default_rng(3).standard_normal(x_shape).astype(np.float32)
    got, kernel = run_kernel(conv, DW if force == "depthwise" else CONV, x, force=force, threads=threads)
    params = conv2d_params(conv, DW if force == "depthwise" else CONV, x_shape)
    assert_close(got, reference_conv(x.astype(np.float64), conv, params))
    if kernel.plan.algorithm == "winograd":
        assert len(kernel.positions or kernel.lanes) > 1, "the work was not split"
    lanes = {"im2col": "lanes", "depthwise": "bands", "gemm1x1": "row_chunks"}
    name = lanes.get(kernel.plan.algorithm)
    if name is not None:
        assert len(getattr(kernel, name)) > 1, "the work was not split"
    before = blas.get_blas_threads()
    got_again, _ = run_kernel(conv, DW if force == "depthwise" else CONV, x, force=force, threads=threads)
    np.testing.assert_array_equal(got, got_again)
    assert blas.get_blas_threads() == before  # the BLAS pool size is restored after the lanes


@pytest.mark.parametrize("block_bytes", [1, 1 << 30])
def test_winograd_lanes_split_tiles_or_positions(monkeypatch: pytest.MonkeyPatch, block_bytes: int) -> None:
    """Many blocks: lanes take whole blocks; one weight-heavy block: lanes share the alpha² GEMMs (and weights).
    (Weight-heavy from any weight size here: tiny weights stay whole per lane by default, see the test below.)"""
    from mnnpy.backends.cpu.compute import blas, winograd_conv

    from mnnpy.core import strategy

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(strategy, "WINOGRAD_SPLIT_WEIGHT_BYTES", 0)
    conv = make_conv(32, 36, (3, 3), pads=(1, 1, 1, 1), group=2, relu=True)
    x = np.random.default_rng(4).standard_normal((1, 32, 4, 3)).astype(np.float32)
    got, kernel = run_kernel(conv, CONV, x, force="winograd:2", threads=2)
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, CONV, x.shape)))
    if block_bytes == 1:
        assert kernel.positions is None and len(kernel.lanes) == 2
    else:
        assert kernel.positions == [(0, 8), (8, 16)] and len(kernel.lanes) == 1


def test_winograd_weights_that_fit_l3_stay_whole_per_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """One block whose weights outweigh its tiles but are small (under WINOGRAD_SPLIT_WEIGHT_BYTES transformed):
    the lanes split the tiles, each streaming all the weights, instead of sharing one transformed input."""
    from mnnpy.backends.cpu.compute import blas, winograd_conv

    from mnnpy.core import strategy

    monkeypatch.setattr(blas, "LANE_MIN_FLOPS", 1.0)
    monkeypatch.setattr(winograd_conv, "BLOCK_BYTES", 1 << 30)
    conv = make_conv(32, 36, (3, 3), pads=(1, 1, 1, 1), relu=True)
    x = np.random.default_rng(4).standard_normal((1, 32, 4, 3)).astype(np.float32)
    got, kernel = run_kernel(conv, CONV, x, force="winograd:2", threads=2)
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, CONV, x.shape)))
    assert kernel.positions is None and not kernel.by_channels and len(kernel.lanes) == 2
    monkeypatch.setattr(strategy, "WINOGRAD_SPLIT_WEIGHT_BYTES", 0)  # the same weights counted as large: bands
    _, kernel = run_kernel(conv, CONV, x, force="winograd:2", threads=2)
    assert kernel.by_channels and len(kernel.lanes) == 2
