"""The file system of each device a process sees, from its mount table (/proc/PID/mountinfo): a
figure only some file systems report (ext4's writeback) is told apart from a 0 by it."""

import os


def filesystem_types(pid: int) -> dict[int, str]:
    """st_dev (as userspace sees it) -> file system type ('ext4', 'tmpfs', ...) of every mount in the
    process's mount namespace; {} when the process is gone."""
    try:
        with open(f"/proc/{pid}/mountinfo") as mountinfo:
            lines = mountinfo.readlines()
    except OSError:
        return {}
    types = {}
    for line in lines:
        # 'id parent major:minor root mount-point options [optional fields] - type source super-options'
        mount, separator, filesystem = line.partition(" - ")
        fields = mount.split()
        if not separator or len(fields) < 3 or not filesystem.split():
            continue
        major, _, minor = fields[2].partition(":")
        types[os.makedev(int(major), int(minor))] = filesystem.split()[0]
    return types
