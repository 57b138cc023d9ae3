"""Model I/O: `load_net` (verify, then unpack to the object API) and `save_net` (atomic write).

The object API (`NetT`, `OpT`, ...) is what the converter writes and the runtime reads. Vectors come back as numpy
arrays; strings as `str`.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np

from . import mnn_generated as fb
from .errors import ModelError
from .layout_generated import LAYOUT
from .verify import verify_buffer
from .walk import fields, reaching, visit

_OPTYPES = frozenset(LAYOUT["enums"]["OpType"]["values"].values())
_OPNAMES = {v: k for k, v in LAYOUT["enums"]["OpType"]["values"].items()}
_NP = {"b": np.int8, "B": np.uint8, "h": np.int16, "H": np.uint16, "i": np.int32, "I": np.uint32,
       "q": np.int64, "Q": np.uint64, "f": np.float32, "d": np.float64}
# Blob.dataType -> (vector field that must hold the data)
_BLOB_FIELD = {1: "float32s", 3: "int32s", 4: "uint8s", 6: "int8s", 9: "int64s", 10: "int32s"}
MAX_ELEMENTS = 2**40
MAX_KERNEL = 1 << 16

PathLike = str | os.PathLike


def _read(model: bytes | bytearray | memoryview | PathLike) -> tuple[bytes | bytearray | memoryview, str]:
    if isinstance(model, bytes | bytearray | memoryview):
        return model, "<bytes>"
    path = Path(model)
    try:
        return path.read_bytes(), str(path)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read model file: {exc.strerror or exc}") from exc


def load_net(model: bytes | bytearray | memoryview | PathLike) -> fb.NetT:
    """Read a `.mnn` file (or its bytes) into a `NetT`, verifying it first (MNN: `Interpreter::createFromFile`).

    Raises:
        ModelError: the file cannot be read, is not a valid MNN FlatBuffer, or refers to tensors/ops that do not
            exist. The message names the file, the object and, for structural faults, the byte offset.
    """
    buf, source = _read(model)
    verify_buffer(buf, source)
    try:
        net = fb.NetT.InitFromPackedBuf(buf, 0)
    except Exception as exc:  # the verifier should make this unreachable; never let a raw error escape
        raise ModelError(f"{source}: cannot decode Net: {type(exc).__name__}: {exc}") from exc
    visit(net, "Net", _decode_strings, reaching(_STRINGS))
    check_net(net, source)
    return net


def _op_label(op: Any, i: int) -> str:
    return f"op #{i} '{op.name}' ({_OPNAMES.get(op.type, op.type)})"


def _check_ops(ops: list, n_tensors: int, where: str) -> None:
    for i, op in enumerate(ops or []):
        if op.type not in _OPTYPES:
            raise ModelError(f"{where}: op #{i} '{op.name}' has unknown OpType {op.type}")
        for role in ("inputIndexes", "outputIndexes"):
            idx = getattr(op, role)
            if idx is None or len(idx) == 0:
                continue
            bad = [t for t in np.asarray(idx).ravel().tolist() if not 0 <= t < n_tensors]
            if bad:
                raise ModelError(f"{where}: {_op_label(op, i)} {role} {bad} out of range (tensors: {n_tensors})")
        _check_param(op, _op_label(op, i), where)


def _check_blob(blob: Any, label: str, where: str) -> None:
    dims = [] if blob.dims is None else [int(d) for d in np.asarray(blob.dims).ravel()]
    if any(d < 0 for d in dims):
        raise ModelError(f"{where}: {label} has negative dims {dims}")
    count = int(np.prod(dims, dtype=object)) if dims else 1
    if count > MAX_ELEMENTS:
        raise ModelError(f"{where}: {label} declares {count} elements")
    field = _BLOB_FIELD.get(blob.dataType)
    has_external = blob.external is not None and len(blob.external) > 0
    if field is None or has_external:
        return
    data = getattr(blob, field)
    have = 0 if data is None else len(data)
    if have and have < count:
        raise ModelError(f"{where}: {label} has {have} values in {field} but dims {dims} need {count}")


def _check_param(op: Any, label: str, where: str) -> None:
    main = op.main
    if isinstance(main, fb.BlobT):
        _check_blob(main, label, where)
    elif isinstance(main, fb.InputT) and main.dims is not None:
        dims = [int(d) for d in np.asarray(main.dims).ravel()]
        if any(d < -1 for d in dims):
            raise ModelError(f"{where}: {label} has input dims {dims} (only -1 may be negative)")
    elif isinstance(main, fb.Convolution2DT) and main.common is not None:
        c = main.common
        for key in ("kernelX", "kernelY", "strideX", "strideY", "dilateX", "dilateY", "group"):
            if not 1 <= getattr(c, key) <= MAX_KERNEL:
                raise ModelError(f"{where}: {label} has {key}={getattr(c, key)}")
        if c.outputCount < 0 or c.inputCount < 0:
            raise ModelError(f"{where}: {label} has negative channel counts")
    elif isinstance(main, fb.PoolT):
        for key in ("kernelX", "kernelY", "strideX", "strideY"):
            if not 0 <= getattr(main, key) <= MAX_KERNEL:
                raise ModelError(f"{where}: {label} has {key}={getattr(main, key)}")


def check_net(net: fb.NetT, source: str = "<net>") -> None:
    """Semantic checks on a decoded net: known op types, tensor indices in range, sane declared sizes."""
    n_tensors = len(net.tensorName or [])
    _check_ops(net.oplists, n_tensors, source)
    for d in net.extraTensorDescribe or []:
        if not 0 <= d.index < n_tensors:
            raise ModelError(f"{source}: extraTensorDescribe index {d.index} out of range (tensors: {n_tensors})")
    for g in net.subgraphs or []:
        where = f"{source} subgraph '{g.name}'"
        n_sub = len(g.tensors or [])
        _check_ops(g.nodes, n_sub, where)
        for role in ("inputs", "outputs"):
            idx = [] if getattr(g, role) is None else [int(t) for t in np.asarray(getattr(g, role)).ravel()]
            if any(not 0 <= t < n_sub for t in idx):
                raise ModelError(f"{where}: {role} {idx} out of range (tensors: {n_sub})")


_STRINGS = ("vector", ("string",))


def _decode_strings(obj: Any, table: str) -> None:
    """flatc decodes single strings for the object API but leaves `[string]` items as bytes: decode those too."""
    for _, attr, kind in fields(table):
        value = getattr(obj, attr, None)
        if value is not None and kind == _STRINGS:
            setattr(obj, attr, [v.decode("utf-8") if isinstance(v, bytes) else v for v in value])


def _coerce(obj: Any, table: str) -> None:
    """Give every numeric vector field the exact numpy dtype of its schema type.

    flatbuffers' `CreateNumpyVector` writes an array's bytes as they are, so a float64 array in a `[float]` field
    would be written as doubles and read back as twice as many garbage floats. Lists of numbers are also turned
    into arrays here, which packs them in one copy instead of one Prepend call per element.
    """
    for fname, attr, kind in fields(table):
        value = getattr(obj, attr, None)
        if value is None or kind[0] != "vector" or kind[1][0] not in ("scalar", "enum"):
            continue
        want = np.dtype(_NP[kind[1][1]])
        arr = np.asarray(value)
        if arr.dtype != want:
            cast = arr.astype(want)
            if arr.dtype.kind in "iub" and not np.array_equal(cast, arr):
                raise ModelError(f"{table}.{fname}: values do not fit {want.name}")
            arr = cast
        setattr(obj, attr, np.ascontiguousarray(arr.ravel()))


def net_to_bytes(net: fb.NetT) -> bytes:
    """Serialise a `NetT` to `.mnn` bytes (root `Net`, no file identifier, as MNN writes)."""
    visit(net, "Net", _coerce)
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(net.Pack(builder))
    return bytes(builder.Output())


def save_net(net: fb.NetT, path: PathLike) -> Path:
    """Write `net` to `path` atomically: a temporary file in the same folder, fsync, then rename over the target.

    If anything fails (serialisation, a full disk), the temporary file is removed and an existing `path` is left
    exactly as it was.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, "output folder does not exist", str(folder))
    data = net_to_bytes(net)
    # open(..., "xb") rather than mkstemp: the file gets the user's normal permissions (umask), not 0600
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
