"""Winograd F(2x2, 3x3) convolution for the Vulkan backend (MNN: `VulkanWinograd`).

Three dispatches per convolution: `winograd_input` (V = B^T d B per 4x4 input patch), `winograd_gemm` (16
independent GEMMs of the transformed weights U = G g G^T with V over input channel blocks) and `winograd_output`
(Y = A^T M A, bias, ReLU/ReLU6). V and M live in the command's scratch chunk (planned in the arena, reused by later
commands). U is computed once per op in numpy and kept across resizes.

Choice rule (`chosen`): kernel 3x3, stride 1, dilation 1, one group (not depthwise), at least `MIN_CHANNELS`
input and output channels and IC x OC >= `MIN_PRODUCT`. Cost: per 2x2 output tile and (input block, output block)
pair the direct shader does 36 mat4 x vec4 products and Winograd 16, while the transforms add work proportional to
(IC4 + OC4) x tiles plus two dispatches and barriers, so the saving grows with IC x OC. Measured on lavapipe (one
run, 3x3 pad 1): 16->16 @16x16 direct 0.24 ms / Winograd 0.26 ms; 32->32 @32x32 2.7 / 2.0 ms; 64->64 @56x56
56 / 19 ms; 256->256 @14x14 69 / 17 ms; 512->512 @7x7 34 / 20 ms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_CHANNELS = 8
MIN_PRODUCT = 1024
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def chosen(params: Any, in_channels: int, out_channels: int) -> bool:
    """Whether a convolution runs as Winograd F(2,3) (see the module docstring)."""
    return (tuple(params.kernel) == (3, 3) and tuple(params.stride) == (1, 1) and tuple(params.dilation) == (1, 1)
            and params.group == 1 and min(in_channels, out_channels) >= MIN_CHANNELS
            and in_channels * out_channels >= MIN_PRODUCT)


def transform_weights(weight: np.ndarray) -> np.ndarray:
    """(OC, IC, 3, 3) weights -> U = G g G^T packed as `[16][OC4][IC4][4 in][4 out]` float32, zero padded."""
    oc, ic = weight.shape[:2]
    u = np.einsum("ij,ocjk,lk->ocil", _G, weight.astype(np.float64), _G).reshape(oc, ic, 16)
    oc4, ic4 = -(-oc // 4), -(-ic // 4)
    padded = np.zeros((oc4 * 4, ic4 * 4, 16), dtype=np.float64)
    padded[:oc, :ic] = u
    return padded.reshape(oc4, 4, ic4, 4, 16).transpose(4, 0, 2, 3, 1).astype(np.float32)


def tile_counts(batch: int, out_h: int, out_w: int) -> tuple[int, int, int]:
    """(tiles along x, tiles along y, all tiles over the batch) of 2x2 output tiles."""
    tw, th = -(-out_w // 2), -(-out_h // 2)
    return tw, th, batch * th * tw


def scratch_bytes(batch: int, in_channels: int, out_channels: int, out_h: int, out_w: int, itemsize: int) -> int:
    """Bytes of V ([16][IC4][tiles] vec4s, 64-byte aligned) followed by M ([16][OC4][tiles] vec4s)."""
    tiles = tile_counts(batch, out_h, out_w)[2]
    v_bytes = 16 * -(-in_channels // 4) * tiles * 4 * itemsize
    return (v_bytes + 63) // 64 * 64 + 16 * -(-out_channels // 4) * tiles * 4 * itemsize
