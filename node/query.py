"""Running the target query and measuring what it returned.

Payload bytes are the serialized size of the returned values: the sum of the lengths of every cell
in every row, exactly as the node sent them (a NULL counts 0), summed over all pages. They are
counted on the raw protocol bytes, before the driver decodes anything, by a result message that
also folds each row into a digest of the returned data. The digest stays in memory: it lets two
queries be checked for returning the same data (`casstrace compare`), and is never stored, like
the values themselves.

The digest is order-insensitive and multiset-sensitive: each row hashes to 256 bits (cells
length-prefixed, so cell boundaries count), and an execution's digest is the sum of its rows'
hashes modulo 2**256. Two tables holding the same rows in different orders give equal digests;
a missing, extra or changed row changes it.
"""

import hashlib
import re
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, ClassVar

from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.cluster import NoHostAvailable, ResultSet, Session
from cassandra.protocol import (
    ErrorMessage,
    ExecuteMessage,
    ResultMessage,
    SyntaxException,
    _ProtocolHandler,
    read_value,
)
from cassandra.query import BoundStatement, PreparedStatement

from casstrace.errors import CasstraceError
from casstrace.node.connection import answered_in_time
from casstrace.node.leaves import DIGEST_MODULUS, LeafDigest, RowShape
from casstrace.traces.meta import QueryTraceSession


class MeasuredRows(list):
    """One page of decoded rows, with the size and digest of the raw values the node sent."""

    payload_bytes = 0
    digest_sum = 0
    largest_row_bytes = 0
    decode_ns = 0  # casstrace's own reading, measuring and decoding of the page, in pure Python
    column_names: list[str] = []  # noqa: RUF012 (set per page)


class MeasuringResultMessage(ResultMessage):
    """A RESULT message that measures raw cell values as it reads them."""

    _measured: MeasuredRows
    parsed_rows: list[list[bytes | None]]

    def recv_results_rows(self, f: BinaryIO, *args: Any) -> None:
        started = time.perf_counter_ns()
        self._measured = MeasuredRows()
        super().recv_results_rows(f, *args)
        self._measured.extend(self.parsed_rows)
        self.parsed_rows = self._measured
        self._measured.column_names = list(self.column_names or [])
        self._measured.decode_ns = time.perf_counter_ns() - started

    def recv_row(
        self, f: BinaryIO, colcount: int
    ) -> list[bytes | None]:  # the base class calls self.recv_row once per row
        row = [read_value(f) for _ in range(colcount)]
        row_hash = hashlib.blake2b(digest_size=32)
        row_bytes = 0
        for value in row:
            if value is None:
                row_hash.update(struct.pack(">i", -1))
            else:
                row_hash.update(struct.pack(">i", len(value)))
                row_hash.update(value)
                row_bytes += len(value)
        self._measured.payload_bytes += row_bytes
        self._measured.largest_row_bytes = max(self._measured.largest_row_bytes, row_bytes)
        self._measured.digest_sum = (
            self._measured.digest_sum + int.from_bytes(row_hash.digest(), "big")
        ) % DIGEST_MODULUS
        return row


class MeasuringProtocolHandler(_ProtocolHandler):
    """The driver's pure-Python protocol handler with the measuring RESULT message.
    (The Cython handler decodes rows in C and never shows the raw values.) It also counts the bytes
    of every EXECUTE request it encodes: the frame, header and body (what a write sends the node;
    protocol v5 wraps frames in checksummed segments of its own, 10 bytes each, not counted)."""

    message_types_by_opcode: ClassVar[dict[int, type]] = {
        **_ProtocolHandler.message_types_by_opcode,
        MeasuringResultMessage.opcode: MeasuringResultMessage,
    }
    execute_request_bytes: ClassVar[int] = 0  # since the process started; execute() takes differences

    @classmethod
    def encode_message(
        cls, msg: Any, stream_id: int, protocol_version: int, compressor: Any, allow_beta_protocol_version: bool
    ) -> bytes:
        frame: bytes = super().encode_message(msg, stream_id, protocol_version, compressor, allow_beta_protocol_version)
        if msg.opcode == ExecuteMessage.opcode:
            MeasuringProtocolHandler.execute_request_bytes += len(frame)
        return frame


def keep_page(column_names: list[str], rows: MeasuredRows) -> MeasuredRows:
    """Row factory that hands the measured page through unchanged."""
    return rows


@dataclass
class QueryResult:
    latency_s: float
    rows: int
    payload_bytes: int
    pages: int
    digest: str = field(repr=False)  # hex; memory only
    result_set: ResultSet | None = field(default=None, repr=False)
    coordinator: str | None = None  # the address of the node that answered (its first page)
    decode_ns: int = 0  # of latency_s, casstrace's own decoding of the pages (MeasuringResultMessage)
    leaf_digest: str | None = field(default=None, repr=False)  # node.leaves, when asked for; memory only
    request_bytes: int = 0  # the EXECUTE requests it sent (MeasuringProtocolHandler)


def server_message(error: Exception) -> str:
    """The message the node sent, without the driver's wrapping
    ('Error from server: code=2200 [Invalid query] message="..."', maybe followed by info={...})."""
    message = getattr(error, "message", None) or str(error)
    wrapped = re.search(r'message="(.*)"(?:\s+info=\{[^{}]*\})?\s*$', message, re.DOTALL)
    return (wrapped.group(1) if wrapped else message).strip()


def execution_failure(error: Exception) -> str:
    """Why an execution failed, as the node said it: 'Unavailable: Cannot achieve consistency level
    THREE' rather than the driver's NoHostAvailable wrapping of it."""
    per_host = list(getattr(error, "errors", None) or {})
    if isinstance(error, NoHostAvailable) and per_host:
        error = error.errors[per_host[0]]
    return f"{type(error).__name__}: {server_message(error)}"


def prepare(session: Session, query: str, bind_markers: bool = False) -> PreparedStatement:
    """Check the query on the node (it parses it and resolves keyspace and tables) without running it.
    `bind_markers`: the query may have some (a write, whose values casstrace generates)."""
    try:
        with answered_in_time(session, "the query's preparation"):
            prepared = session.prepare(query)
    except SyntaxException as error:
        raise CasstraceError(
            f"the node rejected the query: {server_message(error)}", "fix the CQL (try it in cqlsh)"
        ) from None
    except (ErrorMessage, InvalidRequest) as error:
        raise CasstraceError(
            f"the node rejected the query: {server_message(error)}",
            "check the keyspace and table names (give --keyspace or qualify the table as keyspace.table)",
        ) from None
    if prepared.column_metadata and not bind_markers:
        raise CasstraceError(
            f"the query has {len(prepared.column_metadata)} bind marker(s)",
            "write the values into the query instead of ?",
        )
    return prepared


def _first_page(
    session: Session,
    prepared: PreparedStatement,
    consistency: str,
    page_size: int | None,
    trace: bool = False,
    timeout_s: float | None = None,
    values: Sequence[Any] | None = None,
) -> tuple[ResultSet, Any]:
    """The result set at its first page, and the future that fetched it (within `timeout_s`, when
    given, else the session's request timeout). `values`: the bind markers' (a write's)."""
    statement = BoundStatement(
        prepared, consistency_level=ConsistencyLevel.name_to_value[consistency], fetch_size=page_size or None
    )
    if values is not None:
        statement.bind(values)
    timeout = {"timeout": timeout_s} if timeout_s is not None else {}
    future = session.execute_async(statement, trace=trace, **timeout)
    future.row_factory = keep_page
    return future.result(), future


def first_page(
    session: Session, prepared: PreparedStatement, consistency: str, page_size: int, timeout_s: float
) -> MeasuredRows:
    """The query's first page of `page_size` rows, measured, within `timeout_s`; the rest is not fetched."""
    rows: MeasuredRows = _first_page(session, prepared, consistency, page_size, timeout_s=timeout_s)[0].current_rows
    return rows


def execute(
    session: Session,
    prepared: PreparedStatement,
    consistency: str = "ONE",
    page_size: int | None = 5000,
    trace: bool = False,
    shape: RowShape | None = None,
    values: Sequence[Any] | None = None,
) -> QueryResult:
    """Run the prepared query once and fetch every page. The session must use
    MeasuringProtocolHandler. page_size None or 0: the node returns everything in one page. `shape`:
    also the digest of the result's leaf values per row key (node.leaves), for a refactor's check."""
    by_leaf = LeafDigest(shape) if shape is not None else None
    sent_before = MeasuringProtocolHandler.execute_request_bytes
    started = time.perf_counter()
    result, future = _first_page(session, prepared, consistency, page_size, trace, values=values)
    coordinator = getattr(future.coordinator_host, "address", None)
    # Each page is measured and let go as the next one comes: the result is held one page at a time.
    rows = payload_bytes = digest_sum = decode_ns = 0
    pages = 0
    while True:
        page = result.current_rows
        pages += 1
        rows += len(page)
        payload_bytes += getattr(page, "payload_bytes", 0)
        decode_ns += getattr(page, "decode_ns", 0)
        if by_leaf is not None:
            by_leaf.add(getattr(page, "column_names", []), page)
        digest_sum = (digest_sum + getattr(page, "digest_sum", 0)) % DIGEST_MODULUS
        del page
        if not result.has_more_pages:
            break
        result.fetch_next_page()
    latency = time.perf_counter() - started
    return QueryResult(
        latency_s=latency,
        rows=rows,
        payload_bytes=payload_bytes,
        pages=pages,
        digest=f"{digest_sum:064x}",
        result_set=result,
        coordinator=str(coordinator) if coordinator is not None else None,
        decode_ns=decode_ns,
        leaf_digest=by_leaf.digest() if by_leaf is not None else None,
        request_bytes=MeasuringProtocolHandler.execute_request_bytes - sent_before,
    )


def query_traces(result: QueryResult, max_wait_s: float = 10.0) -> list[QueryTraceSession]:
    """Cassandra's own trace of a traced execution, one session per page: what the node says it did
    (sstables touched, live rows and tombstone cells read). Activities describe work, not values."""
    traces: list[QueryTraceSession] = []
    if result.result_set is None:
        return traces
    for trace in result.result_set.get_all_query_traces(max_wait_sec_per=max_wait_s):
        traces.append(
            {
                "session_id": str(trace.trace_id),
                "duration_us": int(trace.duration.total_seconds() * 1_000_000) if trace.duration else None,
                "events": [
                    {
                        "activity": event.description,
                        "source_elapsed_us": int(event.source_elapsed.total_seconds() * 1_000_000)
                        if event.source_elapsed is not None
                        else None,
                        "thread": event.thread_name,
                        "source": str(event.source) if event.source is not None else None,
                    }
                    for event in trace.events
                ],
            }
        )
    return traces
