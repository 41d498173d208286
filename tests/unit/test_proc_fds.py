"""probes/proc/proc_fds.py: an fd described from /proc is one file's path with that same file's inode,
even when the process closes and reuses the fd number while it is read."""

import os

from casstrace.probes.proc import proc_fds


def test_an_fd_reused_between_the_link_and_the_stat_is_read_again(tmp_path, monkeypatch):
    """The race a loaded machine met: the link read while the fd was a.bin, the stat once it was
    b.bin (a.bin's path with b.bin's inode in the trace). The link is read again after the stat."""
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    b_stat = b.stat()
    links = iter([str(a), str(b), str(b), str(b)])  # a; reused as b before the second read; then b throughout
    monkeypatch.setattr(proc_fds.os, "readlink", lambda _path: next(links))
    monkeypatch.setattr(proc_fds.os, "stat", lambda _path: b_stat)
    described = proc_fds.describe_fd(os.getpid(), 99, with_position=False)
    assert described is not None
    assert (described.path, described.inode) == (str(b), b_stat.st_ino)


def test_an_fd_that_keeps_changing_is_not_described(monkeypatch, tmp_path):
    names = iter(str(tmp_path / f"f{n}") for n in range(2 * proc_fds.FD_READ_TRIES))
    monkeypatch.setattr(proc_fds.os, "readlink", lambda _path: next(names))
    directory = tmp_path.stat()
    monkeypatch.setattr(proc_fds.os, "stat", lambda _path: directory)
    assert proc_fds.describe_fd(os.getpid(), 99, with_position=False) is None


def test_an_open_fd_is_described_with_its_own_inode(tmp_path):
    path = tmp_path / "held.bin"
    path.write_bytes(b"x" * 10)
    with path.open("rb") as held:
        described = proc_fds.describe_fd(os.getpid(), held.fileno())
    assert described is not None
    assert (described.path, described.kind, described.inode) == (str(path), "file", path.stat().st_ino)
