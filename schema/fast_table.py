"""The Table every generated `.mnn` table reads through (`tools/gen_schema.py`, `use_fast_table`).

flatbuffers' own `Table` re-checks every offset with `enforce_number` and wraps the buffer in a new memoryview for
each read; flatc's object API calls `Offset` and `Get` ~40 000 times for a 600-op net. Here both run on cached
`struct` unpackers: ViT-tiny's 609 ops unpack in 21 ms instead of 71, BERT-4L's in 6.6 instead of 12.7. What is
dropped are checks, not bounds: every untrusted buffer is walked by `verify.py` before it is unpacked, and without
that a bad offset gives garbage or `struct.error` as before (Python never reads outside the buffer).
"""

from __future__ import annotations

from typing import Any

import flatbuffers

_U32 = flatbuffers.number_types.UOffsetTFlags.packer_type.unpack_from
_I32 = flatbuffers.number_types.SOffsetTFlags.packer_type.unpack_from
_U16 = flatbuffers.number_types.VOffsetTFlags.packer_type.unpack_from


class Table(flatbuffers.table.Table):
    """`flatbuffers.table.Table` with its hot reads (`Offset`, `Get`, `Indirect`, `Vector`, `VectorLen`) unchecked."""

    __slots__ = ()

    def __init__(self, buf: Any, pos: int) -> None:
        self.Bytes = buf
        self.Pos = pos

    def Offset(self, vtable_offset: int) -> int:
        buf = self.Bytes
        vtable = self.Pos - _I32(buf, self.Pos)[0]
        if vtable_offset < _U16(buf, vtable)[0]:
            return _U16(buf, vtable + vtable_offset)[0]
        return 0

    def Get(self, flags: Any, off: int) -> Any:
        return flags.py_type(flags.packer_type.unpack_from(self.Bytes, off)[0])

    def Indirect(self, off: int) -> int:
        return off + _U32(self.Bytes, off)[0]

    def Vector(self, off: int) -> int:
        off += self.Pos
        return off + _U32(self.Bytes, off)[0] + 4

    def VectorLen(self, off: int) -> int:
        off += self.Pos
        return _U32(self.Bytes, off + _U32(self.Bytes, off)[0])[0]
