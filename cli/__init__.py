"""The command line: a thin click layer, one module per command (main.py loads each on first use).

Holds: main.py (the command group and the one-line error for CasstraceError), one module per
command (capture, run, watch, report, traces, import, compare, sweep, demo, sandbox), what the
commands that end in a report share (output.py) and the checked option types (options.py).
May import: every other area (probes, traces, analyses, reports, node, sandbox); nothing imports cli.
"""
