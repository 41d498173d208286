"""The ranges of the numbers `casstrace import` takes, without click: cli/options.py makes click's
types of them, and the import's fast path (cli/import_scap.py) checks them itself, as click would."""

PID_RANGE = (1, 2**22)  # the kernel's largest pid_max
STREAM_LIMIT_RANGE = (1, 100_000_000)  # per-call records kept before the trace is written
