"""The smaps read of the mapped-pages measure: data directories only, against every line (prints figures)

    .venv/bin/python benchmarks/smaps_parse.py [--mappings 10000]

After every window the measure reads the JVM's smaps: on a node of 5,000 SSTables, 10,000 data-file
mappings. parse_smaps_under (a byte search for the data directories) against the line-by-line
parse_smaps of the same text, as CPU time of this process in one run (tests/unit/test_mapped_pages.py
checks they agree).
"""

import argparse

from figures import cpu_seconds, report

DATA_DIR = "/var/lib/cassandra/data/"


def jvm_smaps(mappings: int, data_dir: str = DATA_DIR) -> bytes:
    """smaps text as a 4.x JVM of many SSTables has it: each mapping a data file's, with every field
    the kernel writes, and a library's code and heap beside them."""
    fields = (
        "Size:               {size} kB\nKernelPageSize:        4 kB\nMMUPageSize:           4 kB\n"
        "Rss:                 {rss} kB\nPss:                 {rss} kB\nPss_Dirty:             0 kB\n"
        "Shared_Clean:          0 kB\nShared_Dirty:          0 kB\nPrivate_Clean:       {rss} kB\n"
        "Private_Dirty:         0 kB\nReferenced:          {ref} kB\nAnonymous:             0 kB\n"
        "KSM:                   0 kB\nLazyFree:              0 kB\nAnonHugePages:         0 kB\n"
        "ShmemPmdMapped:        0 kB\nFilePmdMapped:         0 kB\nShared_Hugetlb:        0 kB\n"
        "Private_Hugetlb:       0 kB\nSwap:                  0 kB\nSwapPss:               0 kB\n"
        "Locked:                0 kB\nTHPeligible:           0\nVmFlags: rd mr me ms sd\n"
    )
    blocks = [
        "600000000-800000000 rw-p 00000000 00:00 0 \n" + fields.format(size=8 << 20, rss=8 << 20, ref=8 << 20),
        "7f0000000000-7f0000100000 r-xp 00000000 08:01 9 /usr/lib/jvm/lib/server/libjvm.so\n"
        + fields.format(size=1024, rss=1024, ref=1024),
    ]
    for n in range(mappings):
        start = 0x7F1000000000 + n * 0x100000
        blocks.append(
            f"{start:x}-{start + 0x70000:x} r--s 00000000 08:01 {1000 + n} "
            f"{data_dir}ks/t-1/nb-{n}-big-Data.db\n" + fields.format(size=448, rss=448, ref=n % 449)
        )
    return "".join(blocks).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mappings", type=int, default=10_000)
    from casstrace.probes.proc.mapped_pages import parse_smaps, parse_smaps_under

    text = jvm_smaps(parser.parse_args().mappings)
    under = cpu_seconds(lambda: parse_smaps_under(text, (DATA_DIR,)))
    every_line = cpu_seconds(lambda: parse_smaps(text.decode().splitlines(keepends=True)))
    print(f"parse_smaps_under {under * 1000:.1f} ms; parse_smaps {every_line * 1000:.1f} ms")
    report("smaps_parse_under_over_every_line", under / every_line)


if __name__ == "__main__":
    main()
