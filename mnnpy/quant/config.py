"""Calibration config in the keys of MNN's quantization tool (``mnnquant src.mnn dst.mnn config.json``).

Keys: ``path`` (image folder, ``.npy``/``.npz`` file, or a folder of them), ``format`` (RGB/BGR/RGBA/GRAY),
``mean``/``normal`` (``dst = (src - mean) * normal``), ``width``/``height``, ``used_image_num``,
``feature_quantize_method`` (KL / EMA / MAX_ABS; MSE as an mnnpy extension),
``weight_quantize_method`` (MAX_ABS / ADMM),
``feature_clamp_value``, ``weight_clamp_value``, ``batch_size`` (EMA), ``quant_bits`` (8),
``skip_quant_op_names``, ``input_type`` (``image`` or ``npy``). Everything is checked before any work starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mnnpy.schema.errors import ModelError

FEATURE_METHODS = ("KL", "EMA", "MAX_ABS", "MSE")
WEIGHT_METHODS = ("MAX_ABS", "ADMM")
FORMATS = {"RGB": 3, "BGR": 3, "RGBA": 4, "BGRA": 4, "GRAY": 1}
IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp")
ARRAY_EXT = (".npy", ".npz")
KNOWN = {"path", "format", "mean", "normal", "width", "height", "used_image_num", "used_sample_num",
         "feature_quantize_method", "weight_quantize_method", "feature_clamp_value", "weight_clamp_value",
         "batch_size", "quant_bits", "skip_quant_op_names", "input_type", "debug", "winogradOpt", "inputs"}


class QuantConfigError(ModelError):
    """A calibration config that cannot be used (raised before any calibration work)."""


@dataclass
class QuantConfig:
    """A validated calibration config."""

    files: list[Path]
    input_type: str = "image"
    format: str = "RGB"
    mean: list[float] = field(default_factory=lambda: [0.0])
    normal: list[float] = field(default_factory=lambda: [1.0])
    width: int = 0
    height: int = 0
    feature_method: str = "KL"
    weight_method: str = "MAX_ABS"
    feature_clamp: int = 127
    weight_clamp: int = 127
    batch_size: int = 1
    skip_ops: list[str] = field(default_factory=list)
    limit: int | None = None  # used_image_num: samples to use (files, or samples across .npy batches)


def _choice(raw: dict[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = str(raw.get(key, default)).upper()
    if value not in allowed:
        raise QuantConfigError(f"{key} {value!r} is not supported (supported: {', '.join(allowed)})")
    return value


def _int(raw: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise QuantConfigError(f"{key} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def load_config(source: str | Path | dict[str, Any], base: str | Path | None = None) -> QuantConfig:
    """Read and validate a config (a JSON file or an already-parsed dict); relative paths are taken from ``base``.

    Raises:
        QuantConfigError: unreadable JSON, unknown method, missing or empty data path, bad numbers.
    """
    if isinstance(source, dict):
        raw = source
        root = Path(base) if base is not None else Path.cwd()
    else:
        cfg_path = Path(source)
        if not cfg_path.is_file():
            raise QuantConfigError(f"calibration config not found: {cfg_path}")
        try:
            raw = json.loads(cfg_path.read_text())
        except (OSError, ValueError) as exc:
            raise QuantConfigError(f"calibration config {cfg_path} is not valid JSON: {exc}") from exc
        root = Path(base) if base is not None else cfg_path.parent
    if not isinstance(raw, dict):
        raise QuantConfigError("calibration config must be a JSON object")
    unknown = sorted(set(raw) - KNOWN)
    if unknown:
        raise QuantConfigError(f"unknown calibration config key(s) {unknown}")
    if "path" not in raw:
        raise QuantConfigError("calibration config needs 'path' (image folder or .npy/.npz data)")
    if _int(raw, "quant_bits", 8, 2, 8) != 8:
        raise QuantConfigError("only quant_bits 8 is supported for full int8 models")
    data = Path(str(raw["path"]))
    data = data if data.is_absolute() else root / data
    files = _data_files(data)
    limit = raw.get("used_image_num", raw.get("used_sample_num"))
    if limit is not None:
        if not isinstance(limit, int) or limit <= 0:
            raise QuantConfigError(f"used_image_num must be a positive integer, got {limit!r}")
        files = files[:limit]
    input_type = str(raw.get("input_type", "npy" if files[0].suffix in ARRAY_EXT else "image")).lower()
    if input_type not in ("image", "npy", "sequence"):
        raise QuantConfigError(f"input_type {input_type!r} is not supported (image, npy)")
    cfg = QuantConfig(files=files, input_type="image" if input_type == "image" else "npy", limit=limit)
    cfg.format = _choice(raw, "format", tuple(FORMATS), "RGB")
    for key in ("mean", "normal"):
        value = raw.get(key, [0.0] if key == "mean" else [1.0])
        value = [value] if isinstance(value, int | float) else value
        if not isinstance(value, list) or not value or not all(isinstance(v, int | float) for v in value):
            raise QuantConfigError(f"{key} must be a list of numbers, got {value!r}")
        if len(value) not in (1, FORMATS[cfg.format]):
            raise QuantConfigError(f"{key} has {len(value)} values for format {cfg.format}")
        setattr(cfg, key, [float(v) for v in value])
    cfg.width = _int(raw, "width", 0, 0, 1 << 16)
    cfg.height = _int(raw, "height", 0, 0, 1 << 16)
    cfg.feature_method = _choice(raw, "feature_quantize_method", FEATURE_METHODS, "KL")
    cfg.weight_method = _choice(raw, "weight_quantize_method", WEIGHT_METHODS, "MAX_ABS")
    cfg.feature_clamp = _int(raw, "feature_clamp_value", 127, 1, 127)
    cfg.weight_clamp = _int(raw, "weight_clamp_value", 127, 1, 127)
    cfg.batch_size = _int(raw, "batch_size", 1, 1, 1 << 16)
    skip = raw.get("skip_quant_op_names", [])
    if not isinstance(skip, list) or not all(isinstance(s, str) for s in skip):
        raise QuantConfigError("skip_quant_op_names must be a list of op names")
    cfg.skip_ops = list(skip)
    return cfg


def _data_files(data: Path) -> list[Path]:
    if data.is_file():
        if data.suffix.lower() not in ARRAY_EXT + IMAGE_EXT:
            raise QuantConfigError(f"calibration data {data} is neither an image nor .npy/.npz")
        return [data]
    if not data.is_dir():
        raise QuantConfigError(f"calibration data path not found: {data}")
    files = sorted(p for p in data.iterdir() if p.suffix.lower() in ARRAY_EXT + IMAGE_EXT)
    if not files:
        raise QuantConfigError(f"calibration folder {data} holds no images or .npy/.npz files")
    return files


def load_samples(cfg: QuantConfig, inputs: dict[str, tuple[int, ...]]) -> list[dict[str, np.ndarray]]:
    """Every calibration sample as ``{input name: float32 array}``, checked against the model's input shapes.

    ``.npy`` files hold one sample or a batch along axis 0; ``.npz`` files map input names to arrays.

    Raises:
        QuantConfigError: unreadable file, wrong shape, images for a model with several inputs.
    """
    samples: list[dict[str, np.ndarray]] = []
    for path in cfg.files:
        if path.suffix.lower() in IMAGE_EXT:
            if len(inputs) != 1:
                raise QuantConfigError(f"image calibration needs a single-input model (inputs: {list(inputs)})")
            name, shape = next(iter(inputs.items()))
            samples.append({name: _image(cfg, path, shape)})
            continue
        try:
            loaded = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise QuantConfigError(f"cannot read calibration file {path}: {exc}") from exc
        arrays = dict(loaded) if path.suffix.lower() == ".npz" else {next(iter(inputs)): loaded}
        if path.suffix.lower() == ".npy" and len(inputs) != 1:
            raise QuantConfigError(f"{path}: .npy data needs a single-input model; use .npz keyed by input names")
        missing = sorted(set(inputs) - set(arrays))
        if missing:
            raise QuantConfigError(f"{path}: no data for input(s) {missing}")
        batch = {k: _shaped(path, k, np.asarray(arrays[k], np.float32), inputs[k]) for k in inputs}
        count = {len(v) for v in batch.values()}
        if len(count) != 1:
            raise QuantConfigError(f"{path}: inputs hold different sample counts {sorted(count)}")
        for i in range(count.pop()):
            samples.append({k: v[i] for k, v in batch.items()})
    return samples[: cfg.limit] if cfg.limit else samples


def _shaped(path: Path, name: str, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Samples [count, *shape] from one sample of ``shape`` (or without its batch axis) or a stack of them."""
    fixed = tuple(shape)
    if value.shape == fixed:
        return value[None]
    if len(fixed) >= 1 and fixed[0] == 1 and value.shape == fixed[1:]:
        return value[None, None]
    if len(fixed) >= 1 and fixed[0] == 1 and value.shape[1:] == fixed[1:]:
        return value[:, None]
    if value.ndim == len(fixed) + 1 and value.shape[1:] == fixed:
        return value
    raise QuantConfigError(f"{path}: input {name!r} has shape {value.shape}, the model expects {fixed}")


def _image(cfg: QuantConfig, path: Path, shape: tuple[int, ...]) -> np.ndarray:
    try:
        import cv2
    except ImportError as exc:
        raise QuantConfigError("image calibration needs OpenCV (pip install opencv-python); or use .npy") from exc
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise QuantConfigError(f"cannot read calibration image {path}")
    img = img[:, :, None] if img.ndim == 2 else img
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    bgr = img[:, :, :3]
    conv = {"BGR": bgr, "RGB": bgr[:, :, ::-1], "GRAY": cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)[:, :, None]}
    alpha = img[:, :, 3:4] if img.shape[2] == 4 else np.full((*img.shape[:2], 1), 255, img.dtype)
    conv["BGRA"] = np.concatenate([bgr, alpha], axis=2)
    conv["RGBA"] = np.concatenate([bgr[:, :, ::-1], alpha], axis=2)
    pix = conv[cfg.format]
    channels = pix.shape[2]
    nhwc = len(shape) == 4 and shape[3] == channels and shape[1] != channels  # a TF-style [N, H, W, C] input
    h = cfg.height or (shape[1 if nhwc else 2] if len(shape) == 4 else pix.shape[0])
    w = cfg.width or (shape[2 if nhwc else 3] if len(shape) == 4 else pix.shape[1])
    if pix.shape[:2] != (h, w):
        pix = cv2.resize(pix, (w, h), interpolation=cv2.INTER_LINEAR).reshape(h, w, -1)
    x = (pix.astype(np.float32) - np.float32(cfg.mean)) * np.float32(cfg.normal)
    x = x[None] if nhwc else x.transpose(2, 0, 1)[None]
    if len(shape) != 4 or x.shape != tuple(shape):
        raise QuantConfigError(f"{path}: preprocessed image is {x.shape}, the model input is {tuple(shape)}")
    return np.ascontiguousarray(x, np.float32)
