"""sysdig and its .scap captures: the reader (scap_reader, with the compiled scap_scan.c and
scap_fold.c), the import into a trace (sysdig_import), the sysdig backend (sysdig_capture) and the
sysdig program itself (sysdig_tool).

Part of probes/: may import what probes/ may (see probes/__init__.py)."""
