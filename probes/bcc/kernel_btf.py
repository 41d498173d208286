"""What capture.c needs of the running kernel's own types, read from its BTF (/sys/kernel/btf/vmlinux).

The write path's tracepoints are read raw (their arguments: a folio and its mapping; an inode): a
raw program runs where a perf tracepoint's program is skipped while another BPF program holds the CPU
(bpf_prog_active: a map update from userspace, preempted, counts), which lost dirtied pages on a busy
machine. From the arguments it reads the file (mapping->host, inode->i_ino, inode->i_sb->s_dev) and a
folio's size (a folio may span several pages: the head flag in `flags`, the order in the low byte of
`_flags_1`). The kernel headers bcc compiles with need not be the running kernel's (here they were
not: PG_head 16 in the headers, 6 in the kernel), so the bit and the offsets come from the kernel's
BTF, which describes exactly the kernel that runs; None where it holds no such types (the write path's
pages are then not measured, and the trace says so).
"""

import functools
import struct
from pathlib import Path
from typing import NamedTuple

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
_MAGIC = 0xEB9F
_STRUCT, _UNION, _ENUM, _ENUM64 = 4, 5, 6, 19
# Bytes of kind-specific data after each type's 12-byte header: fixed, or per member (vlen).
_FIXED = {1: 4, 3: 12, 14: 4, 17: 4}
_PER_MEMBER = {_STRUCT: 12, _UNION: 12, _ENUM: 8, 13: 8, 15: 12, _ENUM64: 12}


class KernelLayout(NamedTuple):
    """Byte offsets of the members read, and PG_head's bit."""

    folio_head_bit: int  # PG_head in folio->flags: the folio spans more than one page
    folio_order: int  # folio->_flags_1, whose low byte is the order
    mapping_host: int  # address_space->host, the inode
    inode_ino: int  # inode->i_ino
    inode_sb: int  # inode->i_sb
    sb_dev: int  # super_block->s_dev


# (struct, member) for each offset of KernelLayout after the head bit
_MEMBERS = (
    ("folio", "_flags_1"),
    ("address_space", "host"),
    ("inode", "i_ino"),
    ("inode", "i_sb"),
    ("super_block", "s_dev"),
)


@functools.cache
def kernel_layout(path: Path = VMLINUX_BTF) -> KernelLayout | None:
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

    structs = {type_name: index for index, (kind, type_name, members) in enumerate(types) if members}
    offsets = []
    for struct_name, member in _MEMBERS:
        offset = member_offset(structs[struct_name], member) if struct_name in structs else None
        if offset is None:
            return None
        offsets.append(offset // 8)
    return KernelLayout(head_bit, *offsets) if head_bit is not None else None
