"""Weight-only quantization of convolution weights (`--weightQuantBits N`), stored as MNN's IDSTQuan type 1.

Per output channel, asymmetric: w ~= index * scale + min with index in [0, 2^bits - 1]; `alpha` holds (min, scale)
pairs. The buffer is: uint8 shapeDim, shapeDim uint16 dims [oc, rest], uint8 sample count (0 = 256), the linear int8
codebook -2^(bits-1) .. 2^(bits-1) - 1, then the indices packed `bits` wide, high bits first. This is the layout
MNNConvert 3.6.1 writes (readType = oc, aMin = -2^(bits-1), aMaxOrBits = bits).
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from .graph import ConvertError

_CONV_TYPES = {fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise, fb.OpType.Deconvolution,
               fb.OpType.DeconvolutionDepthwise}


def _pack(indices: np.ndarray, bits: int) -> np.ndarray:
    if bits == 8:
        return indices.astype(np.uint8)
    as_bits = np.unpackbits(indices.astype(np.uint8)[:, None], axis=1)[:, 8 - bits:]
    return np.packbits(as_bits.ravel())


def quantize_conv(param: fb.Convolution2DT, bits: int) -> bool:
    """Replace `param.weight` by an IDSTQuan buffer; False when there is nothing to quantize."""
    if param.weight is None or len(param.weight) == 0:
        return False
    oc = max(int(param.common.outputCount), 1)
    weight = np.asarray(param.weight, np.float32).reshape(oc, -1)
    if weight.shape[1] >= 1 << 16 or oc >= 1 << 16:
        return False  # would need the uint32 shape form
    levels = (1 << bits) - 1
    low = weight.min(axis=1)
    scale = (weight.max(axis=1) - low) / levels
    safe = np.where(scale > 0, scale, 1.0)
    index = np.clip(np.rint((weight - low[:, None]) / safe[:, None]), 0, levels).astype(np.int64)
    half = 1 << (bits - 1)
    header = np.concatenate([[2], np.asarray([oc, weight.shape[1]], "<u2").view(np.uint8), [(1 << bits) & 0xFF]])
    codebook = np.arange(-half, half, dtype=np.int64).astype(np.int8).view(np.uint8)
    buffer = np.concatenate([header.astype(np.uint8), codebook, _pack(index.ravel(), bits)])
    quant = fb.IDSTQuanT()
    quant.buffer = buffer.view(np.int8)
    quant.alpha = np.stack([low, scale], axis=1).astype(np.float32).ravel()
    quant.type = 1
    quant.quantScale = 1.0
    quant.aMaxOrBits = bits
    quant.aMin = -half
    quant.readType = oc
    param.quanParameter = quant
    param.weight = None
    return True


def quantize_weights(net: fb.NetT, bits: int) -> int:
    """Quantize every convolution's weights to `bits` (2..8); returns how many ops changed."""
    if not 2 <= bits <= 8:
        raise ConvertError(f"--weightQuantBits must be between 2 and 8, got {bits}")
    changed = 0
    for op in net.oplists or []:
        if op.type in _CONV_TYPES and op.mainType == fb.OpParameter.Convolution2D and op.main is not None:
            changed += quantize_conv(op.main, bits)
    return changed
