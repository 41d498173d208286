"""A process whose file reads are known exactly, for the probe tests.

It reads one command per line on stdin and answers each with one JSON line on stdout, holding its
own accounting of every read it made: syscall, fd, offset, bytes asked and returned, thread. It
also reports /proc/self/io before and after, the kernel's own count (rchar, read_bytes).

  setup DIR   create DIR/a.bin (1 MiB) and DIR/b.bin (256 KiB), flushed to disk
  syscalls    read a.bin from disk with read + lseek (SET, CUR, END), pread, readv, preadv,
              preadv2, from the main thread and a second thread
  reuse       open a.bin, read, close; open b.bin on the same fd number, read
  mmap        read pages of b.bin through a MADV_RANDOM mapping after dropping it from the cache
  connect P   connect to 127.0.0.1:P, send 3000 bytes, receive 1234 (kept open until exit, as a
              client connection is)
  exit
"""

import ctypes
import json
import mmap
import os
import socket
import sys
import threading

A_SIZE, B_SIZE = 1 << 20, 256 << 10
MMAP_PAGES = (0, 3, 4, 17, 63)  # pages of b.bin touched through the mapping
SYS_PREADV, SYS_PREADV2 = 295, 327  # x86_64
LIBC = ctypes.CDLL(None, use_errno=True)


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def raw_vectored_read(number, fd, lengths, offset):
    """preadv/preadv2 as the syscall itself (libc picks either for os.preadv)."""
    buffers = [ctypes.create_string_buffer(length) for length in lengths]
    vectors = (IoVec * len(lengths))(*(IoVec(ctypes.cast(b, ctypes.c_void_p), len(b)) for b in buffers))
    got = LIBC.syscall(number, fd, vectors, len(lengths), ctypes.c_long(offset), 0, 0)
    if got < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return got


class Reader:
    def __init__(self):
        self.reads = []  # [syscall, path, fd, offset, requested, returned, tid]
        self.lseeks = []  # [path, fd, offset, whence, result]
        self.io_fd = os.open("/proc/self/io", os.O_RDONLY)
        self.lock = threading.Lock()
        self.connections = []

    def io(self) -> dict:
        text = os.pread(self.io_fd, 4096, 0).decode()  # one pread: its own bytes are known
        values = dict(line.split(": ") for line in text.splitlines())
        return {"rchar": int(values["rchar"]), "read_bytes": int(values["read_bytes"]), "length": len(text)}

    def record(self, syscall, path, fd, offset, requested, returned):
        with self.lock:
            self.reads.append([syscall, path, fd, offset, requested, returned, threading.get_native_id()])

    def lseek(self, path, fd, offset, whence):
        result = os.lseek(fd, offset, whence)
        self.lseeks.append([path, fd, offset, whence, result])
        return result

    def setup(self, directory):
        self.a, self.b = os.path.join(directory, "a.bin"), os.path.join(directory, "b.bin")
        for path, size in ((self.a, A_SIZE), (self.b, B_SIZE)):
            with open(path, "wb") as out:
                out.write(bytes(range(256)) * (size // 256))
                out.flush()
                os.fsync(out.fileno())
        return {"pid": os.getpid(), "a": self.a, "b": self.b}

    @staticmethod
    def drop(path):
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    def syscalls(self):
        self.drop(self.a)
        a = self.a
        fd = os.open(a, os.O_RDONLY)
        position = 0
        for offset, whence, length in (
            (0, os.SEEK_CUR, 1000),
            (40960, os.SEEK_SET, 4096),
            (8192, os.SEEK_CUR, 100),
            (-5000, os.SEEK_END, 8192),
            (123457, os.SEEK_SET, 70000),
        ):
            if (offset, whence) != (0, os.SEEK_CUR):
                position = self.lseek(a, fd, offset, whence)
            data = os.read(fd, length)
            self.record("read", a, fd, position, length, len(data))
            position += len(data)
        data = os.pread(fd, 16384, 300000)
        self.record("pread64", a, fd, 300000, 16384, len(data))
        position = self.lseek(a, fd, 500000, os.SEEK_SET)
        buffers = [bytearray(3000), bytearray(5000), bytearray(100)]
        got = os.readv(fd, buffers)
        self.record("readv", a, fd, position, 8100, got)
        buffers = [bytearray(4096), bytearray(12288)]
        got = os.preadv(fd, buffers, 700000)  # glibc issues preadv2 with this offset
        self.record("preadv2", a, fd, 700000, 16384, got)
        got = raw_vectored_read(SYS_PREADV, fd, (2048, 2048, 1000), 600000)
        self.record("preadv", a, fd, 600000, 2048 + 2048 + 1000, got)
        position = self.lseek(a, fd, 650000, os.SEEK_SET)
        got = raw_vectored_read(SYS_PREADV2, fd, (7000,), -1)  # -1: read at (and advance) the position
        self.record("preadv2", a, fd, position, 7000, got)

        def second_thread():
            for offset in (800000, 900000, 1040000):
                data = os.pread(fd, 20000, offset)
                self.record("pread64", a, fd, offset, 20000, len(data))

        thread = threading.Thread(target=second_thread)
        thread.start()
        thread.join()
        os.close(fd)
        return {"fd": fd}

    def reuse(self):
        fd_a = os.open(self.a, os.O_RDONLY)
        data = os.read(fd_a, 3333)
        self.record("read", self.a, fd_a, 0, 3333, len(data))
        os.close(fd_a)
        fd_b = os.open(self.b, os.O_RDONLY)
        data = os.pread(fd_b, 7777, 1000)
        self.record("pread64", self.b, fd_b, 1000, 7777, len(data))
        os.close(fd_b)
        return {"fd_a": fd_a, "fd_b": fd_b}

    def mmap(self):
        self.drop(self.b)
        fd = os.open(self.b, os.O_RDONLY)
        with mmap.mmap(fd, B_SIZE, prot=mmap.PROT_READ) as mapping:
            mapping.madvise(mmap.MADV_RANDOM)
            total = sum(mapping[page * 4096] for page in MMAP_PAGES)
        os.close(fd)
        return {"pages": list(MMAP_PAGES), "checksum": total}

    def connect(self, port):
        connection = socket.create_connection(("127.0.0.1", int(port)))
        self.connections.append(connection)
        connection.sendall(b"q" * 3000)
        received = 0
        while received < 1234:
            received += len(connection.recv(1234 - received))
        host, port = connection.getsockname()
        local = f"{host}:{port}"
        return {"local": local, "sent": 3000, "received": received}

    def serve(self):
        for line in sys.stdin:
            command, *arguments = line.split()
            if command == "exit":
                return
            self.reads, self.lseeks = [], []
            before = self.io()
            answer = getattr(self, command)(*arguments)
            after = self.io()
            answer.update(io_before=before, io_after=after, reads=self.reads, lseeks=self.lseeks)
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    Reader().serve()
