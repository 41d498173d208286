"""Holds the tracepoints of `casstrace run`'s capture with an idle program until its standard input
is closed (bpf_programs.TracepointHolder).

    python tracepoint_holder.py

Prints `held` once the program is compiled and attached (it captures no process), then waits; on
end of input it detaches the program and exits.
"""

import sys

from casstrace.probes.backends import DEFAULT_BACKEND, backend, run_thread_slot_ns
from casstrace.probes.bcc.bcc_capture import KeptProgram


def main() -> None:
    chosen = backend(DEFAULT_BACKEND)
    program = chosen.prepare(run_thread_slot_ns(chosen.capabilities), kept=True)  # what `run` compiles
    assert isinstance(program, KeptProgram)
    with program:
        program.take()  # once compiled: loaded and attached
        print("held", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
