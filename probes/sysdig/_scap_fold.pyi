# Types of the compiled module built from probes/sysdig/scap_fold.c (see there and sysdig_import._compiled_fold).
from collections.abc import Iterable
from typing import Any

def configure(
    open: int,
    close: int,
    read: int,
    write: int,
    seek: int,
    slot_ns: int,
    heatmap_offset_bytes: int,
    page_bytes: int,
    latency_bucket_starts: tuple[int, ...],
    none: str,
    other: str,
    file: str,
    /,
) -> None: ...

class Fold:
    def __init__(
        self, importer: Any, window_starts: list[int] | None, event_limit: int | None, memory_rows: int, /
    ) -> None: ...
    def fold(self, calls: Iterable[Any], slot_lag: int, move_every_slots: int, /) -> None: ...
    def export(self) -> list[tuple[Any, tuple[int, int, int, int, int], list[tuple[int, int, tuple[Any, ...]]]]]: ...
