"""What /proc tells of a process: its open files and sockets (proc_fds) and the mapped pages it
touched (mapped_pages), the file system of each device (mounts).

Part of probes/: may import what probes/ may (see probes/__init__.py)."""
