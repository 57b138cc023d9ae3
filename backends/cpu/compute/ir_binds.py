"""Foreign calls of the compiled store and Winograd transforms (``llvm_store``, ``llvm_winograd``), each checked
once and bound to its arrays; the kernels come from ``packed_gemm``'s module (``available()`` first)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .packed_gemm import _STATE, _address, _foreign_call


def bind_store_nc4(y: np.ndarray, out: np.ndarray, y2: np.ndarray | None = None, residual: np.ndarray | None = None,
                   clamp: tuple[float, float] = (-np.inf, np.inf), rclamp: tuple[float, float] = (-np.inf, np.inf)
                   ) -> Callable[[], None] | None:
    """NHWC ``y`` [N, R, W, 4B] (+ ``y2``, the same shape and strides), clamped, into the NC4HW4 region ``out``
    [N, B, R, W, 4] (+ ``residual``, shaped like ``out``, clamped again) as one foreign call (``store_nc4`` in
    ``llvm_store``) checked once here; None where the layouts do not fit (each image's rows of pixels contiguous)."""
    n, rows, w, ch = y.shape
    blocks = ch // 4
    arrays = [a for a in (y, y2, out, residual) if a is not None]
    if any(a.dtype != np.float32 or min(a.strides) < 0 for a in arrays) or ch % 4 \
            or out.shape != (n, blocks, rows, w, 4) \
            or (y2 is not None and (y2.shape, y2.strides) != (y.shape, y.strides)) \
            or (residual is not None and residual.shape != out.shape) or not out.flags.writeable \
            or y.strides[3] != 4 or y.strides[1] != w * y.strides[2] \
            or any(a.strides[2:] != (w * 16, 16, 4) for a in (out, residual) if a is not None):
        return None
    args = (_address(y), y.strides[2] // 4, 0 if y2 is None else _address(y2), _address(out), out.strides[1] // 4,
            0 if residual is None else _address(residual), 0 if residual is None else residual.strides[1] // 4,
            rows * w, blocks, n, y.strides[0] // 4, out.strides[0] // 4,
            0 if residual is None else residual.strides[0] // 4, *clamp, *rclamp)
    return _foreign_call(_STATE["store"], args, tuple(arrays))


def bind_winograd_in(unit: int, k: int, xp: np.ndarray, v: np.ndarray, rows: int, tw: int) -> Callable[[], None]:
    """``V = Bᵀ X B`` (``wino_in`` in ``llvm_winograd``) of ``rows`` x ``tw`` tiles whose first padded row is
    ``xp`` [Hp', Wp, Cp] (rows from the tiles' first on, C-contiguous) into ``v`` [alpha², T, Cp] (T >= rows x tw),
    one foreign call checked once here."""
    a, (hp, wp, cp), (planes, t, vcp) = unit + k - 1, xp.shape, v.shape
    if not (xp.flags.c_contiguous and v.strides[1:] == (cp * 4, 4) and v.strides[0] >= t * cp * 4 and vcp == cp
            and planes == a * a and rows * tw <= t and (rows - 1) * unit + a <= hp and (tw - 1) * unit + a <= wp
            and cp % _STATE["vw"] == 0 and xp.dtype == v.dtype == np.float32 and v.flags.writeable):
        raise ValueError(f"Winograd input transform: cannot read {xp.shape} into {v.shape}")
    return _foreign_call(_STATE["wino"][unit, k][0], (_address(xp), wp * cp, cp, _address(v), v.strides[0] // 4, rows,
                                                       tw), (xp, v))


def bind_winograd_out(unit: int, k: int, m: np.ndarray, y: np.ndarray, bias: np.ndarray,
                      clamp: tuple[float, float]) -> Callable[[], None]:
    """``Y = Aᵀ M A + bias``, clamped (``wino_out`` in ``llvm_winograd``): ``m`` [alpha², T, C] into ``y`` [u², T, C]
    (which may be m's memory), ``bias`` [C]; one foreign call checked once here."""
    a = unit + k - 1
    if not (m.shape[0] == a * a and y.shape == (unit * unit, *m.shape[1:]) and bias.shape == (m.shape[2],)
            and all(x.dtype == np.float32 and x.strides[2] == 4 for x in (m, y, bias[None, None]))
            and m.shape[2] % _STATE["vw"] == 0 and bias.flags.c_contiguous and y.flags.writeable
            and min(m.strides + y.strides) > 0):
        raise ValueError(f"Winograd output transform: cannot write {m.shape} into {y.shape}")
    args = (_address(m), m.strides[0] // 4, m.strides[1] // 4, _address(y), y.strides[0] // 4, y.strides[1] // 4,
            m.shape[1], m.shape[2], _address(bias), *clamp)
    return _foreign_call(_STATE["wino"][unit, k][1], args, (m, y, bias))


def bind_winograd_store(unit: int, k: int, m: np.ndarray, bias: np.ndarray, clamp: tuple[float, float],
                        out: np.ndarray, residual: np.ndarray | None, rclamp: tuple[float, float],
                        tiles: tuple[int, int]) -> Callable[[], None] | None:
    """The output transform of ``m`` [alpha², T, C] (T = tiles[0] x tiles[1] tile rows x columns) with ``bias``,
    clamped, stored straight into ``out``: an NC4HW4 region [C/4, rows, cols, 4] or an NHWC one [rows, cols, C]
    starting at the tiles' first pixel (rows and columns past its end are not written), plus ``residual`` (NC4HW4,
    shaped like ``out``) clamped to ``rclamp``; one foreign call (``wino_store`` in ``llvm_winograd``) checked once
    here. None where it does not apply (layouts, channel counts)."""
    a, (trows, tw) = unit + k - 1, tiles
    ch = m.shape[2]
    if out.ndim == 4:
        if out.shape[0] * 4 != ch:
            return None
        rows, cols = out.shape[1], out.shape[2]
        strides = (out.strides[1], out.strides[2], out.strides[0])
    elif out.ndim == 3 and out.shape[2] == ch and residual is None:
        rows, cols = out.shape[:2]
        strides = (out.strides[0], out.strides[1], 16)
    else:
        return None
    if not (m.shape[0] == a * a and m.shape[1] == trows * tw and bias.shape == (ch,) and m.strides[2] == 4
            and ch % _STATE["vw"] == 0 and bias.flags.c_contiguous and out.flags.writeable and out.strides[-1] == 4
            and (out.ndim == 3 or out.shape[3] == 4) and rows <= trows * unit and cols <= tw * unit
            and all(x.dtype == np.float32 for x in (m, bias, out)) and min(strides) > 0
            and (residual is None or (residual.shape == out.shape and residual.strides[-1] == 4
                                      and residual.dtype == np.float32))):
        return None
    rs = (0, 0, 0) if residual is None else (residual.strides[1], residual.strides[2], residual.strides[0])
    args = (_address(m), m.strides[0] // 4, m.strides[1] // 4, _address(bias), *clamp, _address(out),
            *(x // 4 for x in strides), 0 if residual is None else _address(residual), *(x // 4 for x in rs), *rclamp,
            trows, tw, rows, cols, ch)
    return _foreign_call(_STATE["wino"][unit, k][2], args, tuple(x for x in (m, bias, out, residual) if x is not None))
