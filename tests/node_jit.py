"""Which JIT the nodes the suite starts run with. Most run C1 only (QUICK_JIT, through the sandbox's
JVM_EXTRA_OPTS, set for the whole worker by conftest): on a machine the two workers keep busy, a start
takes about half the CPU. The nodes whose modules measure a client's rate or the node's CPU (the
workers' test nodes, the 4.1 node, the cluster) start inside full_jit(), as a stock node runs."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

from casstrace.sandbox.control import JVM_EXTRA_OPTS

QUICK_JIT = "-XX:TieredStopAtLevel=1"


@contextmanager
def full_jit() -> Iterator[dict[str, str]]:
    """Within it, a node started in this process, or by a command given the environment it yields,
    runs both JIT compilers."""
    quick = os.environ.pop(JVM_EXTRA_OPTS, None)
    try:
        yield dict(os.environ)
    finally:
        if quick is not None:
            os.environ[JVM_EXTRA_OPTS] = quick
