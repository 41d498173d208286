"""The bcc backend: capture.c (the BPF program), its loader (bcc_capture), the records and codes it
shares with Python (program), the x86-64 syscall table (syscalls), and the trace it builds (bcc_trace).

Part of probes/: may import what probes/ may (see probes/__init__.py)."""
