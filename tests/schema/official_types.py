"""The schema compiled into the official MNN wheel, read from its converter library without running it.

MNN builds its generated C++ headers with flatc's mini-reflection: every table, enum and union has a static
`flatbuffers::TypeTable` (`MNN::XxxTypeTable()::tt`) listing its fields in id order with their element types and
the tables/enums they refer to. The wheel's `_tools` extension keeps its ELF symbol table, so these structures can
be located by symbol and decoded (x86-64, flatbuffers 1.x layout: st, num_elems, type_codes, type_refs, values,
names). That is the 3.6.1 binary's own view of the wire format, independent of any `.fbs` text.
"""

from __future__ import annotations

import importlib.util
import re
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# flatbuffers::ElementaryType, in order
ELEMENTARY = ("UTYPE", "BOOL", "CHAR", "UCHAR", "SHORT", "USHORT", "INT", "UINT", "LONG", "ULONG", "FLOAT",
              "DOUBLE", "STRING", "SEQUENCE")
SEQUENCE_TYPES = ("TABLE", "STRUCT", "UNION", "ENUM")
_R_X86_64_RELATIVE = 8
_TYPE_TABLE_FN = re.compile(r"_ZN3MNN\d+(\w+)TypeTableEv$")


@dataclass(frozen=True)
class Field:
    name: str
    elementary: str  # one of ELEMENTARY
    repeated: bool  # a vector
    ref: str | None  # the table / enum / union the field refers to
    value: int | None  # enum members: their value


@dataclass(frozen=True)
class TypeTable:
    kind: str  # one of SEQUENCE_TYPES
    fields: tuple[Field, ...]


class _Elf:
    """Just enough of an x86-64 ELF shared object: sections, the symbol table, RELATIVE relocations."""

    def __init__(self, path: Path) -> None:
        b = self.data = path.read_bytes()
        if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
            raise ValueError(f"{path}: not a little-endian ELF64 file")
        shoff, = struct.unpack_from("<Q", b, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + k * shentsize) for k in range(shnum)]
        names = raw[shstrndx][4]
        self.sections = {self._cstr(names + s[0]): s for s in raw}
        self.relocated: dict[int, int] = {}
        rela = self.sections[".rela.dyn"]
        for off in range(rela[4], rela[4] + rela[5], 24):
            where, info, addend = struct.unpack_from("<QQq", b, off)
            if info & 0xFFFFFFFF == _R_X86_64_RELATIVE:
                self.relocated[where] = addend
        if ".symtab" not in self.sections:
            raise LookupError(f"{path}: stripped (no .symtab)")
        symtab, strtab = self.sections[".symtab"], self.sections[".strtab"]
        self.symbols: dict[str, int] = {}
        self.by_address: dict[int, str] = {}
        for off in range(symtab[4], symtab[4] + symtab[5], 24):
            name_off, _info, _other, _shndx, value, _size = struct.unpack_from("<IBBHQQ", b, off)
            name = self._cstr(strtab[4] + name_off)
            if name:
                self.symbols[name] = value
                self.by_address.setdefault(value, name)

    def _cstr(self, off: int) -> str:
        return self.data[off:self.data.index(b"\0", off)].decode()

    def offset(self, address: int) -> int:
        for s in self.sections.values():
            if s[1] != 8 and s[3] and s[3] <= address < s[3] + s[5]:  # not NOBITS, mapped
                return address - s[3] + s[4]
        raise KeyError(f"address {address:#x} is in no section")

    def pointer(self, address: int) -> int:
        if address in self.relocated:
            return self.relocated[address]
        return struct.unpack_from("<Q", self.data, self.offset(address))[0]

    def unpack(self, fmt: str, address: int) -> tuple:
        return struct.unpack_from(fmt, self.data, self.offset(address))


class OfficialSchema:
    def __init__(self, path: Path) -> None:
        self.elf = _Elf(path)

    def names(self) -> set[str]:
        """Every table, enum and union that has a type table in the binary."""
        return {m.group(1) for s in self.elf.symbols if (m := _TYPE_TABLE_FN.match(s))}

    def __getitem__(self, name: str) -> TypeTable:
        elf = self.elf
        address = elf.symbols.get(f"_ZZN3MNN{len(name) + 9}{name}TypeTableEvE2tt")
        if address is None:
            raise KeyError(name)
        kind, = elf.unpack("<i", address)
        count, = elf.unpack("<Q", address + 8)
        codes, refs_at, values, names = (elf.pointer(address + 16 + 8 * k) for k in range(4))
        refs = []
        while refs_at + 8 * len(refs) in elf.relocated:
            fn = elf.by_address.get(elf.relocated[refs_at + 8 * len(refs)], "")
            if not (m := _TYPE_TABLE_FN.match(fn)):
                break
            refs.append(m.group(1))
        fields = []
        for k in range(count):
            code, = elf.unpack("<H", codes + 2 * k)
            seq = code >> 5
            seq = seq - 2048 if seq >= 1024 else seq
            fields.append(Field(name=elf._cstr(elf.offset(elf.pointer(names + 8 * k))) if names else "",
                                elementary=ELEMENTARY[code & 0xF], repeated=bool(code >> 4 & 1),
                                ref=refs[seq] if 0 <= seq < len(refs) else None,
                                value=elf.unpack("<q", values + 8 * k)[0] if values else None))
        return TypeTable(SEQUENCE_TYPES[kind], tuple(fields))


@cache
def official_schema() -> OfficialSchema | None:
    """The official wheel's schema, or None when the wheel (its `_tools` extension) is not installed."""
    spec = importlib.util.find_spec("_tools")
    if spec is None or spec.origin is None:
        return None
    return OfficialSchema(Path(spec.origin))
