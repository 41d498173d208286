"""Capture backends: what the kernel tells us about one process's I/O, written into a trace.

Holds: the capture protocol every backend implements and the per-window sources that ride along
(protocol.py), the backends registered once (backends.py), the one capture → trace routine
(recording.py); the bcc backend (capture.c, the BPF program; bcc_capture.py loads it, bcc_trace.py
turns its maps into trace rows; program.py, the one definition of the codes and records the BPF
program shares with Python), the sysdig backend (sysdig_capture.py and sysdig_tool.py live;
sysdig_import.py and scap_reader.py read .scap files), the mapped pages a process touched
(mapped_pages.py), async-profiler in a JVM and what it records (async_profiler.py, jfr.py,
java_stacks.py), the syscall tables (syscalls.py) and the /proc readers a capture needs (proc_fds.py,
mounts.py).
May import: casstrace.traces (to write a trace), errors, paths, phases, interrupts. Never analyses,
reports, node, sandbox or cli: a capture knows nothing of Cassandra queries or verdicts.
"""
