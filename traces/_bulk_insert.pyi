# Types of the compiled module built from traces/bulk_insert.c (see there and TraceWriter.add_events).
from collections.abc import Iterable, Sequence

def insert(path: str, table: str, columns: tuple[str, ...], rows: Iterable[Sequence[object]], /) -> None: ...
