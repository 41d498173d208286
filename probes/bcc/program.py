"""What capture.c and its Python side share, defined once here: every code and every record layout.

capture.c defines none of these itself, nor the trace format's page size. bcc_capture.py compiles it
with c_defines() (each code as a -D macro: KIND_FILE, TARGET_SOCKET, SOURCE_PAGE_CACHE, NOTICE_NEW_FD, CONTROL_EPOCH,
COUNT_NOTICES_LOST, SYS_READ, ...) and with c_structs() in front of its text (struct event,
struct notice and struct fill, generated from the ctypes records below), and reads the records back with these
same definitions: the two sides cannot drift apart.
"""

import ctypes
import struct
from enum import IntEnum, IntFlag
from typing import Any

from casstrace.traces.schema import PAGE_BYTES

NOTICE_PATH = 256  # bytes of a notice's text (a path, a socket address, a thread name)
GEN_BITS = 32  # file_ref.gen_or_inode of a syscall source: owner << GEN_BITS | gen


class Kind(IntEnum):
    """What an fd refers to (fd_state.kind, notice.kind)."""

    UNKNOWN = 0
    FILE = 1
    SOCKET = 2
    PIPE = 3
    OTHER = 4
    CLOSED = 5  # a dup of an fd the program saw closed: nothing to name it by


class Target(IntEnum):
    """What a syscall's fd argument was, for the latency spectrogram (latency_key.target)."""

    NONE = 0  # the call has no fd argument
    FILE = 1
    SOCKET = 2
    OTHER = 3


class Source(IntEnum):
    """Which measure saw a file's bytes (file_ref.source)."""

    SYSCALL = 0  # bytes read syscalls returned
    PAGE_CACHE = 1  # pages the page cache filled
    ADDRESS = 2  # not a source of coverage: (0, an address in the process's memory), msync's file is the mapping there


class NoticeType(IntEnum):
    """Rare events userspace must see while the process still holds the fd (notice.type)."""

    NEW_FD = 1
    CONNECT = 2
    RENAME = 3  # a thread renamed itself
    EXIT = 4
    FORK = 5  # a watched process started a process (tid: the child's pid)
    THREAD = 6  # a watched process started a thread (tid: the new thread)
    CHDIR = 7  # a watched process changed its working directory (chdir: text, the path; fchdir: fd, gen)


class Control(IntEnum):
    """Slots of the control array userspace writes."""

    EPOCH = 0  # the window aggregates go to; 0: not capturing
    START_NS = 1  # capture start, the origin of time slots
    TGID = 2  # the process captured; 0 (no process making syscalls has it) until start


class Counter(IntEnum):
    """Slots of the counters array: what the program could not record exactly."""

    EVENTS_OFFERED = 0  # read/lseek records offered to the event log
    NOTICES_LOST = 1  # ring buffer full
    AGGREGATE_OVERFLOW = 2  # an aggregate map was full: some figure is short
    IOV_TRUNCATED = 3  # iovec arrays longer than IOV_READ_MAX: requested bytes short
    COVERAGE_TRUNCATED = 4  # a call spanned more than COVERAGE_WORDS_MAX words of pages
    FILLS_OFFERED = 5  # page-cache fills offered to the fill log (those no logged read holds)
    FILL_PAGES_UNLOGGED = 6  # pages of fills the fill log had no room for: in the per-file totals only


COUNTERS = 8  # size of the counters array: room for more without a layout change


class SyscallFlag(IntFlag):
    """Bits of the per-syscall table (syscall_flags); the kind of fd a call returns sits above them."""

    FD_ARG = 1  # the first argument is an fd
    READ = 2
    WRITE = 4
    NEW_FD = 8  # returns a new fd, of the kind at SYS_KIND_SHIFT


SYS_KIND_SHIFT = 4
NO_CALL = 0xFFFFFFFF  # fill.nr of a fill outside any syscall (a fault on a mapped file)

# The names the trace gives these codes (files.kind, coverage.source, latency.target).
KIND_NAMES = {kind.value: kind.name.lower() for kind in Kind} | {Kind.CLOSED.value: "unknown"}
SOURCE_NAMES = {source.value: source.name.lower() for source in (Source.SYSCALL, Source.PAGE_CACHE)}  # coverage's
TARGET_NAMES = {target.value: target.name.lower() for target in Target}

_MACRO_PREFIXES: tuple[tuple[type[IntEnum] | type[IntFlag], str], ...] = (
    (Kind, "KIND"),
    (Target, "TARGET"),
    (Source, "SOURCE"),
    (NoticeType, "NOTICE"),
    (Control, "CONTROL"),
    (Counter, "COUNT"),
    (SyscallFlag, "SYS"),
)


def c_defines() -> list[str]:
    """Every code above as the -D macro capture.c names it by."""
    defines = [f"-D{prefix}_{member.name}={member.value}" for codes, prefix in _MACRO_PREFIXES for member in codes]
    return defines + [
        f"-DCOUNTERS={COUNTERS}",
        f"-DCONTROL_SLOTS={len(Control)}",
        f"-DSYS_KIND_SHIFT={SYS_KIND_SHIFT}",
        f"-DNOTICE_PATH={NOTICE_PATH}",
        f"-DNO_CALL={NO_CALL}U",
        f"-DPAGE_SHIFT_4K={PAGE_BYTES.bit_length() - 1}",
    ]  # the trace format's page


# -- records the program writes and userspace reads ------------------------------------------------
# A field whose name starts with '_' is padding: in C it keeps the layout, in Python it is skipped.


class EventRecord(ctypes.Structure):
    """struct event: one logged read or lseek on a file (the in-place event log)."""

    _fields_ = [
        ("ts", ctypes.c_uint64),
        ("latency", ctypes.c_uint64),
        ("offset", ctypes.c_int64),
        ("requested", ctypes.c_int64),
        ("returned", ctypes.c_int64),
        ("run_bytes", ctypes.c_uint64),  # reads: the back-to-back run this read extends (0: offset unknown)
        ("tid", ctypes.c_uint32),
        ("fd", ctypes.c_int32),
        ("gen", ctypes.c_uint32),
        ("nr", ctypes.c_uint32),
        ("epoch", ctypes.c_uint32),
        ("seek_jump", ctypes.c_uint32),  # reads: 1 when it did not start where the previous one ended
        # reads: pages the page cache filled while the call ran, of the first file it filled
        # (kernel dev, inode); fills of any other file in the call go to the fill log
        ("fill_inode", ctypes.c_uint64),
        ("fill_dev", ctypes.c_uint32),
        ("fill_pages", ctypes.c_uint32),
    ]


class FollowedEventRecord(EventRecord):
    """struct event when descendants are followed: which process the call is from."""

    _fields_ = [("tgid", ctypes.c_uint32), ("_pad", ctypes.c_uint32)]


class FillRecord(ctypes.Structure):
    """struct fill: page-cache fills no logged read call holds (the in-place fill log): faults on
    mapped files, fills inside other syscalls, and those of a read the event log had no room for."""

    _fields_ = [
        ("ts", ctypes.c_uint64),
        ("inode", ctypes.c_uint64),
        ("dev", ctypes.c_uint32),
        ("pages", ctypes.c_uint32),
        ("tid", ctypes.c_uint32),
        ("nr", ctypes.c_uint32),  # the syscall in flight, NO_CALL outside any
        ("epoch", ctypes.c_uint32),
        ("_pad", ctypes.c_uint32),
    ]


class NoticeRecord(ctypes.Structure):
    """struct notice: a new fd, a connect, a rename, an exit, a fork or a new thread (the ring buffer)."""

    _fields_ = [
        ("ts", ctypes.c_uint64),
        ("ret", ctypes.c_int64),
        ("tid", ctypes.c_uint32),
        ("type", ctypes.c_uint32),
        ("nr", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("fd", ctypes.c_int32),
        ("gen", ctypes.c_uint32),
        ("aux_fd", ctypes.c_int32),  # dup*: the old fd; openat*: the directory fd; pipe/socketpair: second fd
        ("aux_gen", ctypes.c_uint32),
        ("text", ctypes.c_char * NOTICE_PATH),
    ]


class FollowedNoticeRecord(NoticeRecord):
    """struct notice when descendants are followed: the process it is about (fork, thread: the parent)."""

    _fields_ = [("tgid", ctypes.c_uint32), ("_pad", ctypes.c_uint32)]


_C_TYPES: dict[type, tuple[str, str]] = {  # ctypes type: (C type, struct format)
    ctypes.c_uint64: ("u64", "Q"),
    ctypes.c_int64: ("s64", "q"),
    ctypes.c_uint32: ("u32", "I"),
    ctypes.c_int32: ("s32", "i"),
    ctypes.c_uint16: ("u16", "H"),
    ctypes.c_uint8: ("u8", "B"),
}


def _fields(
    record: type[ctypes.Structure],
) -> "list[tuple[str, type[ctypes._SimpleCData[Any]] | type[ctypes.Array[Any]]]]":
    """A record's fields in memory order, its base classes' first (ctypes appends a subclass's)."""
    return [field for cls in reversed(record.__mro__) if "_fields_" in vars(cls) for field in vars(cls)["_fields_"]]


def c_struct(name: str, record: type[ctypes.Structure]) -> str:
    lines = [f"struct {name} {{"]
    for field, kind in _fields(record):
        if issubclass(kind, ctypes.Array):
            lines.append(f"    char {field}[{kind._length_}];")
        else:
            lines.append(f"    {_C_TYPES[kind][0]} {field};")
    return "\n".join(lines + ["};"])


def c_structs(follow_children: bool) -> str:
    """The record structs capture.c writes, for the layout this capture uses."""
    event, notice = (FollowedEventRecord, FollowedNoticeRecord) if follow_children else (EventRecord, NoticeRecord)
    return "\n".join((c_struct("event", event), c_struct("notice", notice), c_struct("fill", FillRecord), ""))


def record_struct(record: type[ctypes.Structure]) -> struct.Struct:
    """A struct.Struct that unpacks a record into its fields, padding skipped (iter_unpack speed)."""
    codes = []
    for field, kind in _fields(record):
        if issubclass(kind, ctypes.Array):
            codes.append(f"{kind._length_}s")
        elif field.startswith("_"):
            codes.append(f"{ctypes.sizeof(kind)}x")
        else:
            codes.append(_C_TYPES[kind][1])
    unpacker = struct.Struct("<" + "".join(codes))
    assert unpacker.size == ctypes.sizeof(record), f"{record.__name__} has implicit padding"
    return unpacker
