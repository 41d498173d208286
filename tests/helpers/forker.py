"""A command whose descendants read known byte ranges of known files, for the probe tests that
follow a command's children. Every process keeps its own accounting.

    forker.py DIR RESULTS

DIR holds a.bin (>= 80 KiB), b.bin (>= 64 KiB) and c.bin (>= 10000 bytes). The process opens a.bin,
reads one line on stdin, then:
  itself      preads 1000 bytes of a.bin at 0
  child       preads 5000 at 100 through the fd it inherited; opens a.bin: lseek to 4096, reads 3000
              and 2000, preads 4096 at 65536; then forks
  grandchild  opens b.bin, reads 777 from its main thread, and from a thread it names
              "gkid-reader" preads 8192 at 0 and 1234 at 50000
  dd          (a second child, run through subprocess) reads 7 blocks of 1000 bytes of c.bin from
              byte 3000, as its own "records in" line counts
Each process appends its reads to RESULTS as JSON lines [pid, tid, path, syscall, offset, returned].
When all are done it prints "done" and exits on the next line on stdin.
"""

import ctypes
import json
import os
import re
import subprocess
import sys
import threading

PR_SET_NAME = 15
LIBC = ctypes.CDLL(None, use_errno=True)


class Accounting:
    def __init__(self, results: str):
        self.results = results
        self.reads: list[list[object]] = []
        self.lock = threading.Lock()

    def read(self, path, syscall, fd, size, offset=None):
        position = os.lseek(fd, 0, os.SEEK_CUR) if offset is None else offset
        data = os.read(fd, size) if offset is None else os.pread(fd, size, offset)
        with self.lock:
            self.reads.append([os.getpid(), threading.get_native_id(), path, syscall, position, len(data)])

    def save(self):
        with open(self.results, "a") as out:
            out.write("".join(json.dumps(read) + "\n" for read in self.reads))


def grandchild(directory, results):
    b = os.path.join(directory, "b.bin")
    accounting = Accounting(results)
    fd = os.open(b, os.O_RDONLY)

    def reader():
        LIBC.prctl(PR_SET_NAME, b"gkid-reader", 0, 0, 0)
        accounting.read(b, "pread64", fd, 8192, 0)
        accounting.read(b, "pread64", fd, 1234, 50000)

    thread = threading.Thread(target=reader)
    thread.start()
    accounting.read(b, "read", fd, 777)
    thread.join()
    accounting.save()


def child(directory, results, inherited):
    a = os.path.join(directory, "a.bin")
    accounting = Accounting(results)
    accounting.read(a, "pread64", inherited, 5000, 100)
    fd = os.open(a, os.O_RDONLY)
    os.lseek(fd, 4096, os.SEEK_SET)
    accounting.read(a, "read", fd, 3000)
    accounting.read(a, "read", fd, 2000)
    accounting.read(a, "pread64", fd, 4096, 65536)
    accounting.save()
    pid = os.fork()
    if pid == 0:
        grandchild(directory, results)
        os._exit(0)
    os.waitpid(pid, 0)


def main():
    directory, results = sys.argv[1], sys.argv[2]
    a, c = os.path.join(directory, "a.bin"), os.path.join(directory, "c.bin")
    inherited = os.open(a, os.O_RDONLY)
    sys.stdin.readline()
    accounting = Accounting(results)
    accounting.read(a, "pread64", inherited, 1000, 0)
    accounting.save()
    pid = os.fork()
    if pid == 0:
        child(directory, results, inherited)
        os._exit(0)
    os.waitpid(pid, 0)
    dd = subprocess.Popen(
        ["dd", f"if={c}", "of=/dev/null", "bs=1000", "count=7", "skip=3"], stderr=subprocess.PIPE, text=True
    )
    _, report = dd.communicate()
    full, partial = map(int, re.search(r"(\d+)\+(\d+) records in", report).groups())
    assert dd.returncode == 0 and partial == 0, report
    with open(results, "a") as out:
        out.write("".join(json.dumps([dd.pid, None, c, "read", 3000 + 1000 * i, 1000]) + "\n" for i in range(full)))
    print("done", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
