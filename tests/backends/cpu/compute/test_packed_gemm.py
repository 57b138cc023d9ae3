"""The packed GEMM (``compute/packed_gemm.py``): the LLVM-IR micro-kernel against a float64 numpy product, within the
float32 dot-product error bound (K * 2^-24 * sum |a| |b|, Higham's gamma_K), on the shapes its tiling has edges for
(rows past the last whole tile, columns past the last whole panel, K = 1), row strides, batches, a row window of the
packed weights, bias, clamp (NaN passes), the columns it must not write, the input it refuses, and its on-disk cache
(a fresh process loads the linked shared object instead of compiling; a corrupt one is rebuilt)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import ir_binds
from mnnpy.backends.cpu.compute import packed_gemm as pg


@pytest.fixture(autouse=True)
def _kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNNPY_JIT", raising=False)
    if not pg.available():
        pytest.skip(f"the packed GEMM cannot run here: {pg.describe()}")


def _check(out: np.ndarray, a: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
           lo: float = -np.inf, hi: float = np.inf) -> None:
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    want = np.matmul(a64, w64) + (0.0 if bias is None else bias.astype(np.float64))
    bound = a.shape[-1] * 2.0 ** -24 * (np.matmul(np.abs(a64), np.abs(w64)) + (0.0 if bias is None else
                                                                              np.abs(bias.astype(np.float64))))
    want = np.clip(want, lo, hi)
    assert np.all(np.abs(out - want) <= bound + 1e-30), float(np.max(np.abs(out - want) - bound))


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (5, 3, 7), (8, 17, 32), (9, 16, 33), (23, 64, 100),
                                           (49, 321, 65), (100, 8, 16), (6, 1, 200)])
def test_matches_numpy_with_bias_and_clamp(m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    packed = pg.PackedWeights(w, bias)
    out = np.empty((m, n), np.float32)
    packed.matmul(a, out)
    _check(out, a, w, bias)
    packed.matmul(a, out, 0.0, 6.0)
    _check(out, a, w, bias, 0.0, 6.0)
    packed.matmul(a, out, bias=False)
    _check(out, a, w)


def test_row_strides_and_untouched_columns() -> None:
    rng = np.random.default_rng(1)
    a_buf = rng.standard_normal((30, 40)).astype(np.float32)
    a = a_buf[:, 3:3 + 21]  # lda 40, K 21
    w = rng.standard_normal((21, 37)).astype(np.float32)
    out_buf = np.full((30, 50), 7.0, np.float32)
    out = out_buf[:, 5:5 + 37]
    pg.PackedWeights(w).matmul(a, out)
    _check(out, a, w)
    assert np.all(out_buf[:, :5] == 7.0) and np.all(out_buf[:, 42:] == 7.0)


def test_row_window_of_the_weights() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((20, 45)).astype(np.float32)
    a = rng.standard_normal((11, 7)).astype(np.float32)
    out = np.empty((11, 45), np.float32)
    pg.PackedWeights(w, np.ones(45, np.float32)).matmul(a, out, rows=7, first=9, bias=False)
    _check(out, a, w[9:16])


def test_batch_and_batch_start() -> None:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 13, 40)).astype(np.float32)
    a = rng.standard_normal((6, 10, 13)).astype(np.float32)
    packed = pg.PackedWeights(w)
    out = np.empty((6, 10, 40), np.float32)
    packed.matmul(a, out)
    _check(out, a, w)
    part = np.empty((3, 10, 40), np.float32)
    packed.matmul(a[2:5], part, start=2)
    _check(part, a[2:5], w[2:5])


def test_nan_passes_the_clamp() -> None:
    a = np.ones((9, 4), np.float32)
    a[3, 1] = np.nan
    out = np.empty((9, 5), np.float32)
    pg.PackedWeights(np.ones((4, 5), np.float32)).matmul(a, out, 0.0, 6.0)
    assert np.all(np.isnan(out[3])) and np.all(out[np.arange(9) != 3] == 4.0)


@pytest.mark.parametrize("case", ["dtype", "shape", "column stride", "rows", "read-only out"])
def test_refuses_what_it_cannot_read(case: str) -> None:
    packed = pg.PackedWeights(np.ones((4, 5), np.float32))
    a, out = np.ones((3, 4), np.float32), np.empty((3, 5), np.float32)
    kwargs = {}
    if case == "dtype":
        a = a.astype(np.float64)
    elif case == "shape":
        out = np.empty((2, 5), np.float32)
    elif case == "column stride":
        a = np.ones((3, 8), np.float32)[:, ::2]
    elif case == "rows":
        kwargs = {"rows": 4, "first": 1}
    else:
        out.flags.writeable = False
    with pytest.raises(ValueError, match="packed GEMM"):
        packed.matmul(a, out, **kwargs)


_PROBE = ("from mnnpy.backends.cpu.compute import packed_gemm as pg; import numpy as np; assert pg.available(); "
          "out = np.empty((3, 2), np.float32); pg.PackedWeights(np.ones((4, 2), np.float32)).matmul("
          "np.ones((3, 4), np.float32), out); assert (out == 4).all(); print(pg.describe())")


def _probe(cache: Path) -> str:
    env = {**os.environ, "MNNPY_CACHE_DIR": str(cache)}
    env.pop("MNNPY_JIT", None)
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_fresh_process_loads_the_cached_kernel(tmp_path: Path) -> None:
    from mnnpy.backends.cpu.compute import packed_gemm

    stale = []  # other versions' builds: all but the most recently used are pruned when a new one is linked
    for k in range(packed_gemm.KEEP_BUILDS + 2):
        stale.append(tmp_path / f"packed_gemm-old{k}.so")
        stale[-1].write_bytes(b"old")
        os.utime(stale[-1], (1e9 + k, 1e9 + k))
    other = tmp_path / "packed_gemm-notes.txt"  # not a build: left alone
    other.write_text("mine")
    first = _probe(tmp_path)
    if "compiled in memory" in first:
        pytest.skip(f"no linker here: the kernel stays in memory ({first.strip()})")
    assert sorted(f.name for f in tmp_path.glob("packed_gemm-old*.so")) == \
        [f.name for f in stale[-(packed_gemm.KEEP_BUILDS - 1):]]
    assert other.read_text() == "mine"
    for f in stale:
        f.unlink(missing_ok=True)
    built = list(tmp_path.glob("packed_gemm-*.so"))
    built = list(tmp_path.glob("packed_gemm-*.so"))
    assert len(built) == 1 and "compiled to" in first
    assert "cached" in _probe(tmp_path)
    built[0].write_bytes(b"not a shared object")
    assert "compiled to" in _probe(tmp_path)  # rebuilt over the corrupt file
    assert "cached" in _probe(tmp_path)


def test_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNNPY_JIT", "0")
    assert not pg.available() and "off" in pg.describe()


@pytest.mark.parametrize("block_bytes", [1, 4 * 40 * 9, 4 * 40 * 16])
def test_row_blocks(monkeypatch: pytest.MonkeyPatch, block_bytes: int) -> None:
    """C in blocks of rows (``ROW_BLOCK_BYTES``): one tile per block, blocks with a partial tile, a batch."""
    monkeypatch.setattr(pg, "ROW_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(block_bytes)
    w = rng.standard_normal((3, 21, 40)).astype(np.float32)
    a = rng.standard_normal((3, 37, 21)).astype(np.float32)
    out = np.empty((3, 37, 40), np.float32)
    pg.PackedWeights(w).bind(a, out)()
    _check(out, a, w)
    flat = np.empty((37, 40), np.float32)
    pg.PackedWeights(w[1], np.ones(40, np.float32)).matmul(a[1], flat, 0.0, 6.0)
    _check(flat, a[1], w[1], np.ones(40, np.float32), 0.0, 6.0)


@pytest.mark.parametrize(("ic", "oc", "unit"), [(5, 40, 2), (8, 64, 4), (3, 7, 6), (16, 33, 4)])
def test_winograd_weights_straight_into_panels(ic: int, oc: int, unit: int) -> None:
    """``winograd.transform_weights_into_panels`` gives the panels that packing ``transform_weights`` would."""
    from mnnpy.backends.cpu.compute.winograd import transform_weights, transform_weights_into_panels

    w = np.random.default_rng(ic * oc).standard_normal((1, oc, ic, 3, 3)).astype(np.float32)
    icp, ocp = -(-ic // 4) * 4, -(-oc // 4) * 4
    want = pg.PackedWeights(transform_weights(w, unit, icp, ocp)[0])
    got = pg.PackedWeights(None, shape=((unit + 2) ** 2, icp, ocp))
    transform_weights_into_panels(w, unit, got.panels)
    np.testing.assert_allclose(got.panels, want.panels, rtol=1e-6, atol=1e-6)


def test_implicit_rows_stay_inside_their_buffer() -> None:
    """``bind_implicit`` checks the last address it would read once, and refuses what reaches past the buffer."""
    packed = pg.PackedWeights(np.ones((6, 4), np.float32))
    base = np.arange(40, dtype=np.float32)
    out = np.empty((2, 3, 4), np.float32)
    packed.bind_implicit(base, 0, (10, 2, 3), (2, 3, 5), out)()  # product t, row i: base[10t + 2i + {0,1,2,5,6,7}]
    want = np.array([[sum(base[10 * t + 2 * i + j] for j in (0, 1, 2, 5, 6, 7)) for i in range(3)] for t in range(2)])
    np.testing.assert_allclose(out[..., 0], want)
    with pytest.raises(ValueError, match="packed GEMM"):
        packed.bind_implicit(base, 23, (10, 2, 3), (2, 3, 5), out)  # the last row would read base[40]


@pytest.mark.parametrize(("shape", "window", "pads"), [((1, 16, 30, 28), (3, 3, 2, 2), (1, 1)),
                                                      ((2, 3, 7, 9), (2, 3, 1, 2), (0, 1)),
                                                      ((1, 2, 5, 5), (3, 3, 1, 1), (1, 1))])
def test_max_pool_kernel(shape: tuple[int, ...], window: tuple[int, ...], pads: tuple[int, int]) -> None:
    """``bind_max_pool`` against numpy's maximum over the taps of a -inf-bordered copy; a NaN wins its windows."""
    (n, c4, h, w), (kh, kw, sh, sw), (top, left) = shape, window, pads
    x = np.random.default_rng(h * w).standard_normal((n, c4, h, w, 4)).astype(np.float32)
    x[0, 0, 2, 2, 1] = np.nan
    oh, ow = (h + 2 * top - kh) // sh + 1, (w + 2 * left - kw) // sw + 1
    padded = np.full((n, c4, h + 2 * top + kh, w + 2 * left + kw, 4), -np.inf, np.float32)
    padded[:, :, top: top + h, left: left + w] = x
    want = np.full((n, c4, oh, ow, 4), -np.inf, np.float32)
    for ky in range(kh):
        for kx in range(kw):
            want = np.maximum(want, padded[:, :, ky: ky + (oh - 1) * sh + 1: sh, kx: kx + (ow - 1) * sw + 1: sw])
    y = np.empty_like(want)
    pg.bind_max_pool(x, y, window, pads)()
    np.testing.assert_array_equal(y, want)
    assert np.isnan(y).any()
    with pytest.raises(ValueError, match="max pool"):
        pg.bind_max_pool(x.astype(np.float64), y, window, pads)


def test_store_nc4_adds_clamps_and_packs_regions() -> None:
    """The compiled store: NHWC rows (a region of a bigger buffer) plus a second partial, clamped (ReLU6), into a
    region of NC4HW4 planes plus a residual, clamped again (ReLU); a NaN passes both clamps; nothing outside the
    region is written; layouts it cannot address are refused (None)."""
    rng = np.random.default_rng(0)
    ys = [rng.standard_normal((2, 9, 7, 24)).astype(np.float32) for _ in range(2)]
    ys[0][0, 3, 2, 5] = np.nan
    whole = np.zeros((2, 8, 9, 7, 4), np.float32)
    residual = rng.standard_normal(whole.shape).astype(np.float32)
    y, y2 = (a[:, 2:6, :, 4:20] for a in ys)
    out, res = whole[:, 1:5, 2:6], residual[:, 1:5, 2:6]
    store = ir_binds.bind_store_nc4(y, out, y2, res, (0.0, 6.0), (0.0, np.inf))
    assert store is not None
    store()
    total = (y.astype(np.float64) + y2).reshape(2, 4, 7, 4, 4).transpose(0, 3, 1, 2, 4)
    want = np.maximum(np.clip(total, 0, 6) + res, 0)  # (numpy's clip and maximum keep NaN too)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    assert np.isnan(out[0, 0, 1, 2, 1])  # (row 3 - 2, pixel 2, channel 5 - 4)
    outside = whole.copy()
    outside[:, 1:5, 2:6] = 0
    assert not outside.any()
    assert ir_binds.bind_store_nc4(y, whole[:, 1:5, 2:6, ::-1]) is None  # reversed pixels
    assert ir_binds.bind_store_nc4(y[:, :, ::2], out[:, :, :, :4]) is None  # pixels not contiguous in y


def test_columns_share_the_panels() -> None:
    """``columns(c0, c1)``: a band of output columns over the same panels and bias (no copy), equal to those columns
    of the whole product; a band must start at a panel."""
    rng = np.random.default_rng(5)
    nr = pg.panel_width()
    w, bias = rng.standard_normal((37, 3 * nr + 5)).astype(np.float32), rng.standard_normal(3 * nr + 5)
    packed = pg.PackedWeights(w, bias.astype(np.float32))
    a = rng.standard_normal((11, 37)).astype(np.float32)
    whole = np.empty((11, w.shape[1]), np.float32)
    packed.matmul(a, whole, 0.0, np.inf)
    for c0, c1 in ((0, nr), (nr, 3 * nr + 5), (2 * nr, 2 * nr + 3)):
        band = packed.columns(c0, c1)
        assert np.shares_memory(band.panels, packed.panels)
        out = np.empty((11, c1 - c0), np.float32)
        band.matmul(a, out, 0.0, np.inf)
        np.testing.assert_array_equal(out, whole[:, c0:c1])
    with pytest.raises(ValueError, match="columns"):
        packed.columns(3, nr)


_AVX2 = """
import sys
from mnnpy.backends.cpu.compute import packed_gemm as pg
real = pg._cpu_flags
pg._cpu_flags = lambda: (lambda m, f: (m + " (avx2 test)", {x for x in f if not x.startswith("avx512")}))(*real())
assert pg.available() and pg.vector_width() == 8, pg.describe()
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-k", "not avx2 and not fresh_process", *sys.argv[1:]]))
"""


def test_the_avx2_kernels_too(tmp_path: Path) -> None:
    """On an AVX-512 machine, the AVX2 build of the same kernels (8-float vectors, 6-row tiles) runs this file's
    tests and the compiled Winograd transforms' (in a process that hides the AVX-512 flags)."""
    if "avx512f" not in (pg._cpu_flags() or ("", set()))[1]:
        pytest.skip("this machine has no AVX-512: the AVX2 kernels are the ones every test runs already")
    env = {**os.environ, "MNNPY_CACHE_DIR": str(tmp_path)}
    env.pop("MNNPY_JIT", None)
    here = Path(__file__).resolve()
    done = subprocess.run([sys.executable, "-c", _AVX2, str(here),
                           str(here.parents[1] / "test_speed_kernels.py::test_winograd_compiled_transforms")],
                          env=env, capture_output=True, text=True, timeout=300, cwd=here.parents[4])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
