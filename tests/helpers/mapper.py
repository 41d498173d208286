"""A process that reads a file only through a memory map, touching exactly the pages it is told to.

It reads one command per line on stdin and answers each with one JSON line on stdout holding its
own accounting, the truth the mapped-pages tests compare casstrace's measure with.

  map PATH [small]   map PATH whole, read-only and shared (as Cassandra maps its SSTables); with
                `small`, advise MADV_NOHUGEPAGE first, so the kernel maps it page by page (4 KiB
                accessed bits), never with 2 MiB entries
  prefault      touch every page once, so that all are mapped: a warm node's state
  touch P ...   read one byte of each page P (page numbers in the file): what a warm query does
  exit
"""

import json
import mmap
import os
import sys

PAGE = mmap.PAGESIZE


def main() -> None:
    mapping: mmap.mmap | None = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command, arguments = words[0], words[1:]
        if command == "map":
            fd = os.open(arguments[0], os.O_RDONLY)
            mapping = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
            os.close(fd)
            if arguments[1:] == ["small"]:
                mapping.madvise(mmap.MADV_NOHUGEPAGE)
            answer: dict[str, int | str] = {"pages": len(mapping) // PAGE, "bytes": len(mapping)}
        elif command == "prefault":
            assert mapping is not None
            checksum = sum(mapping[offset] for offset in range(0, len(mapping), PAGE))
            answer = {"touched_pages": len(mapping) // PAGE, "checksum": checksum}
        elif command == "touch":
            assert mapping is not None
            pages = sorted({int(word) for word in arguments})
            checksum = sum(mapping[page * PAGE] for page in pages)
            answer = {"touched_pages": len(pages), "touched_bytes": len(pages) * PAGE, "checksum": checksum}
        elif command == "exit":
            print(json.dumps({"bye": True}), flush=True)
            return
        else:
            answer = {"error": f"unknown command {command}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
