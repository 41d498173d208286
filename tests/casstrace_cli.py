"""casstrace as the tests start it: the command a user runs, in a fresh process."""

import subprocess
import sys
from pathlib import Path

# The console script pip wrote beside this Python: what a user's shell runs, start-up included.
CASSTRACE = [str(Path(sys.executable).parent / "casstrace")]


def casstrace(
    *args: object, timeout: float = 600, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`casstrace ARGS` run to its end, its output captured as text. env is the whole environment
    (None: the test's own); timeout only stops a hung command."""
    return subprocess.run(
        [*CASSTRACE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command says: `casstrace: error: WHAT (fix: HOW)`, and a non-zero exit."""
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstrace: error: ") and "(fix: " in lines[0], done.stderr
    return lines[0]
