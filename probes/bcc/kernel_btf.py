"""What capture.c needs of the running kernel's own types, read from its BTF (/sys/kernel/btf/vmlinux).

A page dirtied is reported once per folio (writeback_dirty_folio), and a folio of a file may span
several pages (large folios: ext4 since 6.16). Its size is in the folio itself: the head flag in
`flags`, the order in the low byte of `_flags_1`. The kernel headers bcc compiles with need not be the
running kernel's (here they were not: PG_head 16 in the headers, 6 in the kernel), so the bit and the
offset come from the kernel's BTF, which describes exactly the kernel that runs; None where it holds
no such types (the pages are then counted as one per folio, and the trace says so).
"""

import struct
from pathlib import Path
from typing import NamedTuple

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
_MAGIC = 0xEB9F
_STRUCT, _UNION, _ENUM, _ENUM64 = 4, 5, 6, 19
# Bytes of kind-specific data after each type's 12-byte header: fixed, or per member (vlen).
_FIXED = {1: 4, 3: 12, 14: 4, 17: 4}
_PER_MEMBER = {_STRUCT: 12, _UNION: 12, _ENUM: 8, 13: 8, 15: 12, _ENUM64: 12}


class FolioLayout(NamedTuple):
    head_bit: int  # PG_head: the folio spans more than one page
    order_offset: int  # byte offset of _flags_1 in struct folio, whose low byte is the order


def folio_layout(path: Path = VMLINUX_BTF) -> FolioLayout | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    magic, _, _, header_length, type_off, type_len, str_off, _ = struct.unpack_from("<HBBIIIII", data)
    if magic != _MAGIC:
        return None
    strings = header_length + str_off

    def name(offset: int) -> str:
        end = data.index(b"\0", strings + offset)
        return data[strings + offset : end].decode()

    types: list[tuple[int, str, list[tuple[str, int, int]]]] = [(0, "", [])]  # kind, name, members
    at, end = header_length + type_off, header_length + type_off + type_len
    head_bit = None
    while at < end:
        name_off, info, _size = struct.unpack_from("<III", data, at)
        kind, vlen, bitfields = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
        at += 12
        members: list[tuple[str, int, int]] = []
        if kind in (_STRUCT, _UNION):
            for index in range(vlen):
                member_name, member_type, offset = struct.unpack_from("<III", data, at + 12 * index)
                bit_offset = offset & 0xFFFFFF if bitfields else offset
                members.append((name(member_name), member_type, bit_offset))
        elif kind == _ENUM and head_bit is None:
            for index in range(vlen):
                member_name, value = struct.unpack_from("<Ii", data, at + 8 * index)
                if name(member_name) == "PG_head":
                    head_bit = value
        at += _FIXED.get(kind, 0) + _PER_MEMBER.get(kind, 0) * vlen
        types.append((kind, name(name_off) if kind in (_STRUCT, _UNION) else "", members))

    def member_offset(type_id: int, wanted: str) -> int | None:
        """Bit offset of a member, looking into anonymous structs and unions."""
        for member_name, member_type, bit_offset in types[type_id][2]:
            if member_name == wanted:
                return bit_offset
            if not member_name and types[member_type][0] in (_STRUCT, _UNION):
                inner = member_offset(member_type, wanted)
                if inner is not None:
                    return bit_offset + inner
        return None

    folio = next((index for index, (kind, type_name, _) in enumerate(types) if type_name == "folio"), None)
    offset = member_offset(folio, "_flags_1") if folio is not None else None
    if head_bit is None or offset is None:
        return None
    return FolioLayout(head_bit, offset // 8)
