"""Reading a sysdig capture (.scap) ourselves: its blocks, its process and fd tables, and the
syscalls casstrace folds into a trace, without running sysdig.

The format (public in falcosecurity/libs: userspace/libscap/scap_savefile.h, the savefile engine,
driver/event_table.c, driver/ppm_events_public.h) is pcapng-like: a stream of blocks, each
`u32 type, u32 total length, body, u32 total length`, little-endian. A capture opens with a section
header, machine info, interface and user lists, the process list (threads: tid, pid, comm, exe,
cwd...) and one fd list block per process; then one event per block. A capture may be gzipped.

Blocks read here (others are skipped whole):
- section header 0x0A0D0D0A (version 1.x);
- process list v1..v9 (0x202, 0x207, 0x209, 0x210..0x215 and the pre-release 0x8000ABCD family);
- fd list v1 0x203 and v2 0x218 (entries with their own length);
- events v1 0x204 (no nparams in the header: derived from the event's length), v2 0x216 and
  v2-large 0x221, and the same with 32 bits of dump flags (0x208, 0x217, 0x222; events flagged
  "state only" update the tables and are not counted, as sysdig does).

Every event is `u64 ts, u64 tid, u32 len, u16 type, u32 nparams` (v1: no nparams), then one length
per parameter (u16; u32 for large-payload events), then the parameters. Each event type only ever
gains parameters at the end, so a parameter's position never changes between versions: a newer
capture's exit events carry the fd, size and offset that older captures put on the enter event
only. Supported (PPME numbers, enter/exit): read 6/7, write 8/9, pread 112/113, pwrite 114/115,
readv 116/117, writev 118/119, preadv 120/121, pwritev 122/123, lseek 86/87, llseek 88/89,
send 28/29, sendto 30/31, recv 32/33, recvfrom 34/35, sendmsg 48/49, recvmsg 52/53, close 4/5,
open 2/3, creat 58/59, openat 102/103 and 306/307, openat2 326/327, open_by_handle_at 337 for the
I/O; socket 18/19, connect 22/23, accept 27/57/247/249/389, dup 124/125/363/365/367, pipe
61/393, clone/fork/vfork/clone3 (every version: 15, 157, 183, 185, 217, 219, 221, 223, 225, 227,
335) and execve/execveat (the exit versions carrying exe and comm: 231, 283, 289, 293, 331) for the
tables; sends' enter events name an unconnected (UDP) socket's peer. Exit-only
captures (falcosecurity libs >= 0.23 write no enter events) read as fully as paired ones, save
latency, which needs both ends.

Reading is streamed: the file is read in 4 MiB chunks, events are picked by type before anything
else is decoded, and only the per-thread enter event waiting for its exit, the threads and the open
fds are kept. Nothing of a data buffer is ever decoded.
"""

import functools
import itertools
import os
import posixpath
import struct
from collections.abc import Callable, Iterator
from typing import IO, NamedTuple, cast

# -- blocks ---------------------------------------------------------------------------------------
SECTION_HEADER = 0x0A0D0D0A
BYTE_ORDER_MAGIC = 0x1A2B3C4D
SECTION_HEADER_BYTES = SECTION_HEADER.to_bytes(4, "little")
PROCESS_LISTS = {
    0x202: 1,
    0x8000ABCD: 1,
    0x207: 2,
    0x8013ABCD: 2,
    0x209: 3,
    0x8014ABCD: 3,
    0x210: 4,
    0x211: 5,
    0x212: 6,
    0x213: 7,
    0x214: 8,
    0x215: 9,
}
FD_LISTS = {0x203: 1, 0x8001ABCD: 1, 0x218: 2}
# event block type -> (header has nparams, dump flags precede the event)
EVENT_BLOCKS = {
    0x204: (False, False),
    0x8010ABCD: (False, False),
    0x208: (False, True),
    0x216: (True, False),
    0x221: (True, False),
    0x217: (True, True),
    0x222: (True, True),
}
STATE_ONLY = 1  # dump flag: the event is there to keep the tables right, not to be shown
LARGE_PAYLOAD = 4  # dump flag: parameter lengths are u32
CHUNK_BYTES = 4 << 20

BLOCK_HEADER = struct.Struct("<II")
SECTION = struct.Struct("<IHHq")
# block header, cpu id, then the event header: ts, tid, len, type (, nparams)
EVENT_V2 = struct.Struct("<IIHQQIHI")
EVENT_V2_FLAGS = struct.Struct("<IIHIQQIHI")
EVENT_V1 = struct.Struct("<IIHQQIH")
EVENT_V1_FLAGS = struct.Struct("<IIHIQQIH")
U16, U32, U64, I64 = (struct.Struct(code) for code in ("<H", "<I", "<Q", "<q"))
IPV6_WORDS = struct.Struct(">8H")
LENGTHS16 = [struct.Struct(f"<{n}H") for n in range(64)]
LENGTHS32 = [struct.Struct(f"<{n}I") for n in range(64)]
AT_FDCWD = -100

# -- what the reader hands on -----------------------------------------------------------------------
# The call kinds casstrace folds.
READ, WRITE, SEEK, OPEN, CLOSE = range(5)


class Thread:
    """A thread as the capture tells it: its process, name (comm), the process's argv[0] (exe) and
    binary (exepath), its working directory."""

    __slots__ = ("tid", "pid", "comm", "exe", "exepath", "cwd")

    def __init__(self, tid: int, pid: int, comm: str, exe: str, exepath: str, cwd: str) -> None:
        self.tid, self.pid, self.comm, self.exe, self.exepath, self.cwd = tid, pid, comm, exe, exepath, cwd


class Fd:
    """What an open fd refers to. `kind` is 'file', 'directory', 'socket', 'pipe', 'other' or
    'unknown'; sockets over IP have `local` and `remote` ('addr:port') and `proto` ('tcp', 'udp');
    `type_name` names fds that are neither files nor sockets ('eventfd', 'pipe'...). One object per
    open: a reused fd number gets a new one."""

    __slots__ = ("kind", "name", "type_name", "proto", "local", "remote")

    def __init__(
        self,
        kind: str,
        name: str = "",
        type_name: str = "",
        proto: str = "",
        local: str | None = None,
        remote: str | None = None,
    ) -> None:
        self.kind, self.name, self.type_name, self.proto = kind, name, type_name, proto
        self.local, self.remote = local, remote


class Call(NamedTuple):
    """One syscall casstrace folds, once it has returned. `entry_ts` is None without an enter event
    (then no latency); `fd_info` None when the capture never said what the fd is; `size` (bytes
    asked), `offset` (pread's position, lseek's offset) and `whence` None where the capture does
    not carry them."""

    kind: int
    syscall: str  # the kernel's name, as the bcc backend records it
    positioned: bool  # carries its own offset and leaves the fd's position alone
    ts: int
    entry_ts: int | None
    thread: Thread
    fd: int | None
    fd_info: Fd | None
    result: int
    size: int | None
    offset: int | None
    whence: int | None


# What calls() yields: a Call's fields as a plain tuple (the same order).
CallFields = tuple[
    int, str, bool, int, "int | None", Thread, "int | None", "Fd | None", int, "int | None", "int | None", "int | None"
]


class ScapError(Exception):
    """The file is not a capture this reader can read, or is cut short; `truncated` says which."""

    def __init__(self, message: str, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


# -- the event table: what casstrace reads of each event type --------------------------------------
# Parameter positions, fixed across event versions (new versions only append). A name marks a
# parameter we read; its struct code says how ('q' fd/errno/pid, 'I' u32, 'Q' u64, 'B' u8).
class _Io(NamedTuple):
    kind: int
    syscall: str
    positioned: bool
    enter: int  # the enter event's type
    enter_params: tuple  # (fd, size, offset, whence) positions on the enter event, or -1
    exit_params: tuple  # the same on the exit event (newer versions), -1 where absent


def _io(kind: int, syscall: str, enter: int, enter_params: tuple, exit_params: tuple, positioned: bool = False) -> _Io:
    return _Io(kind, syscall, positioned, enter, enter_params, exit_params)


# exit type -> what it is. Parameter positions: (fd, size, offset, whence); the result is always 0.
IO_EVENTS: dict[int, _Io] = {
    7: _io(READ, "read", 6, (0, 1, -1, -1), (2, 3, -1, -1)),
    9: _io(WRITE, "write", 8, (0, 1, -1, -1), (2, 3, -1, -1)),
    113: _io(READ, "pread64", 112, (0, 1, 2, -1), (2, 3, 4, -1), positioned=True),
    115: _io(WRITE, "pwrite64", 114, (0, 1, 2, -1), (2, 3, 4, -1), positioned=True),
    117: _io(READ, "readv", 116, (0, -1, -1, -1), (3, 1, -1, -1)),
    119: _io(WRITE, "writev", 118, (0, 1, -1, -1), (2, 3, -1, -1)),
    121: _io(READ, "preadv", 120, (0, -1, 1, -1), (3, 1, 4, -1), positioned=True),
    123: _io(WRITE, "pwritev", 122, (0, 1, 2, -1), (2, 3, 4, -1), positioned=True),
    87: _io(SEEK, "lseek", 86, (0, -1, 1, 2), (1, -1, 2, 3)),
    89: _io(SEEK, "llseek", 88, (0, -1, 1, 2), (1, -1, 2, 3)),
    29: _io(WRITE, "send", 28, (0, 1, -1, -1), (2, 3, -1, -1)),
    31: _io(WRITE, "sendto", 30, (0, 1, -1, -1), (2, 3, -1, -1)),
    33: _io(READ, "recv", 32, (0, 1, -1, -1), (2, 3, -1, -1)),
    35: _io(READ, "recvfrom", 34, (0, 1, -1, -1), (3, 4, -1, -1)),
    49: _io(WRITE, "sendmsg", 48, (0, 1, -1, -1), (2, 3, -1, -1)),
    53: _io(READ, "recvmsg", 52, (0, -1, -1, -1), (5, 1, -1, -1)),
    5: _io(CLOSE, "close", 4, (0, -1, -1, -1), (1, -1, -1, -1)),
}
IO_ENTERS = {spec.enter: exit_type for exit_type, spec in IO_EVENTS.items()}
SLOT_CODES = ("q", "I", "Q", "B")  # fd, size, offset, whence: how the driver writes each


class _Layout(NamedTuple):
    """How the arguments of an event unpack in one go when they sit side by side: from parameter
    `first` on, with these `lengths`, by `unpack`; `slots[slot]` is where slot (fd, size,
    offset, whence) lands in what unpack returns plus a None at the end (-1: not carried)."""

    first: int
    last: int
    lengths: tuple[int, ...]
    unpack: struct.Struct
    slots: tuple[int, int, int, int]


def _layout(positions: tuple[int, int, int, int]) -> _Layout | None:
    """The layout of the arguments at `positions` (-1: absent), or None where they do not sit
    side by side (readv's exit: size at 1, fd at 3)."""
    order = sorted((position, slot) for slot, position in enumerate(positions) if position >= 0)
    if [position for position, _ in order] != list(range(order[0][0], order[0][0] + len(order))):
        return None
    codes = [SLOT_CODES[slot] for _, slot in order]
    index = tuple(next((i for i, (_, s) in enumerate(order) if s == slot), -1) for slot in range(4))
    return _Layout(
        order[0][0],
        order[-1][0],
        tuple(struct.calcsize("<" + code) for code in codes),
        struct.Struct("<" + "".join(codes)),
        index,  # type: ignore[arg-type]
    )


ENTER_LAYOUTS = {spec.enter: _layout(spec.enter_params) for spec in IO_EVENTS.values()}
EXIT_LAYOUTS = {exit_type: _layout(spec.exit_params) for exit_type, spec in IO_EVENTS.items()}

# opens: exit type -> (syscall, enter type, fd position, name position on the exit (-1: on the
# enter), name position on the enter, dirfd position on the exit, on the enter)
OPEN_EVENTS: dict[int, tuple[str, int, int, int, int, int, int]] = {
    3: ("open", 2, 0, 1, 0, -1, -1),
    59: ("creat", 58, 0, 1, 0, -1, -1),
    103: ("openat", 102, 0, -1, 1, -1, 0),
    307: ("openat", 306, 0, 2, 1, 1, 0),
    327: ("openat2", 326, 0, 2, 1, 1, 0),
    337: ("open_by_handle_at", 336, 0, 3, -1, -1, -1),
}
OPEN_ENTERS = {spec[1]: exit_type for exit_type, spec in OPEN_EVENTS.items()}

SOCKET_E, SOCKET_X, CONNECT_E, CONNECT_X = 18, 19, 22, 23
# UDP sends whose enter event names the peer: sendto 30 and sendmsg 48, tuple at 2
SENDS_WITH_TUPLE = (30, 48)
ACCEPTS = (27, 57, 247, 249, 389)
DUP_E, DUP_X = 124, 125
DUPS = (125, 363, 365, 367)  # res, oldfd (, newfd)
PIPES = (61, 393)  # res, fd1, fd2
# clone, fork, vfork, clone3 exits of every version: res, exe, args, tid, pid, ptid, cwd, ...; comm
# at 13 from version 17 on
CLONES = (15, 157, 183, 185, 217, 219, 221, 223, 225, 227, 335)
# execve exits that carry exe (1), pid (4), cwd (6) and comm (13)
EXECVES = (231, 283, 289, 293, 331)

TRACKED = (
    set(IO_EVENTS)
    | set(IO_ENTERS)
    | set(OPEN_EVENTS)
    | set(OPEN_ENTERS)
    | {SOCKET_E, SOCKET_X, CONNECT_E, CONNECT_X, DUP_E}
    | set(ACCEPTS)
    | set(DUPS)
    | set(PIPES)
    | set(CLONES)
    | set(EXECVES)
)
# the most parameters each tracked type has today: how a v1 block's count is found
_MAX_PARAMS = {
    2: 3,
    3: 6,
    4: 1,
    5: 2,
    6: 2,
    7: 4,
    8: 2,
    9: 4,
    112: 3,
    113: 5,
    114: 3,
    115: 5,
    116: 1,
    117: 4,
    118: 2,
    119: 4,
    120: 2,
    121: 5,
    122: 3,
    123: 5,
    86: 3,
    87: 4,
    88: 3,
    89: 4,
    28: 2,
    29: 5,
    30: 3,
    31: 5,
    32: 2,
    33: 5,
    34: 2,
    35: 5,
    48: 3,
    49: 5,
    52: 1,
    53: 6,
    58: 2,
    59: 6,
    102: 4,
    103: 1,
    306: 4,
    307: 7,
    326: 5,
    327: 8,
    336: 3,
    337: 6,
    18: 3,
    19: 5,
    22: 2,
    23: 4,
    27: 3,
    57: 3,
    247: 5,
    249: 5,
    389: 6,
    124: 1,
    125: 2,
    363: 3,
    365: 4,
    367: 2,
    61: 4,
    393: 5,
    15: 11,
    157: 16,
    183: 16,
    185: 16,
    217: 17,
    219: 17,
    221: 17,
    223: 21,
    225: 21,
    227: 21,
    335: 21,
    231: 16,
    283: 19,
    289: 20,
    293: 27,
    331: 30,
    16: 0,
    186: 5,
}

# fd list types (scap_fd_type) -> (kind, what to call it)
FD_TYPES = {
    1: ("file", ""),
    16: ("file", ""),
    2: ("directory", "directory"),
    3: ("socket", ""),
    4: ("socket", ""),
    5: ("socket", ""),
    6: ("socket", ""),
    7: ("pipe", "pipe"),
    8: ("socket", "unix"),
    9: ("other", "eventfd"),
    10: ("other", "fd"),
    11: ("other", "signalfd"),
    12: ("other", "eventpoll"),
    13: ("other", "inotify"),
    14: ("other", "timerfd"),
    15: ("other", "netlink"),
    17: ("other", "bpf"),
    18: ("other", "userfaultfd"),
    19: ("other", "io_uring"),
    20: ("other", "memfd"),
    21: ("other", "pidfd"),
}
L4_PROTOS = {2: "tcp", 3: "udp", 4: "icmp", 5: "raw"}
SOCK_TYPES = {1: "tcp", 2: "udp", 3: "raw"}  # socket()'s type, low bits
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10


def _ipv4(raw: bytes | memoryview) -> str:
    return ".".join(str(byte) for byte in raw)


def _ipv6(raw: bytes | memoryview) -> str:
    """An IPv6 address as socket.inet_ntop writes it (glibc's: the longest run of two or more zero
    groups, the first of equal ones, as '::'; the IPv4 of '::ffff:a.b.c.d' and '::a.b.c.d' dotted),
    an IPv4-mapped one as plain IPv4. Not socket itself: importing it costs more than most imports
    spend on their IPv6 sockets."""
    words = IPV6_WORDS.unpack(bytes(raw))
    best_at, best_length, at = -1, 1, 0
    while at < 8:
        if words[at]:
            at += 1
            continue
        end = at
        while end < 8 and not words[end]:
            end += 1
        if end - at > best_length:
            best_at, best_length = at, end - at
        at = end
    if best_at == 0 and (best_length == 6 or (best_length == 5 and words[5] == 0xFFFF)):
        dotted = _ipv4(bytes(raw)[12:16])
        return dotted if best_length == 5 else "::" + dotted
    if best_at < 0:
        return ":".join(f"{word:x}" for word in words)
    return (
        ":".join(f"{word:x}" for word in words[:best_at])
        + "::"
        + ":".join(f"{word:x}" for word in words[best_at + best_length :])
    )


def _text(raw: bytes | memoryview) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "replace")


# fd list socket types -> (address width, how to print one): connected IPv4 3, IPv6 4; listening 5, 6
CONNECTED_SOCKETS = {3: (4, _ipv4), 4: (16, _ipv6)}
LISTENING_SOCKETS = {5: (4, _ipv4), 6: (16, _ipv6)}


def _socket_fd(proto: str, local: str | None, remote: str | None) -> Fd:
    if local is None or remote is None:
        return Fd("socket", proto=proto)
    return Fd("socket", f"{proto or 'ip'} {local}->{remote}", proto=proto, local=local, remote=remote)


def _tuple(raw: memoryview, local_first: bool, proto: str) -> Fd | None:
    """A socket tuple parameter (family, source, destination) as an fd: connect's tuple is local
    first, accept's remote first."""
    if len(raw) < 1:
        return None
    family = raw[0]
    if family == AF_INET and len(raw) >= 13:
        first = f"{_ipv4(raw[1:5])}:{U16.unpack_from(raw, 5)[0]}"
        second = f"{_ipv4(raw[7:11])}:{U16.unpack_from(raw, 11)[0]}"
    elif family == AF_INET6 and len(raw) >= 37:
        first = f"{_ipv6(raw[1:17])}:{U16.unpack_from(raw, 17)[0]}"
        second = f"{_ipv6(raw[19:35])}:{U16.unpack_from(raw, 35)[0]}"
    elif family == AF_UNIX:
        path = _text(raw[17:]) if len(raw) > 17 else ""
        return Fd("socket", f"unix {path}") if path else None
    else:
        return None
    local, remote = (first, second) if local_first else (second, first)
    return _socket_fd(proto, local, remote)


def _entry_length(body: memoryview, at: int, sized: bool) -> tuple[int, int]:
    """(length of a process or fd list entry, where its fields start): newer list blocks give
    each entry its length first (0: unknown, the fields say where it ends)."""
    return (U32.unpack_from(body, at)[0], at + 4) if sized else (0, at)


class ScapReader:
    """One pass over a capture: `calls()` yields the syscalls casstrace folds, in file order, with
    the thread and fd tables as they stood at each. `threads` holds every thread seen."""

    def __init__(self, path: str | os.PathLike, unknown_threads_pid: int | None = None) -> None:
        """`unknown_threads_pid`: the process of threads the capture never introduces (not in its
        process list, no clone seen), for a capture filtered to one process; otherwise such a
        thread counts as a process of its own."""
        self.path = os.fspath(path)
        self.unknown_threads_pid = unknown_threads_pid
        self.threads: dict[int, Thread] = {}
        self.fds: dict[int, dict[int, Fd]] = {}  # pid -> fd -> what it is
        self.events = 0  # event blocks read
        self.skipped_state_only = 0

    # -- the byte stream ----------------------------------------------------------------------------
    def _open(self) -> IO[bytes]:
        raw = open(self.path, "rb")
        if raw.read(2) == b"\x1f\x8b":
            raw.close()
            import gzip  # here: only gzipped captures need it

            return cast(IO[bytes], gzip.open(self.path, "rb"))
        raw.seek(0)
        return raw

    # -- the calls ------------------------------------------------------------------------------------
    def calls(self) -> Iterator[CallFields]:
        """The folded syscalls, as each returns. Raises ScapError on a file that is not a capture or
        is cut short."""
        return itertools.chain.from_iterable(self.batches())

    def batches(self) -> Iterator[list[CallFields]]:
        """The same calls, a list at a time: cheaper to hand on than one by one."""
        try:
            stream = self._open()
        except OSError as error:
            raise ScapError(f"cannot read it: {error.strerror}") from None
        with stream:
            try:
                yield from self._batches(stream)
            except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
                raise ScapError(f"cannot read it: {error}", truncated=isinstance(error, EOFError)) from None

    def _batches(self, stream: IO[bytes]) -> Iterator[list[CallFields]]:
        pending: dict[int, tuple] = {}  # tid -> (enter type, ts, fd, size, offset, whence, name, dirfd)
        scan = self._scan if COMPILED_SCAN is None else functools.partial(COMPILED_SCAN, self)
        first = True
        events = 0
        carry = b""
        while True:
            data = stream.read(CHUNK_BYTES)
            if not data:
                if first and not carry.startswith(SECTION_HEADER_BYTES):
                    raise ScapError("no scap section header at its start: not a sysdig capture")
                if carry:
                    raise ScapError(f"{len(carry)} bytes of a block cut short at the end", truncated=True)
                break
            # Blocks are read where they lie in the chunk; one cut by its end is carried over.
            buffer = carry + data if carry else data
            at = 0
            if first:
                if len(buffer) < 28:
                    carry = buffer
                    continue
                at = self._section_header(buffer)
                first = False
            while True:
                out: list[CallFields] = []
                at, scanned, stopped = scan(buffer, at, out, pending)
                events += scanned
                yield out
                if not stopped:
                    break
            carry = buffer[at:]
        self.events = events

    def _scan(self, buffer: bytes, at: int, out: list[CallFields], pending: dict[int, tuple]) -> tuple[int, int, bool]:
        """Reads the whole blocks of `buffer` from `at` on, appending the calls to `out`; returns
        (where it stopped, event blocks read, whether it stopped early). It stops early at an execve
        once it has calls: an execve renames its thread, and the calls before it must be folded
        before, with the thread as it was; the next call reads the execve first. probes/sysdig/scap_scan.c is
        the same loop compiled (and used when built)."""
        threads, fds = self.threads, self.fds
        io_events, io_enters, open_events = IO_EVENTS, IO_ENTERS, OPEN_EVENTS
        enter_layouts, exit_layouts = ENTER_LAYOUTS, EXIT_LAYOUTS
        tracked = TRACKED
        event_v2, event_v2_flags, event_v1, event_v1_flags = EVENT_V2, EVENT_V2_FLAGS, EVENT_V1, EVENT_V1_FLAGS
        lengths16 = LENGTHS16
        append = out.append
        events = 0
        buffer_size = len(buffer)
        view = memoryview(buffer)  # for the rare events read field by field
        # Every block but the last few of a chunk has room for a v2 event header: unpack that
        # at once (the common case), the block header alone otherwise.
        full = buffer_size - 36
        while at + 8 <= buffer_size:
            block_start = at
            if at <= full:
                block_type, block_length, _, ts, tid, length, etype, nparams = event_v2.unpack_from(buffer, at)
            else:
                block_type, block_length = BLOCK_HEADER.unpack_from(buffer, at)
            block_end = at + block_length
            if block_end > buffer_size or block_length < 12 or block_length & 3:
                if block_length < 12 or block_length & 3:
                    raise ScapError(f"a block of {block_length} bytes at a block boundary: not a capture")
                if block_length > (64 << 20):
                    raise ScapError("a block longer than 64 MiB: not a capture")
                break
            if block_type == 0x216:
                event = at + 10
                flags = 0
            else:
                block_layout = EVENT_BLOCKS.get(block_type)
                if block_layout is None:
                    self._block_at(block_type, buffer, at, block_end)
                    at = block_end
                    continue
                has_nparams, has_flags = block_layout
                if has_nparams:
                    if has_flags:
                        _, _, _, flags, ts, tid, length, etype, nparams = event_v2_flags.unpack_from(buffer, at)
                    else:
                        _, _, _, ts, tid, length, etype, nparams = event_v2.unpack_from(buffer, at)
                        flags = 0
                else:
                    if has_flags:
                        _, _, _, flags, ts, tid, length, etype = event_v1_flags.unpack_from(buffer, at)
                    else:
                        _, _, _, ts, tid, length, etype = event_v1.unpack_from(buffer, at)
                        flags = 0
                    nparams = -1
                event = at + (14 if has_flags else 10)
                if event + (26 if has_nparams else 22) > block_end - 4:
                    raise ScapError(f"an event block of {block_length} bytes: shorter than an event")
            events += 1
            at = block_end
            if etype not in tracked:
                continue
            # The parameters: lengths, then values.
            if nparams < 0:
                header = 22
                nparams = self._v1_nparams(buffer, event + header, event + length, etype)
                if nparams is None:
                    continue
            else:
                header = 26
            if nparams >= len(LENGTHS16) or event + header + 2 * nparams > block_end - 4:
                raise ScapError(f"an event of type {etype} longer than its block")
            if flags & LARGE_PAYLOAD:
                lengths = LENGTHS32[nparams].unpack_from(buffer, event + header)
                values = event + header + 4 * nparams
            else:
                lengths = lengths16[nparams].unpack_from(buffer, event + header)
                values = event + header + 2 * nparams
            if values + sum(lengths) > block_end - 4:
                raise ScapError(f"an event of type {etype} longer than its block")
            thread = threads.get(tid)
            if thread is None:
                thread = threads[tid] = self._unknown_thread(tid)

            spec = io_events.get(etype)
            if spec is not None:
                kind, syscall, positioned, enter_type, _, exit_params = spec
                enter = pending.pop(tid, None)
                result = I64.unpack_from(buffer, values)[0] if nparams and lengths[0] == 8 else 0
                if enter is not None and enter[0] == enter_type:
                    _, entry_ts, fd, size, offset, whence = enter
                else:
                    entry_ts = None
                    fd = size = offset = whence = None
                # Newer exit events carry the arguments themselves.
                if exit_params[0] < nparams:
                    layout = exit_layouts[etype]
                    if (
                        layout is not None
                        and layout.last < nparams
                        and lengths[layout.first : layout.last + 1] == layout.lengths
                    ):
                        found = layout.unpack.unpack_from(buffer, values + sum(lengths[: layout.first])) + (None,)
                        index = layout.slots
                        args = (found[index[0]], found[index[1]], found[index[2]], found[index[3]])
                    else:
                        args = self._args(buffer, values, lengths, exit_params)
                    fd = args[0]
                    if args[1] is not None:
                        size = args[1]
                    if args[2] is not None:
                        offset = args[2]
                    if args[3] is not None:
                        whence = args[3]
                table = fds.get(thread.pid)
                if table is None:
                    table = fds[thread.pid] = {}
                fd_info = None
                if fd is not None and fd >= 0:
                    fd_info = table.get(fd)
                    if fd_info is None:
                        fd_info = table[fd] = self._unknown_fd()
                if kind == CLOSE and result == 0 and fd is not None:
                    table.pop(fd, None)
                if flags & STATE_ONLY:
                    self.skipped_state_only += 1
                    continue
                # A plain tuple in Call's order: a Call per event would cost a third more.
                append((kind, syscall, positioned, ts, entry_ts, thread, fd, fd_info, result, size, offset, whence))
                continue
            layout = enter_layouts.get(etype)
            if layout is not None:
                if etype in SENDS_WITH_TUPLE and nparams > 2 and lengths[2] > 1:
                    self._name_by_peer(thread, buffer, values, lengths, view)
                _, last, expected, unpack, index = layout
                if lengths[: last + 1] == expected:
                    args = unpack.unpack_from(buffer, values) + (None,)
                    pending[tid] = (etype, ts, args[index[0]], args[index[1]], args[index[2]], args[index[3]])
                else:
                    arg_spec = io_events[io_enters[etype]].enter_params
                    pending[tid] = (etype, ts, *self._args(buffer, values, lengths, arg_spec))
                continue
            if etype in open_events:
                call = self._opened(etype, ts, thread, pending.pop(tid, None), view, values, lengths, nparams)
                if call is not None and not flags & STATE_ONLY:
                    append(call)
            else:
                if etype in EXECVES and out:
                    return block_start, events - 1, True  # read again, first thing, by the next call
                self._state(etype, ts, thread, pending, buffer, view, values, lengths, nparams, flags)
        return at, events, False

    def _block_at(self, block_type: int, buffer: bytes, at: int, end: int) -> None:
        """A block other than an event, at `at` of `buffer` up to `end`."""
        self._other_block(block_type, memoryview(buffer)[at + 8 : end - 4])

    @staticmethod
    def _unknown_fd() -> Fd:
        """An fd the capture never showed opened (sysdig types it 'o')."""
        return Fd("other", type_name="fd")

    def _unknown_thread(self, tid: int) -> Thread:
        pid = self.unknown_threads_pid
        process = self.threads.get(pid) if pid is not None else None
        if pid is None or process is None:
            return Thread(tid, tid if pid is None else pid, "", "", "", "/")
        return Thread(tid, pid, "", process.exe, process.exepath, process.cwd)

    @staticmethod
    def _args(buffer: bytes, values: int, lengths: tuple, positions: tuple) -> tuple:
        """(fd, size, offset, whence) at `positions` (-1: not carried). The fd is signed; the rest
        unsigned, as wide as the capture wrote them."""
        out: list[int | None] = []
        nparams = len(lengths)
        signed = True
        for position in positions:
            if position < 0 or position >= nparams or lengths[position] == 0:
                out.append(None)
            else:
                at = values + sum(lengths[:position])
                out.append(int.from_bytes(buffer[at : at + lengths[position]], "little", signed=signed))
            signed = False
        return tuple(out)

    @staticmethod
    def _v1_nparams(buffer: bytes, lengths_at: int, event_end: int, etype: int) -> int | None:
        """A v1 event's parameter count: the largest count whose lengths add up to the event's."""
        for nparams in range(_MAX_PARAMS.get(etype, 0), -1, -1):
            values = lengths_at + 2 * nparams
            if values > event_end:
                continue
            if values + sum(LENGTHS16[nparams].unpack_from(buffer, lengths_at)) == event_end:
                return nparams
        return None

    @staticmethod
    def _param(view: memoryview, values: int, lengths: tuple, position: int) -> memoryview | None:
        if position < 0 or position >= len(lengths):
            return None
        at = values + sum(lengths[:position])
        return view[at : at + lengths[position]]

    def _int_param(self, view: memoryview, values: int, lengths: tuple, position: int) -> int | None:
        raw = self._param(view, values, lengths, position)
        if raw is None or len(raw) not in (1, 2, 4, 8):
            return None
        return int.from_bytes(raw, "little", signed=len(raw) == 8)

    # -- the tables ------------------------------------------------------------------------------------
    def _table(self, thread: Thread) -> dict[int, Fd]:
        table = self.fds.get(thread.pid)
        if table is None:
            table = self.fds[thread.pid] = {}
        return table

    def _name_by_peer(self, thread: Thread, buffer: bytes, values: int, lengths: tuple, view: memoryview) -> None:
        """A send's enter event names its peer: an unconnected (UDP) socket takes that name."""
        fd = I64.unpack_from(buffer, values)[0] if lengths[0] == 8 else -1
        table = self._table(thread)
        old = table.get(fd)
        if old is not None and old.kind == "socket" and not old.name:
            named = _tuple(view[values + sum(lengths[:2]) : values + sum(lengths[:3])], True, old.proto)
            if named is not None:
                table[fd] = named

    def _path(self, thread: Thread, name: str, dirfd: int | None) -> str:
        if not name or name.startswith("/"):
            return posixpath.normpath(name) if name else name
        base = thread.cwd
        if dirfd is not None and dirfd != AT_FDCWD:
            directory = self._table(thread).get(dirfd)
            base = directory.name if directory is not None and directory.name else base
        return posixpath.normpath(posixpath.join(base or "/", name))

    def _opened(
        self,
        etype: int,
        ts: int,
        thread: Thread,
        enter: tuple | None,
        view: memoryview,
        values: int,
        lengths: tuple,
        nparams: int,
    ) -> Call | None:
        syscall, enter_type, fd_at, name_at, _enter_name_at, dirfd_at, _enter_dirfd_at = OPEN_EVENTS[etype]
        fd = self._int_param(view, values, lengths, fd_at)
        if fd is None:
            return None
        entry_ts = None
        name_raw = self._param(view, values, lengths, name_at)
        dirfd = self._int_param(view, values, lengths, dirfd_at)
        if enter is not None and enter[0] == enter_type:
            entry_ts = enter[1]
            if name_raw is None:
                name_raw = enter[6]
                dirfd = enter[7]
        name = _text(name_raw) if name_raw is not None else ""
        if fd >= 0:
            path = self._path(thread, name, dirfd)
            self._table(thread)[fd] = Fd("file", path) if path else Fd("unknown")
        return Call(OPEN, syscall, False, ts, entry_ts, thread, fd if fd >= 0 else None, None, fd, None, None, None)

    def _state(
        self,
        etype: int,
        ts: int,
        thread: Thread,
        pending: dict,
        buffer: bytes,
        view: memoryview,
        values: int,
        lengths: tuple,
        nparams: int,
        flags: int,
    ) -> None:
        """Keeps the thread and fd tables: opens' enter events wait for their exit; sockets, accepts,
        dups, pipes, clones, execs and exits change the tables."""
        if etype in OPEN_ENTERS:
            _, _, _, _, name_at, _, dirfd_at = OPEN_EVENTS[OPEN_ENTERS[etype]]
            name = self._param(view, values, lengths, name_at)
            pending[thread.tid] = (
                etype,
                ts,
                None,
                None,
                None,
                None,
                bytes(name) if name is not None else None,
                self._int_param(view, values, lengths, dirfd_at),
            )
            return
        if etype == SOCKET_E:
            pending[thread.tid] = (
                etype,
                ts,
                self._int_param(view, values, lengths, 0),
                self._int_param(view, values, lengths, 1),
                None,
                None,
            )
            return
        if etype in (DUP_E, CONNECT_E):
            pending[thread.tid] = (etype, ts, self._int_param(view, values, lengths, 0), None, None, None)
            return
        enter = pending.pop(thread.tid, None)
        table = self._table(thread)
        if etype == SOCKET_X:
            fd = self._int_param(view, values, lengths, 0)
            if fd is not None and fd >= 0:
                domain = self._int_param(view, values, lengths, 1)
                kind = self._int_param(view, values, lengths, 2) or 0
                if domain is None and enter is not None and enter[0] == SOCKET_E:
                    domain, kind = enter[2], enter[3] or 0
                table[fd] = Fd("socket", proto="" if domain == AF_UNIX else SOCK_TYPES.get(kind & 0xF, ""))
        elif etype == CONNECT_X:
            result = self._int_param(view, values, lengths, 0)
            fd = self._int_param(view, values, lengths, 2)
            if fd is None and enter is not None and enter[0] == CONNECT_E:
                fd = enter[2]
            raw = self._param(view, values, lengths, 1)
            # 0, or EINPROGRESS on a non-blocking socket: either way the tuple names the connection
            if fd is not None and fd >= 0 and raw is not None and result in (0, -115, None):
                before = table.get(fd)
                named = _tuple(raw, True, before.proto if before is not None else "tcp")
                if named is not None:
                    table[fd] = named
        elif etype in ACCEPTS:
            fd = self._int_param(view, values, lengths, 0)
            raw = self._param(view, values, lengths, 1)
            if fd is not None and fd >= 0:
                named = _tuple(raw, False, "tcp") if raw is not None else None
                table[fd] = named if named is not None else Fd("socket", proto="tcp")
        elif etype in DUPS:
            new_fd = self._int_param(view, values, lengths, 0)
            old_fd = self._int_param(view, values, lengths, 1)
            if old_fd is None and enter is not None and enter[0] == DUP_E:
                old_fd = enter[2]
            if new_fd is not None and new_fd >= 0 and old_fd is not None and old_fd in table:
                table[new_fd] = table[old_fd]
        elif etype in PIPES:
            if self._int_param(view, values, lengths, 0) == 0:
                for position in (1, 2):
                    fd = self._int_param(view, values, lengths, position)
                    if fd is not None and fd >= 0:
                        table[fd] = Fd("pipe", type_name="pipe")
        elif etype in CLONES:
            result = self._int_param(view, values, lengths, 0)
            tid = self._int_param(view, values, lengths, 3)
            pid = self._int_param(view, values, lengths, 4)
            if result == 0 and tid is not None and pid is not None:
                parent = self.threads.get(pid)
                comm_raw = self._param(view, values, lengths, 13) if nparams > 16 else None
                comm = _text(comm_raw) if comm_raw is not None else (parent.comm if parent else "")
                exe_raw = self._param(view, values, lengths, 1)
                exe = _text(exe_raw) if exe_raw is not None else ""
                cwd_raw = self._param(view, values, lengths, 6)
                child = Thread(
                    tid,
                    pid,
                    comm,
                    exe,
                    parent.exepath if parent else "",
                    _text(cwd_raw) if cwd_raw is not None else "/",
                )
                self.threads[tid] = child
                if pid == tid and not self.fds.get(pid):
                    # A new process starts with a copy of its parent's fds.
                    ptid = self._int_param(view, values, lengths, 5)
                    source = self.threads.get(ptid) if ptid is not None else None
                    if source is not None and source.pid in self.fds:
                        self.fds[pid] = dict(self.fds[source.pid])
        elif etype in EXECVES and self._int_param(view, values, lengths, 0) == 0:
            exe_raw = self._param(view, values, lengths, 1)
            comm_raw = self._param(view, values, lengths, 13)
            if exe_raw is not None:
                thread.exe = _text(exe_raw)
            if comm_raw is not None:
                thread.comm = _text(comm_raw)
            for other in self.threads.values():
                if other.pid == thread.pid and other is not thread:
                    other.exe = thread.exe

    # -- header blocks -----------------------------------------------------------------------------
    def _section_header(self, buffer: bytes) -> int:
        block_type, length = BLOCK_HEADER.unpack_from(buffer, 0)
        magic, major, _minor, _ = SECTION.unpack_from(buffer, 8)
        if block_type != SECTION_HEADER or magic != BYTE_ORDER_MAGIC:
            raise ScapError("no scap section header at its start: not a sysdig capture")
        if major != 1:
            raise ScapError(f"scap format version {major}.x: this reader knows 1.x")
        return length

    def _other_block(self, block_type: int, body: memoryview) -> None:
        if block_type in PROCESS_LISTS:
            self._process_list(PROCESS_LISTS[block_type], body)
        elif block_type in FD_LISTS:
            self._fd_list(FD_LISTS[block_type], body)
        elif block_type == SECTION_HEADER:
            pass  # a second section (a capture appended to another): its tables follow

    def _process_list(self, version: int, body: memoryview) -> None:
        at, size = 0, len(body)

        def text() -> str:
            nonlocal at
            length = U16.unpack_from(body, at)[0]
            value = _text(body[at + 2 : at + 2 + length])
            at += 2 + length
            return value

        while size - at >= 4 + 24:
            start = at
            entry_length, at = _entry_length(body, at, version == 9)
            tid, pid, _ptid = struct.unpack_from("<QQQ", body, at)
            at += 24
            if version >= 6:
                at += 8  # sid
            if version >= 8:
                at += 8  # vpgid
            comm = text()
            exe = text()
            exepath = text() if version >= 7 else ""
            text()  # args
            cwd = text()
            self.threads[tid] = Thread(tid, pid, comm, exe, exepath, cwd)
            if entry_length:
                at = start + entry_length
                continue
            at += 8 + 4 + 4 + 4  # fdlimit, flags, uid, gid
            if version >= 2:
                at += 4 * 3 + 8 * 2  # vm sizes, page faults
                if version >= 3:
                    text()  # env
                if version >= 4:
                    at += 16  # vtid, vpid
                    text()  # cgroups
                    if version >= 5:
                        text()  # root

    def _fd_list(self, version: int, body: memoryview) -> None:
        tid = U64.unpack_from(body, 0)[0]
        owner = self.threads.get(tid)
        table = self.fds.setdefault(owner.pid if owner is not None else tid, {})
        # Connected IP sockets are listed client first: the process is the server end where it
        # listens on the server's port.
        connected: list[tuple[int, str, str, str, int]] = []
        listening: set[int] = set()
        try:
            self._fd_entries(version, body, table, connected, listening)
        finally:
            for fd, proto, client, server, server_port in connected:
                table[fd] = (
                    _socket_fd(proto, server, client) if server_port in listening else _socket_fd(proto, client, server)
                )

    def _fd_entries(
        self,
        version: int,
        body: memoryview,
        table: dict[int, Fd],
        connected: list[tuple[int, str, str, str, int]],
        listening: set[int],
    ) -> None:
        at, size = 8, len(body)
        while size - at >= 4 + 17:
            start = at
            entry_length, at = _entry_length(body, at, version == 2)
            fd = I64.unpack_from(body, at)[0]
            fd_type = body[at + 16]
            at += 17
            info: Fd
            if fd_type in CONNECTED_SOCKETS:  # addresses (client, server), ports, protocol
                width, address = CONNECTED_SOCKETS[fd_type]
                ports = at + 2 * width
                server_port = U16.unpack_from(body, ports + 2)[0]
                client = f"{address(body[at : at + width])}:{U16.unpack_from(body, ports)[0]}"
                server = f"{address(body[at + width : ports])}:{server_port}"
                connected.append((fd, L4_PROTOS.get(body[ports + 4], ""), client, server, server_port))
                info = Fd("socket")
                at = ports + 5
            elif fd_type in LISTENING_SOCKETS:  # address, port, protocol
                width, address = LISTENING_SOCKETS[fd_type]
                port = U16.unpack_from(body, at + width)[0]
                proto = L4_PROTOS.get(body[at + width + 2], "")
                listening.add(port)
                info = Fd("socket", f"{proto or 'ip'} listening {address(body[at : at + width])}:{port}", proto=proto)
                at += width + 3
            elif fd_type == 8:  # unix socket: two addresses, then the path
                at += 16
                length = U16.unpack_from(body, at)[0]
                path = _text(body[at + 2 : at + 2 + length])
                info = Fd("socket", f"unix {path}" if path else "")
                at += 2 + length
            elif fd_type in FD_TYPES or fd_type == 16:
                if fd_type == 16:
                    at += 4  # open flags
                length = U16.unpack_from(body, at)[0]
                name = _text(body[at + 2 : at + 2 + length])
                at += 2 + length
                kind, type_name = FD_TYPES[fd_type]
                info = Fd(kind, name if kind == "file" or (kind == "directory" and name) else "", type_name=type_name)
                if kind == "directory":
                    info.name = name
            else:
                info = Fd("other", type_name="fd")
                if not entry_length:
                    return  # an unknown type of unknown length: the rest of the list is lost
            if entry_length:
                at = start + entry_length
            table[fd] = info


def _compiled_scan() -> Callable[..., tuple[int, int, bool]] | None:
    """ScapReader._scan compiled from probes/sysdig/scap_scan.c (scripts/install builds it), told the
    event tables above; None where it was not built (no compiler): the Python loop reads the same."""
    try:
        from casstrace.probes.sysdig import _scap_scan
    except ImportError:
        return None
    _scap_scan.configure(
        {
            exit_type: (spec.kind, spec.syscall, spec.positioned, spec.enter, spec.enter_params, spec.exit_params)
            for exit_type, spec in IO_EVENTS.items()
        },
        {spec.enter: spec.enter_params for spec in IO_EVENTS.values() if ENTER_LAYOUTS[spec.enter] is not None},
        TRACKED,
        set(OPEN_EVENTS),
        set(SENDS_WITH_TUPLE),
        set(EXECVES),
        EVENT_BLOCKS,
        CLOSE,
        STATE_ONLY,
        LARGE_PAYLOAD,
        ScapError,
    )
    return _scap_scan.scan


# Which loop reads: the compiled one when built (tests set it to None to check both read the same).
COMPILED_SCAN = _compiled_scan()
