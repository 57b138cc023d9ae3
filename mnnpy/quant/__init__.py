"""Full int8 quantisation (``mnnpy quant MODEL.mnn OUT.mnn CONFIG.json``), MNN's quantization tool in Python.

``quantize_model`` validates the config and calibration data, runs the float model on the CPU backend to collect
activation ranges, and writes the model in MNN's int8 representation (``model``), which official MNN loads.
``lower.interpreter`` runs such a model in mnnpy with the int8 CPU kernels.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import QuantConfig, QuantConfigError, load_config, load_samples
from .lower import interpreter, is_quantized, lower_int8

__all__ = ["QuantConfig", "QuantConfigError", "QuantReport", "interpreter", "is_quantized", "load_config",
           "lower_int8", "quantize_model"]


@dataclass
class QuantReport:
    """What a quantisation run did."""

    samples: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    kept_float: list[str] = field(default_factory=list)  # why each kept-float convolution was kept

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"{self.counts.get('convs', 0)} convolutions int8 ({self.counts.get('skipped', 0)} kept float), "
                f"{self.samples} calibration samples, {self.bytes_in} -> {self.bytes_out} bytes "
                f"in {self.seconds:.2f} s")


def input_shapes(net: Any) -> dict[str, tuple[int, ...]]:
    """Declared input shapes by name.

    Raises:
        QuantConfigError: an input with unknown (-1) dimensions.
    """
    from mnnpy.schema import mnn_generated as fb

    names = [str(n) for n in net.tensorName or []]
    shapes = {}
    for op in net.oplists or []:
        if op.type != fb.OpType.Input:
            continue
        idx = int(np.asarray(op.outputIndexes).ravel()[0])
        dims = tuple(int(d) for d in np.asarray(op.main.dims if op.main is not None and op.main.dims is not None
                                                else []).ravel())
        if not dims or any(d < 0 for d in dims):
            raise QuantConfigError(f"model input {names[idx]!r} has unknown dims {dims}; give a fixed-shape model")
        shapes[names[idx]] = dims
    return shapes


def quantize_model(src: str | Path, dst: str | Path | None, config: str | Path | dict[str, Any] | QuantConfig,
                   progress: Callable[[str], None] | None = None) -> tuple[Any, QuantReport]:
    """Calibrate ``src`` (float .mnn) and write the int8 model to ``dst`` (skipped when None).

    Raises:
        QuantConfigError: bad config or calibration data (before any calibration run).
        ModelError: an unreadable model.
    """
    from mnnpy.schema import load_net, net_to_bytes, save_net

    from . import calibrate, model

    start = time.perf_counter()
    src = Path(src)
    if not src.is_file():
        raise QuantConfigError(f"model not found: {src}")
    cfg = config if isinstance(config, QuantConfig) else load_config(config)
    raw = src.read_bytes()
    net = load_net(raw)
    if is_quantized(net):
        raise QuantConfigError(f"{src} is already quantised")
    samples = load_samples(cfg, input_shapes(net))
    quant_plan = model.plan(net, cfg.skip_ops)
    if not quant_plan.convs:
        raise QuantConfigError(f"{src} has no convolution with constant float weights to quantise")
    thresholds = calibrate.calibrate(raw, samples, quant_plan.targets, cfg.feature_method, progress, cfg.batch_size)
    kept: list[str] = []
    counts = model.apply(net, quant_plan, thresholds, cfg.feature_clamp, cfg.weight_clamp, cfg.weight_method, kept)
    data = net_to_bytes(net)
    if dst is not None:
        save_net(net, dst)
    report = QuantReport(len(samples), counts, len(raw), len(data), time.perf_counter() - start, kept)
    return net, report
