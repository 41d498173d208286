"""Where casstrace may write a file: the one policy every trace and report goes through.

casstrace never destroys a file. An output path that exists is refused unless the user said --force,
and even then only a regular file is replaced: never a directory, a device, a FIFO, a socket or a
symbolic link (nor what it points to). No command ever writes over one of its inputs (the trace a
report is made from, the capture being imported, a --file, a command's own program or arguments...):
the same file reached through ./, symbolic or hard links included. Files are written whole or not at
all: into a hidden `.NAME.partial` beside the target, then renamed over it (atomic on one
filesystem), and the rename checks the target again, so a device that appeared at the path in the
meantime is refused too.

TraceWriter (traces/writer.py) and reports.write use these functions; commands check their
paths up front with check_output, so that a refusal comes before any work.
"""

import errno
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from casstrace.errors import CasstraceError

FORCE_FIX = "add --force to replace it, or choose another path"


PARTIAL_SUFFIX = ".partial"


def partial_path(target: Path) -> Path:
    """The hidden file a target is written into before it is renamed into place."""
    return target.with_name(f".{target.name}{PARTIAL_SUFFIX}")


def target_of(partial: Path) -> Path:
    """The file a partial file is (was) written for: partial_path's inverse."""
    return partial.with_name(partial.name[1 : -len(PARTIAL_SUFFIX)])


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def same_file(path: str | os.PathLike, other: str | os.PathLike) -> bool:
    """Whether two paths name one file: the same path once resolved, or the same device and inode
    (a hard link, or a symbolic link to it)."""
    try:
        return Path(path).resolve() == Path(other).resolve() or os.path.samefile(path, other)
    except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop
        return False


def check_output(path: str | os.PathLike, force: bool, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Refuse (CasstraceError) to write at `path` when that would destroy something: one of the
    command's `inputs` (or the partial file it is written through), anything that is not a regular
    file, or an existing file without --force."""
    path = Path(path)
    for source in inputs:
        if same_file(path, source):
            named = "" if Path(source) == path else f" ({source}, by another name)"
            raise CasstraceError(
                f"refusing to write over {path}: it is one of this command's inputs{named}",
                "give the output another path",
            )
        if same_file(partial_path(path), source):
            raise CasstraceError(
                f"refusing to write over {path}: it is written through {partial_path(path)}, one of "
                "this command's inputs",
                "give the output another path",
            )
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise CasstraceError(f"cannot write {path} ({error.strerror})", "choose a writable path") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise CasstraceError(
            f"refusing to write over {path}: it is {_kind(mode)}, and casstrace replaces nothing but regular files",
            "choose another path",
        )
    if mode is not None and not force:
        raise CasstraceError(f"refusing to write over {path}: the file exists", FORCE_FIX)
    _check_writable(path)
    return path


def numbered(path: Path, number: int) -> Path:
    """Output `number` (from 1) of the series named after `path`: NAME-0001.SUFFIX beside NAME.SUFFIX."""
    return path.with_name(f"{path.stem}-{number:04d}{path.suffix}")


def in_series(series: Path, path: str | os.PathLike) -> bool:
    """Whether `path` is, or may become, one of the numbered outputs of `series` (NAME-0002.trace,
    NAME-0002.json, NAME-0002.report.html: any number, any suffix), in the same directory."""
    path = Path(path)
    same_directory = path.parent.resolve() == series.parent.resolve()
    return same_directory and re.fullmatch(rf"{re.escape(series.stem)}-\d{{4,}}(?:\..*)?", path.name) is not None


def check_series(series: Path, force: bool) -> None:
    """Refuse (CasstraceError) to start a series of outputs NAME-0001.*, NAME-0002.* ... beside `series`
    when any of them is there already: what is not a regular file always, an existing file without
    --force. Checked before any work, so that no later output of the series is refused halfway."""
    try:
        names = [entry.name for entry in os.scandir(series.parent)]
    except FileNotFoundError:
        return  # the writer makes the directory: nothing in it yet
    except OSError as error:
        raise CasstraceError(f"cannot write in {series.parent} ({error.strerror})", "choose a writable path") from None
    for name in sorted(names):
        path = series.with_name(name)
        if not in_series(series, path):
            continue
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise CasstraceError(
                f"refusing to start: {path} is {_kind(mode)}, where this command writes its numbered outputs "
                f"({numbered(series, 1).name} ...)",
                "remove it, or choose another --out",
            )
        if not force:
            raise CasstraceError(
                f"refusing to start: {path} exists, where this command writes its numbered outputs "
                f"({numbered(series, 1).name} ...)",
                "add --force to replace them, or choose another --out",
            )


def _check_writable(path: Path) -> None:
    """Create and remove a file beside `path`, so that a directory where nothing can be written
    (/proc, a read-only mount, an immutable directory: even root is refused there) is said now,
    before any work, rather than after a capture. A missing directory is left to the writer, which
    makes it."""
    if not path.parent.is_dir():
        return
    probe = path.with_name(f".{path.name}.probe-{os.getpid()}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        os.unlink(probe)
    except OSError as error:
        raise CasstraceError(f"cannot write {path} ({error.strerror})", "choose a writable path") from None


def move_into_place(partial: Path, target: Path, force: bool, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Rename the whole `partial` file to `target`, under check_output's rules, checked again now."""
    check_output(target, force, inputs)
    os.replace(partial, target)


def write_text(path: str | os.PathLike, text: str, force: bool, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Write `text` to `path` whole or not at all, under check_output's rules."""
    inputs = tuple(inputs)  # checked now and again at the rename
    path = check_output(path, force, inputs)
    partial = partial_path(path)
    try:
        partial.unlink(missing_ok=True)  # a stale one; 'x' below never follows a link planted there
        with open(partial, "x", encoding="utf-8") as file:
            file.write(text)
        move_into_place(partial, path, force, inputs)
    except OSError as error:
        if error.errno == errno.ENOSPC:
            raise disk_full(path) from None
        raise CasstraceError(f"cannot write {path} ({error.strerror})", "choose a writable path") from None
    finally:
        partial.unlink(missing_ok=True)
    return path


def disk_full(path: Path) -> CasstraceError:
    """What to say when the filesystem a file was being written to filled up (its partial file is gone)."""
    directory = path.parent.resolve()
    return CasstraceError(
        f"the disk is full: no room left in {directory} to write {path.name} (nothing was kept)",
        f"free space in {directory}, or write to another filesystem",
    )
