"""The mount table read by device: the file system of each mounted path."""

import os

from casstrace.probes.proc import mounts


def test_each_mounted_device_has_its_file_system_type():
    types = mounts.filesystem_types(os.getpid())
    assert types[os.stat("/proc").st_dev] == "proc"
    assert types[os.stat("/sys").st_dev] == "sysfs"


def test_a_process_gone_has_no_mounts():
    assert mounts.filesystem_types(2**22 + 1) == {}  # above pid_max's ceiling: never a process
