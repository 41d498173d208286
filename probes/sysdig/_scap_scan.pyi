# Types of the compiled module built from probes/sysdig/scap_scan.c (see there and scap_reader._compiled_scan).
from typing import Any

def configure(
    io_events: dict[int, tuple[int, str, bool, int, tuple[int, ...], tuple[int, ...]]],
    io_enters: dict[int, tuple[int, ...]],
    tracked: set[int],
    opens: set[int],
    sends_with_tuple: set[int],
    execves: set[int],
    event_blocks: dict[int, tuple[bool, bool]],
    close_kind: int,
    state_only: int,
    large_payload: int,
    scap_error: type[Exception],
) -> None: ...
def scan(
    reader: Any, buffer: bytes, at: int, out: list[Any], pending: dict[int, tuple[Any, ...]], /
) -> tuple[int, int, bool]: ...
