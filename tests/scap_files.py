"""Captures made from the shared ones, for the scap reader's and the importer's tests."""

import struct
from pathlib import Path

from casstrace.probes.sysdig import scap_reader


def exit_only(source: Path, out: Path) -> None:
    """`source` as falcosecurity libs >= 0.23 would have written it: no enter events, and every I/O
    exit event carrying the arguments (fd, size, offset) that only its enter event had."""
    data = source.read_bytes()
    blocks, at, pending = [], 0, {}
    while at < len(data):
        block_type, length = struct.unpack_from("<II", data, at)
        block = data[at : at + length]
        at += length
        if block_type != 0x216:
            blocks.append(block)
            continue
        _, ts, tid, _event_length, etype, nparams = struct.unpack_from("<HQQIHI", block, 8)
        lengths = list(struct.unpack_from(f"<{nparams}H", block, 36))
        values, params = 36 + 2 * nparams, []
        for width in lengths:
            params.append(block[values : values + width])
            values += width
        if etype in scap_reader.IO_ENTERS or etype in scap_reader.OPEN_ENTERS:
            pending[tid] = (etype, params)
            continue
        spec = scap_reader.IO_EVENTS.get(etype)
        if spec is not None and tid in pending and pending[tid][0] == spec.enter:
            enter = pending.pop(tid)[1]
            width = max(spec.exit_params) + 1
            by_position = {
                exit_at: enter[enter_at]
                for exit_at, enter_at in zip(spec.exit_params, spec.enter_params)
                if exit_at >= 0 and enter_at >= 0
            }
            params += [by_position.get(position, b"") for position in range(len(params), width)]
        body = struct.pack(
            f"<QQIHI{len(params)}H",
            ts,
            tid,
            26 + 2 * len(params) + sum(map(len, params)),
            etype,
            len(params),
            *map(len, params),
        ) + b"".join(params)
        body = struct.pack("<H", 0) + body
        body += b"\0" * (-len(body) % 4)
        total = 12 + len(body)
        blocks.append(struct.pack("<II", 0x216, total) + body + struct.pack("<I", total))
    out.write_bytes(b"".join(blocks))


def thread_renamed(source: Path, out: Path, tid: int, new_tid: int) -> None:
    """`source` with thread `tid`'s events given to `new_tid`, a thread its process list does not
    hold and no clone introduces: what a thread started during a live capture filtered to one
    process looks like."""
    data = bytearray(source.read_bytes())
    at = 0
    while at < len(data):
        block_type, length = struct.unpack_from("<II", data, at)
        if block_type == 0x216 and struct.unpack_from("<Q", data, at + 18)[0] == tid:
            struct.pack_into("<Q", data, at + 18, new_tid)  # block header, cpu id, ts, then tid
        at += length
    out.write_bytes(bytes(data))


def with_execve(source: Path, out: Path, tid: int, after_ts: int, exe: bytes, comm: bytes) -> None:
    """`source` with thread `tid` exec'ing `exe` (named `comm`) 1 ns after its event at `after_ts`:
    an execve exit event (PPME 293, its first 14 parameters: result 0, exe, comm at 13)."""
    data = source.read_bytes()
    at, blocks = 0, []
    while at < len(data):
        block_type, length = struct.unpack_from("<II", data, at)
        blocks.append(data[at : at + length])
        if block_type == 0x216 and struct.unpack_from("<QQ", data, at + 10) == (after_ts, tid):
            ts = after_ts + 1
            params = [struct.pack("<q", 0), exe + b"\0"] + [b""] * 11 + [comm + b"\0"]
            body = struct.pack(
                f"<HQQIHI{len(params)}H",
                0,
                ts,
                tid,
                26 + 2 * len(params) + sum(map(len, params)),
                293,
                len(params),
                *map(len, params),
            ) + b"".join(params)
            body += b"\0" * (-len(body) % 4)
            blocks.append(struct.pack("<II", 0x216, 12 + len(body)) + body + struct.pack("<I", 12 + len(body)))
        at += length
    out.write_bytes(b"".join(blocks))
