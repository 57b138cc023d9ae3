"""Bounds-checking verifier for `.mnn` FlatBuffers (the Python FlatBuffers runtime has none).

`verify_buffer` walks the buffer from the root `Net` with the field layout in `layout_generated.LAYOUT` and checks,
before any generated accessor touches it, everything a reader would dereference:

* every table's soffset, vtable (size, alignment to 2, inside the buffer) and inline field slots;
* every uoffset (strings, vectors, sub-tables, union values) lands inside the buffer;
* every vector's declared length fits in the bytes that remain (so "huge declared vectors" fail here, not in numpy);
* strings are NUL-terminated and valid UTF-8 (the object API decodes them);
* union tags name a member of the union;
* nesting depth <= 64 and the total number of visited objects <= len(buffer) / 4, so shared sub-objects (a DAG
  that expands exponentially when unpacked) cannot turn a small file into unbounded work.

Errors are `ModelError("<source>: <what> at byte N (path Net.oplists[3].main)")`.
"""

from __future__ import annotations

import struct
from typing import NoReturn

from .errors import ModelError
from .layout_generated import LAYOUT

MAX_DEPTH = 64
MAX_BUFFER = 2**31 - 1
_TABLES = LAYOUT["tables"]
_UNIONS = LAYOUT["unions"]
_SIZE = {c: struct.calcsize("<" + c) for c in "bBhHiIqQfd"}
_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from


# A path from the root, built lazily: the root's name, or (parent, piece) where piece is ".field", "<Member>" or an
# int vector index. Rendered (`_render`) only for an error message: formatting one string per field and element
# was most of the walk's time.
Path = str | tuple


def _render(path: Path) -> str:
    pieces = []
    while isinstance(path, tuple):
        path, piece = path
        pieces.append(f"[{piece}]" if isinstance(piece, int) else piece)
    return path + "".join(reversed(pieces))


_SCALAR, _UNION_TYPE, _UNION, _OFFSET = 0, 1, 2, 3


def _spec(fields: list) -> tuple:
    """Per field of a table, in slot order: (name, ".name", code, inline size, union key or kind)."""
    out = []
    for fname, kind in fields:
        if kind[0] in ("scalar", "enum"):
            out.append((fname, "." + fname, _SCALAR, _SIZE[kind[1]], None))
        elif kind[0] == "union_type":
            out.append((fname, "." + fname, _UNION_TYPE, 1, fname[: -len("_type")]))
        elif kind[0] == "union":
            out.append((fname, "." + fname, _UNION, 4, kind[1]))
        else:
            out.append((fname, "." + fname, _OFFSET, 4, kind))
    return tuple(out)


_SPECS = {name: _spec(fields) for name, fields in _TABLES.items()}


class _Walker:
    def __init__(self, buf: bytes | bytearray | memoryview, source: str, trace: list | None) -> None:
        self.buf = buf
        self.n = len(buf)
        self.source = source
        self.trace = trace
        self.budget = self.n // 4 + 64

    def fail(self, what: str, pos: int, path: Path) -> NoReturn:
        raise ModelError(f"{self.source}: {what} at byte {pos} (path {_render(path)})")

    def _spend(self, pos: int, path: Path) -> None:
        self.budget -= 1
        if self.budget < 0:
            self.fail("too many objects for the buffer size (shared sub-objects?)", pos, path)

    def _need(self, pos: int, size: int, what: str, path: Path, at: int | None = None) -> None:
        """Fail unless bytes [pos, pos+size) are inside the buffer; `at` is the byte to blame (default pos)."""
        if pos < 0 or pos + size > self.n:
            where = pos if at is None else at
            self.fail(f"{what} out of bounds (needs bytes {pos}..{pos + size}, buffer has {self.n})", where, path)

    def follow(self, pos: int, path: Path) -> int:
        """Read the uoffset stored at `pos` and return the absolute position it points to."""
        if pos < 0 or pos + 4 > self.n:
            self._need(pos, 4, "offset", path)
        if self.trace is not None:
            self.trace.append(("uoffset", pos))
        return pos + _U32(self.buf, pos)[0]

    def table(self, pos: int, name: str, path: Path, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH}", pos, path)
        self._spend(pos, path)
        self._need(pos, 4, f"{name} table", path)
        buf = self.buf
        if self.trace is not None:
            self.trace.append(("soffset", pos))
        vt = pos - _I32(buf, pos)[0]
        if vt % 2:
            self.fail(f"misaligned vtable of {name}", vt, path)
        self._need(vt, 4, f"vtable of {name}", path)
        vt_size, inline_size = _U16(buf, vt)[0], _U16(buf, vt + 2)[0]
        if vt_size < 4 or vt_size % 2:
            self.fail(f"bad vtable size {vt_size} for {name}", vt, path)
        self._need(vt, vt_size, f"vtable of {name}", path)
        self._need(pos, max(inline_size, 4), f"{name} table body", path)
        union_tags: dict[str, int] = {}
        slot = vt + 4
        for fname, dot_name, code, size, extra in _SPECS[name][: (vt_size - 4) // 2]:
            off = _U16(buf, slot)[0]
            slot += 2
            if off == 0:
                continue
            fpos = pos + off
            if off < 4:
                self.fail(f"field {fname} overlaps the table header", fpos, (path, dot_name))
            if off + size > inline_size:
                self.fail(f"field {fname} outside the {name} table", fpos, (path, dot_name))
            if code == _SCALAR:
                continue
            if code == _UNION_TYPE:
                union_tags[extra] = buf[fpos]
            elif code == _UNION:
                self.union(fpos, extra, union_tags.get(fname, 0), (path, dot_name), depth)
            else:
                fpath = (path, dot_name)
                self.value(self.follow(fpos, fpath), extra, fpath, depth)

    def union(self, fpos: int, union: str, tag: int, path: Path, depth: int) -> None:
        members = _UNIONS[union]
        if tag >= len(members):
            self.fail(f"unknown {union} tag {tag}", fpos, path)
        if tag != 0:
            self.table(self.follow(fpos, path), members[tag], (path, f"<{members[tag]}>"), depth + 1)

    def value(self, pos: int, kind: tuple, path: Path, depth: int) -> None:
        if kind[0] == "table":
            self.table(pos, kind[1], path, depth + 1)
        elif kind[0] == "string":
            self.string(pos, path)
        elif kind[0] == "vector":
            self.vector(pos, kind[1], path, depth)
        else:  # pragma: no cover - the generator only emits the kinds above
            self.fail(f"unsupported field kind {kind}", pos, path)

    def vector(self, pos: int, elem: tuple, path: Path, depth: int) -> None:
        self._need(pos, 4, "vector length", path)
        if self.trace is not None:
            self.trace.append(("vlen", pos))
        count = _U32(self.buf, pos)[0]
        if elem[0] in ("scalar", "enum"):
            self._need(pos + 4, count * _SIZE[elem[1]], f"vector of {count} elements", path, at=pos)
            return
        self._need(pos + 4, count * 4, f"vector of {count} offsets", path, at=pos)
        if count > self.budget:
            self.fail(f"too many objects: vector of {count} exceeds the budget left for this buffer", pos, path)
        for i in range(count):
            self.value(self.follow(pos + 4 + 4 * i, path), elem, (path, i), depth)

    def string(self, pos: int, path: Path) -> None:
        self._need(pos, 4, "string length", path)
        if self.trace is not None:
            self.trace.append(("vlen", pos))
        count = _U32(self.buf, pos)[0]
        self._need(pos + 4, count + 1, f"string of {count} bytes", path, at=pos)
        if self.buf[pos + 4 + count] != 0:
            self.fail("string without NUL terminator", pos + 4 + count, path)
        try:
            bytes(self.buf[pos + 4 : pos + 4 + count]).decode("utf-8")
        except UnicodeDecodeError:
            self.fail("string is not valid UTF-8", pos, path)


def verify_buffer(buf: bytes | bytearray | memoryview, source: str = "<buffer>", trace: list | None = None) -> None:
    """Check that `buf` is a structurally valid `.mnn` FlatBuffer (root table `Net`).

    Args:
        buf: the whole file.
        source: a name for error messages (the file path).
        trace: if a list is given, the byte positions of every offset, vector length and table start that was
            followed are appended to it as `(kind, pos)` (used by the fuzz tests to aim corruptions).

    Raises:
        ModelError: naming the source, the problem, the byte offset and the path from the root.
    """
    n = len(buf)
    if n < 12:
        raise ModelError(f"{source}: truncated FlatBuffer ({n} bytes, a Net needs at least 12)")
    if n > MAX_BUFFER:
        raise ModelError(f"{source}: {n} bytes is larger than a FlatBuffer can address")
    walker = _Walker(buf, source, trace)
    walker.table(walker.follow(0, "Net"), "Net", "Net", 0)
