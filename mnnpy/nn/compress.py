"""Quantisation-aware training (MNN: `MNN.nn.compress`): not available, mnnpy does no training."""

from __future__ import annotations

import enum
from typing import Any


class Feature_Scale_Method(enum.Enum):  # noqa: N801 - MNN's name
    """How feature scales are computed (MNN: `nn.compress.Feature_Scale_Method`)."""

    PER_TENSOR = 0
    PER_CHANNEL = 1


class Scale_Update_Method(enum.Enum):  # noqa: N801 - MNN's name
    """How scales are updated (MNN: `nn.compress.Scale_Update_Method`)."""

    MAXIMUM = 0
    MOVING_AVERAGE = 1


PER_TENSOR, PER_CHANNEL = Feature_Scale_Method.PER_TENSOR, Feature_Scale_Method.PER_CHANNEL
MAXIMUM, MOVING_AVERAGE = Scale_Update_Method.MAXIMUM, Scale_Update_Method.MOVING_AVERAGE


def train_quant(*args: Any, **kwargs: Any) -> bool:
    """Not implemented: mnnpy has no training (MNN: `nn.compress.train_quant`)."""
    raise NotImplementedError("mnnpy.nn does not implement compress.train_quant (no training support)")
