"""Builds a large .scap for the streaming benchmark by replaying a real capture's events.

    .venv/bin/python benchmarks/make_large_scap.py OUT.scap [--size-mb 1024] [--source CAPTURE.scap]

The header blocks (section, machine, process and fd lists) of the source (default: the largest
capture in tests/data/scap) are written once; then its event blocks again and again, each copy's
timestamps moved past the previous copy's, until the file reaches --size-mb. Every copy opens,
reads and closes the same files as the original, so the result is a valid capture that sysdig
reads too (its totals are the original's times the number of copies). Not committed: ~1 GB.
"""

import argparse
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVENT_BLOCKS = {0x216, 0x221}  # v2 event blocks: cpu id (u16), then the event header (ts first)


def split(data: bytes) -> tuple[bytes, list[tuple[int, int]], int, int]:
    """(header blocks, [(offset, length)] of the event blocks, first ts, last ts)."""
    at, header_end, events = 0, None, []
    first = last = None
    while at < len(data):
        block_type, length = struct.unpack_from("<II", data, at)
        if block_type in EVENT_BLOCKS:
            if header_end is None:
                header_end = at
            ts = struct.unpack_from("<Q", data, at + 10)[0]
            first = ts if first is None else first
            last = ts
            events.append((at, length))
        elif header_end is not None:
            raise SystemExit(f"block type {block_type:#x} among the events: pick a capture without one")
        at += length
    if header_end is None or first is None or last is None:
        raise SystemExit("no v2 event blocks in the source capture")
    return data[:header_end], events, first, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mb", type=int, default=1024, help="size to reach, in MB (10^6 bytes)")
    parser.add_argument(
        "--source",
        type=Path,
        default=max((REPO / "tests" / "data" / "scap").glob("*.scap"), key=lambda p: p.stat().st_size),
    )
    args = parser.parse_args()
    data = args.source.read_bytes()
    header, events, first, last = split(data)
    body = bytearray(b"".join(data[at : at + length] for at, length in events))
    offsets = []
    at = 0
    for _, length in events:
        offsets.append(at + 10)
        at += length
    step = last - first + 1_000_000  # each copy starts 1 ms after the previous one ended
    target = args.size_mb * 1_000_000
    copies = 0
    with open(args.out, "wb") as out:
        out.write(header)
        written = len(header)
        while written < target:
            if copies:
                for offset in offsets:
                    struct.pack_into("<Q", body, offset, struct.unpack_from("<Q", body, offset)[0] + step)
            out.write(body)
            written += len(body)
            copies += 1
    print(f"{args.out}: {written:,} bytes, {copies} copies of the {len(events):,} events of {args.source.name}")


if __name__ == "__main__":
    main()
