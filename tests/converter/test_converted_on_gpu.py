"""This session's multi-op conversions (Resize tables, DeformConv, MaxPool indices, bicubic GridSample, grouped
ConvTranspose, recurrent sequence_lens + clip) run on the OpenCL and Vulkan backends (PoCL / lavapipe in CI), each
op natively or on the CPU backup as MNN schedules it, against onnxruntime. The GPU runs happen in a child process
(`support.isolated`: PoCL and lavapipe share LLVM in one process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter import convert

from .helpers import F, make_model, oh, onnx, rel_diff, run_ort

RNG = np.random.default_rng(5)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _cases() -> dict[str, tuple[Any, dict[str, np.ndarray]]]:
    node = oh.make_node
    return {
        "resize_antialias": (make_model([node("Resize", ["x", "", "s"], ["y"], mode="cubic", antialias=1)],
                                        [("x", F, [1, 3, 37, 53])], ["y"],
                                        {"s": np.array([1, 1, 0.3, 0.45], np.float32)}, 19), {"x": _x(1, 3, 37, 53)}),
        "deform_conv": (make_model([node("DeformConv", ["x", "W", "off"], ["y"], kernel_shape=[3, 3],
                                         pads=[1, 1, 1, 1])], [("x", F, [1, 4, 9, 11]), ("off", F, [1, 18, 9, 11])],
                                   ["y"], {"W": _x(5, 4, 3, 3)}, 22), {"x": _x(1, 4, 9, 11), "off": _x(1, 18, 9, 11)}),
        "maxpool_indices": (make_model([node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], strides=[2, 2],
                                             pads=[1, 1, 1, 1])], [("x", F, [1, 3, 9, 9])], ["y", ("i", 7)], {}, 12),
                            {"x": _x(1, 3, 9, 9)}),
        "grid_bicubic": (make_model([node("GridSample", ["x", "g"], ["y"], mode="cubic")],
                                    [("x", F, [1, 3, 7, 9]), ("g", F, [1, 5, 6, 2])], ["y"], {}, 20),
                         {"x": _x(1, 3, 7, 9), "g": RNG.uniform(-1.1, 1.1, (1, 5, 6, 2)).astype(np.float32)}),
        "grouped_deconv": (make_model([node("ConvTranspose", ["x", "w"], ["y"], group=2, strides=[2, 2])],
                                      [("x", F, [1, 6, 5, 5])], ["y"], {"w": _x(6, 2, 3, 3)}, 13),
                           {"x": _x(1, 6, 5, 5)}),
        "lstm_lengths": (make_model([node("LSTM", ["x", "W", "R", "", "L"], ["y"], hidden_size=4, clip=0.5)],
                                    [("x", F, [3, 2, 5])], ["y"], {"W": _x(1, 16, 5), "R": _x(1, 16, 4),
                                                                  "L": np.array([3, 1], np.int32)}, 14),
                         {"x": _x(3, 2, 5)}),
    }


@pytest.mark.parametrize("backend", ["opencl", "vulkan"])
def test_converted_ops_on_gpu_backends(backend: str, tmp_path: Path) -> None:
    from support.isolated import run_isolated
    from support.runners import require_backend

    require_backend(backend)
    for name, (model, feeds) in _cases().items():
        src, dst = tmp_path / f"{name}.onnx", tmp_path / f"{name}.mnn"
        onnx.save(model, str(src))
        convert(str(src), str(dst))
        outputs = [o.name for o in model.graph.output]
        got = run_isolated({"kind": "session", "path": str(dst), "backend": backend, "outputs": outputs,
                            "runs": [feeds]})["runs"][0]
        for out, ref in zip(outputs, run_ort(model, feeds), strict=True):
            assert rel_diff(got[out], ref) <= 1e-5, f"{name} {out} on {backend}"
