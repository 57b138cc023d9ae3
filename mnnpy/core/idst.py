"""Decoding of weight-only quantised convolution weights (``IDSTQuan``, mnn-facts §1.5), done once at make time.

Supported: ``type`` 1 (dense codebook indices, any bit width, symmetric or asymmetric, per channel or per
block) and ``type`` 3 (raw float16). Sparse (2) and legacy int8 (4) raise ``NotImplementedError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mnnpy.schema import mnn_generated as fb

DENSE, SPARSE, FP16, LEGACY_INT8 = 1, 2, 3, 4
CONVS = (fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise)  # the op types IDSTQuan weights ride on


def is_int8_conv(op: Any) -> bool:
    """A convolution whose ``quanParameter`` carries feature scales (full int8, ``mnnpy quant`` / ``mnnquant``)."""
    q = getattr(op.main, "quanParameter", None) if op.type in CONVS and op.main is not None else None
    return q is not None and q.type == DENSE and q.scaleIn > 0 and q.scaleOut > 0


def is_quantized(net: Any) -> bool:
    """True when the net carries feature scales. Here, not in ``mnnpy.quant``, so that loading a float model does not
    import the quantisation tool (~25 ms of imports on the first ``Interpreter`` of a process)."""
    return any(is_int8_conv(op) for op in net.oplists or [])


def _bytes(values: Any) -> np.ndarray:
    if isinstance(values, bytes | bytearray | memoryview):
        return np.frombuffer(values, dtype=np.uint8)
    return np.asarray(values).astype(np.int64).astype(np.uint8)  # flatc gives int8 lists/arrays


def _unpack_indices(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """MSB-first bit stream of ``count`` unsigned ``bits``-wide codes."""
    if bits == 8:
        return packed[:count].astype(np.int64)
    stream = np.unpackbits(packed)[: bits * count].reshape(count, bits).astype(np.int64)
    return stream @ (1 << np.arange(bits - 1, -1, -1, dtype=np.int64))


def _dense_codes(buf: np.ndarray, shape_int32: bool) -> tuple[np.ndarray, tuple[int, ...]]:
    dims = int(buf[0])
    pos = 1
    width = 4 if shape_int32 else 2
    shape = tuple(int(v) for v in buf[pos : pos + dims * width].view(f"<u{width}"))
    pos += dims * width
    count = math.prod(shape)
    samples = int(buf[pos]) or 256
    pos += 1
    codebook = np.sort(buf[pos : pos + samples].view(np.int8).astype(np.int64))
    pos += samples
    bits = max(1, math.ceil(math.log2(samples)))
    nbytes = math.ceil(bits * count / 8)
    if pos + nbytes > len(buf):
        raise ValueError("quantised weight buffer is truncated")
    idx = _unpack_indices(buf[pos : pos + nbytes], bits, count)
    if idx.size and idx.max() >= samples:
        raise ValueError("quantised weight index outside its codebook")
    return codebook[idx], shape


def dequantize_idst(quan: Any, out_channels: int, size: int) -> np.ndarray:
    """Float32 weights (flat, ``size`` values, stored op layout) from an ``IDSTQuanT``.

    Args:
        quan: the ``quanParameter`` table.
        out_channels: rows of the per-channel scales: the conv's outputCount, for a Deconvolution too (MNN
            splits the flat stored weights into outputCount equal rows whatever the layout).
        size: expected number of weight values.

    Raises:
        NotImplementedError: for sparse or legacy encodings.
        ValueError: for a malformed buffer.
    """
    buf = _bytes(quan.buffer if quan.buffer is not None else b"")
    if quan.type == FP16:
        weights = buf[: 2 * size].view("<f2").astype(np.float32)
    elif quan.type == DENSE:
        codes, _ = _dense_codes(buf, bool(quan.shapeInt32))
        alpha = np.asarray(quan.alpha if quan.alpha is not None else [], dtype=np.float32)
        if quan.quantScale not in (0.0, 1.0):
            alpha = alpha * np.float32(quan.quantScale)
        weights = _scale(codes[:size], alpha, quan, out_channels, size)
    else:
        raise NotImplementedError(f"IDSTQuan type {quan.type} (sparse/legacy) is not supported")
    if weights.size != size:
        raise ValueError(f"quantised weight has {weights.size} values, expected {size}")
    return weights


def _scale(codes: np.ndarray, alpha: np.ndarray, quan: Any, rows: int, size: int) -> np.ndarray:
    if codes.size != size:
        raise ValueError(f"quantised weight has {codes.size} values, expected {size}")
    asymmetric = quan.readType != 0 or alpha.size == 2 * rows
    per_row = alpha.size // (2 if asymmetric else 1)
    if per_row == 0 or per_row % rows or (size // rows) % (per_row // rows):
        raise ValueError(f"{alpha.size} quantisation scales do not fit {rows} channels")
    blocks = per_row // rows
    q = codes.reshape(rows, blocks, -1).astype(np.float32)
    if asymmetric:
        pairs = alpha.reshape(rows, blocks, 1, 2)
        w = (q - np.float32(quan.aMin)) * pairs[..., 1] + pairs[..., 0]
    else:
        w = q * alpha.reshape(rows, blocks, 1)
    return w.reshape(size).astype(np.float32)
