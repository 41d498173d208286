"""What /proc says about a process: its descriptors, their positions, its sockets' addresses, its
mapped files and thread names. The BPF program sees only fd numbers and (device, inode) pairs;
these snapshots turn them into paths and connections.

Every reader tolerates the process (or one fd) vanishing underneath it: a process under capture
keeps opening and closing files.
"""

import ipaddress
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from casstrace.redaction import redact_command


@dataclass
class Descriptor:
    """What one fd referred to: a file (path, dev, inode), a socket or a pipe."""

    path: str
    kind: str  # 'file' | 'socket' | 'pipe' | 'other' | 'unknown'
    dev: int | None = None  # st_dev as userspace sees it
    inode: int | None = None
    position: int | None = None  # file position from fdinfo, when it was read
    local_addr: str | None = None
    remote_addr: str | None = None
    extra: dict = field(default_factory=dict)
    local_family: str | None = None  # 'unix' | 'netlink': a socket with no TCP address to look for

    @property
    def socket_inode(self) -> int | None:
        if self.kind == "socket" and self.path.startswith("socket:["):
            return int(self.path[len("socket:[") : -1])
        return self.extra.get("socket_inode")


def kind_of_link(link: str) -> str:
    """The kind of an fd from its /proc/PID/fd symlink target."""
    if link.startswith("socket:["):
        return "socket"
    if link.startswith("pipe:["):
        return "pipe"
    if link.startswith("/"):
        return "file"
    return "other"


FD_READ_TRIES = 3


def describe_fd(pid: int, fd: int, with_position: bool = True) -> Descriptor | None:
    """The fd as /proc shows it now, or None when it is closed (or the process is gone, or it kept
    being reused while read)."""
    base = f"/proc/{pid}/fd/{fd}"
    # The link and the stat are two reads: the fd may be closed and reused in between, which gave
    # one file's path another's inode. The link read again after the stat tells.
    for _ in range(FD_READ_TRIES):
        try:
            link = os.readlink(base)
            stat = os.stat(base)
            if os.readlink(base) == link:
                break
        except OSError:
            return None
    else:
        return None
    kind = kind_of_link(link)
    # A deleted file keeps its inode; its link reads '/path (deleted)'.
    descriptor = Descriptor(path=link, kind=kind, dev=stat.st_dev, inode=stat.st_ino)
    if with_position and kind == "file":
        descriptor.position = fd_position(pid, fd)
    return descriptor


def fd_position(pid: int, fd: int) -> int | None:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as info:
            for line in info:
                if line.startswith("pos:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def open_fds(pid: int) -> list[int]:
    """The numbers of the process's open fds (none when it is gone)."""
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return []


def fd_snapshot(pid: int) -> dict[int, Descriptor]:
    """Every open fd of the process."""
    snapshot = {}
    for fd in open_fds(pid):
        descriptor = describe_fd(pid, fd)
        if descriptor is not None:
            snapshot[fd] = descriptor
    return snapshot


def proc_net_host(hexed: str) -> str:
    """An address as /proc/net/tcp{,6} writes it (32-bit words in host order, little endian here) in
    its usual spelling; an IPv4-mapped IPv6 address as plain IPv4."""
    raw = bytes.fromhex(hexed)
    address = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
    if isinstance(address, ipaddress.IPv6Address):
        return str(address.ipv4_mapped or address)
    return str(address)


def _address(hex_address: str) -> str:
    """'0100007F:2382' (as /proc/net/tcp writes it) -> '127.0.0.1:9090'; IPv6 hosts in brackets."""
    host_hex, port_hex = hex_address.split(":")
    host, port = proc_net_host(host_hex), int(port_hex, 16)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def net_table_rows(pid: int, tables: Iterable[str], proc: Path = Path("/proc")) -> Iterator[tuple[str, list[str]]]:
    """(table, its fields) of every row of the process's network namespace's /proc/PID/net/TABLE
    tables, headers left out; a table the kernel does not have (no IPv6) gives none."""
    for table in tables:
        try:
            with open(proc / str(pid) / "net" / table) as lines:
                next(lines, None)
                for line in lines:
                    yield table, line.split()
        except OSError:
            continue


def tcp_sockets(pid: int) -> dict[int, tuple[str, str]]:
    """socket inode -> (local 'ip:port', remote 'ip:port') for the process's network namespace."""
    return {
        int(fields[9]): (_address(fields[1]), _address(fields[2])) for _, fields in net_table_rows(pid, ("tcp", "tcp6"))
    }


# The field of a unix and a netlink table row that holds the socket's inode.
_LOCAL_INODE_FIELD = {"unix": 6, "netlink": 9}


def local_socket_families(pid: int) -> dict[int, str]:
    """socket inode -> 'unix' or 'netlink' for the process's network namespace. These tables read in
    a fraction of a millisecond, where each TCP table takes ~5 ms on a large machine (the kernel
    walks every bucket of its hash): a socket found here need not be looked for there."""
    return {
        int(fields[_LOCAL_INODE_FIELD[table]]): table
        for table, fields in net_table_rows(pid, _LOCAL_INODE_FIELD)
        if len(fields) > _LOCAL_INODE_FIELD[table]
    }


def sockaddr_address(raw: bytes) -> str | None:
    """'ip:port' of a struct sockaddr_in / sockaddr_in6 as the process passed it, else None."""
    family = int.from_bytes(raw[:2], "little")
    port = int.from_bytes(raw[2:4], "big")
    if family == 2:  # AF_INET
        return f"{ipaddress.IPv4Address(raw[4:8])}:{port}"
    if family == 10:  # AF_INET6
        address = ipaddress.IPv6Address(raw[8:24])
        if address.ipv4_mapped is not None:
            return f"{address.ipv4_mapped}:{port}"
        return f"[{address}]:{port}"
    return None


def name_socket(descriptor: Descriptor, sockets: dict[int, tuple[str, str]]) -> None:
    """Give a socket descriptor its TCP addresses and a readable path: from the kernel's table while
    it lists the socket, else from the peer address seen at connect/accept."""
    inode = descriptor.socket_inode
    if inode is not None and inode in sockets:
        local, remote = sockets[inode]
        descriptor.extra["socket_inode"] = inode
        descriptor.local_addr = local
        if remote.endswith(":0"):  # listening, or not connected yet
            descriptor.path = f"tcp {local} (not connected)"
            return
        descriptor.remote_addr = remote
    if descriptor.remote_addr is not None:
        descriptor.path = f"tcp {descriptor.local_addr or '?'}->{descriptor.remote_addr}"


def mapped_files(pid: int) -> dict[tuple[int, int], str]:
    """(st_dev, inode) -> path of every file the process has mapped."""
    mapped = {}
    try:
        with open(f"/proc/{pid}/maps") as lines:
            for line in lines:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or not fields[5].startswith("/"):
                    continue
                major, minor = (int(part, 16) for part in fields[3].split(":"))
                mapped[(os.makedev(major, minor), int(fields[4]))] = fields[5].rstrip("\n")
    except OSError:
        pass
    return mapped


def files_under(pid: int, directories: Iterable[str], wanted: set[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """(st_dev, inode) -> path for the wanted files found under the directories, all paths as the
    process sees them (see in_root)."""
    found: dict[tuple[int, int], str] = {}
    for directory in directories:
        walked = in_root(pid, directory)
        for root, _dirs, names in os.walk(walked):
            for name in names:
                path = os.path.join(root, name)
                try:
                    stat = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                key = (stat.st_dev, stat.st_ino)
                if key in wanted:
                    found[key] = directory + path[len(walked) :]
                    if len(found) == len(wanted):
                        return found
    return found


def user_dev(kernel_dev: int) -> int:
    """The page cache tracepoint reports s_dev in the kernel's encoding (major << 20 | minor)."""
    return os.makedev(kernel_dev >> 20, kernel_dev & ((1 << 20) - 1))


def thread_ids(pid: int) -> list[int]:
    """The process's threads now ([] when it is gone)."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def thread_names(pid: int) -> dict[int, str]:
    names: dict[int, str] = {}
    for tid in thread_ids(pid):
        try:
            names[tid] = Path(f"/proc/{pid}/task/{tid}/comm").read_text().rstrip("\n")
        except OSError:
            continue
    return names


def process_description(pid: int) -> str:
    """The command line, fit for a trace (casstrace.redaction), or the comm when the command line is
    unreadable (kernel threads, zombies)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = redact_command([word.decode(errors="replace") for word in words if word])
        if command:
            return command
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return f"pid {pid}"


def cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def in_root(pid: int, path: str) -> str:
    """A path as process `pid` names it (its mount namespace, its root directory: a container's
    /var/lib/cassandra), as this process can open it: through /proc/PID/root when the process sees
    another file tree than ours, else as it is. Traces keep the process's own names."""
    if not path.startswith("/"):
        return path
    return root_prefix(pid) + path


def root_prefix(pid: int) -> str:
    """What in_root puts in front of an absolute path of process `pid`: '' when it sees our file
    tree, else /proc/PID/root. Four syscalls: a loop over thousands of paths asks once."""
    return "" if _sees_our_tree(pid) else f"/proc/{pid}/root"


def _sees_our_tree(pid: int) -> bool:
    try:
        same_namespace = os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt")
        root, ours = os.stat(f"/proc/{pid}/root"), os.stat("/")
    except OSError:  # gone, or not ours to look into: its paths are all we have
        return True
    return same_namespace and (root.st_dev, root.st_ino) == (ours.st_dev, ours.st_ino)


def stat_in_root(pid: int, path: str) -> os.stat_result:
    """os.stat of a path as process `pid` names it (see in_root)."""
    return os.stat(in_root(pid, path))


def size_of(descriptor: Descriptor, pid: int, root: str | None = None) -> int | None:
    """The file's size now, if the path (as process `pid` names it) still names the same inode.
    `root`: the process's root_prefix, when the caller looked it up once for many files."""
    if descriptor.kind != "file":
        return None
    return size_if_same(pid, descriptor.path, descriptor.dev, descriptor.inode, root)


def size_if_same(pid: int, path: str, dev: int | None, inode: int | None, root: str | None = None) -> int | None:
    """The size of `path` (as process `pid` names it) now, if it still names the inode (dev, inode).
    `root`: as for size_of."""
    try:
        stat = os.stat((root_prefix(pid) if root is None else root) + path if path.startswith("/") else path)
    except OSError:
        return None
    return stat.st_size if (stat.st_dev, stat.st_ino) == (dev, inode) else None
