"""Generated test images for the `mnnpy.cv` tests (imported as `cv.cv_images`)."""

from __future__ import annotations

import numpy as np


def gen_images() -> list[np.ndarray]:
    """Generated test images: odd sizes, 1/3/4 channels, uint8 and float32 (fixed seed)."""
    rs = np.random.RandomState(7)
    return [
        rs.randint(0, 256, (23, 31, 3)).astype(np.uint8),
        rs.randint(0, 256, (17, 29)).astype(np.uint8),
        rs.randint(0, 256, (19, 21, 4)).astype(np.uint8),
        (rs.rand(21, 27, 3) * 255).astype(np.float32),
        rs.rand(15, 33).astype(np.float32),
    ]


def image_ids() -> list[str]:
    """Readable ids for `gen_images()`."""
    return [f"{'x'.join(map(str, im.shape))}-{im.dtype}" for im in gen_images()]
