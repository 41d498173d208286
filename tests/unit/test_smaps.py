"""How /proc/PID/smaps is read for the mapped-pages measure (unit: smaps text, no process)."""

import os

from casstrace.probes.proc.mapped_pages import parse_smaps, parse_smaps_under
from smaps_parse import DATA_DIR, jvm_smaps

# One mapping of each kind a JVM has, smaps' header line then the fields the measure reads (kB).
SMAPS = """\
7f0000000000-7f0000400000 r--s 00000000 08:01 101 /data/ks/t-1/nb-1-big-Data.db
Rss:                4096 kB
Referenced:         3072 kB
FilePmdMapped:      2048 kB
7f1000000000-7f1000100000 r--p 00000000 08:01 202 /usr/lib/libjvm.so
Rss:                 512 kB
Referenced:           64 kB
7f1000100000-7f1000900000 r-xp 00100000 08:01 202 /usr/lib/libjvm.so
Rss:                8192 kB
Referenced:         6144 kB
7f1000900000-7f1000a00000 rw-p 00900000 08:01 202 /usr/lib/libjvm.so
Rss:                1024 kB
Referenced:         1024 kB
7f2000000000-7f2000100000 rw-s 00000000 08:01 303 /data/commitlog/CommitLog-7-1.log
Rss:                1024 kB
Referenced:          512 kB
7f3000000000-7f3000100000 rw-p 00000000 00:00 0
Rss:                1024 kB
Referenced:         1024 kB
"""


def test_a_files_code_and_private_writable_copies_are_not_its_data():
    files = parse_smaps(SMAPS.splitlines(keepends=True))
    data, jvm, commitlog = (files[(os.makedev(8, 1), inode)] for inode in (101, 202, 303))
    assert (data.mapped_bytes, data.resident_bytes, data.referenced_bytes, data.huge_bytes) == (
        4 << 20,
        4 << 20,
        3 << 20,
        2 << 20,
    )
    # libjvm.so's read-only segment only: its code (r-xp) is touched whenever the JVM runs, its data
    # (rw-p) is the JVM's own memory
    assert (jvm.mapped_bytes, jvm.resident_bytes, jvm.referenced_bytes) == (1 << 20, 512 << 10, 64 << 10)
    assert commitlog.referenced_bytes == 512 << 10  # a shared writable map writes the file: kept
    assert len(files) == 3  # the anonymous mapping is no file


def with_vmflags(text: str) -> str:
    """SMAPS as the kernel writes it: every block ends with a VmFlags line."""
    blocks: list[str] = []
    for line in text.splitlines(keepends=True):
        if "-" in line.split(" ", 1)[0] and blocks:
            blocks.append("VmFlags: rd mr mw me\n")
        blocks.append(line)
    return "".join(blocks) + "VmFlags: rd mr mw me\n"


def test_the_directories_parse_finds_what_the_full_parse_finds_under_them():
    text = with_vmflags(SMAPS)
    full = parse_smaps(text.splitlines(keepends=True))
    for prefixes in (("/data/",), ("/data/ks/",), ("/data/", "/data/ks/"), ("/usr/lib/",), ("/nowhere/",)):
        under = parse_smaps_under(text.encode(), prefixes)
        assert under == {key: f for key, f in full.items() if f.path.startswith(prefixes)}, prefixes


def test_the_directories_parse_takes_a_path_only_where_the_path_column_begins():
    text = with_vmflags(SMAPS.replace("/usr/lib/libjvm.so", "/usr/lib/data/libjvm.so"))
    assert {f.path for f in parse_smaps_under(text.encode(), ("/data/",)).values()} == {
        "/data/ks/t-1/nb-1-big-Data.db",
        "/data/commitlog/CommitLog-7-1.log",
    }


def test_the_data_directories_mappings_parse_as_every_line_does():
    """parse_smaps_under (a byte search, benchmarks/smaps_parse.py times it) finds what the line-by-line
    parse finds under the data directories, on 10,000 data-file mappings (a node of 5,000 SSTables)."""
    text = jvm_smaps(10_000)
    every_line = parse_smaps(text.decode().splitlines(keepends=True))
    assert parse_smaps_under(text, (DATA_DIR,)) == {
        key: f for key, f in every_line.items() if f.path.startswith(DATA_DIR)
    }
