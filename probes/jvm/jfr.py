"""Reading the stack samples out of a JDK Flight Recorder file, as async-profiler writes them.

A JFR file is a series of chunks. Each chunk has a fixed header, a metadata event that describes
every type (its fields, in order, and which of them refer to a constant pool), constant pools
(threads, stack traces, methods, classes, symbols ...) and the events themselves; with the
'compressed integers' feature every int and long is a LEB128 varint. The reader follows the
metadata instead of hard-coding layouts, so a field async-profiler adds in a later version is
skipped, not misread. Only what casstrace needs comes out: per sample its event type, time,
thread and stack (frame names, root first).
"""

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casstrace.errors import CasstraceError

MAGIC = b"FLR\0"
HEADER = struct.Struct(
    ">4sHHqqqqqqqi"
)  # magic, major, minor, size, cp, meta, startNanos, duration, startTicks, tps, features
COMPRESSED_INTS = 1
METADATA_EVENT, CONSTANT_POOL_EVENT = 0, 1
SAMPLE_EVENTS = ("jdk.ExecutionSample", "profiler.WallClockSample")
# async-profiler's frame types whose method has no class: native, VM and kernel code.
CLASSLESS_FRAME_TYPES = {"Native", "C++", "Kernel"}


@dataclass(frozen=True)
class Sample:
    event: str  # 'jdk.ExecutionSample' (the execution event) | 'profiler.WallClockSample'
    ts_ns: int  # on the clock the recording used (clock=monotonic: CLOCK_MONOTONIC)
    tid: int  # the OS thread id
    thread: str
    stack: tuple[str, ...]  # frame names, root first
    state: str | None  # thread state of a wall-clock sample ('STATE_RUNNABLE', ...)
    weight: int  # samples this record stands for (wall clock batches idle samples)


@dataclass
class _Field:
    name: str
    type_id: int
    constant_pool: bool
    array: bool


@dataclass
class _Type:
    name: str
    fields: list[_Field]


class _Buffer:
    def __init__(self, data: bytes, position: int, compressed: bool):
        self.data = data
        self.position = position
        self.compressed = compressed

    def byte(self) -> int:
        value = self.data[self.position]
        self.position += 1
        return value

    def varint(self) -> int:
        """A LEB128 varint of at most 9 bytes (the 9th carries 8 bits), as JFR writes longs."""
        result = shift = 0
        for index in range(9):
            byte = self.byte()
            if index == 8:
                return result | (byte << 56)
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
        return result

    def integer(self, size: int) -> int:
        if self.compressed:
            value = self.varint()
        else:
            value = int.from_bytes(self.data[self.position : self.position + size], "big")
            self.position += size
        bits = size * 8
        return value - (1 << bits) if value >= 1 << (bits - 1) else value

    def raw(self, size: int) -> bytes:
        value = self.data[self.position : self.position + size]
        self.position += size
        return value

    def string(self, pool: list[str] | None = None) -> str | None:
        encoding = self.byte()
        if encoding == 0:
            return None
        if encoding == 1:
            return ""
        if encoding == 2:  # an index into the string constant pool
            index = self.integer(8)
            return pool[index] if pool is not None and index < len(pool) else None
        length = self.integer(4)
        if encoding == 3:
            return self.raw(length).decode("utf-8", errors="replace")
        if encoding == 4:
            return "".join(chr(self.integer(2) & 0xFFFF) for _ in range(length))
        if encoding == 5:
            return self.raw(length).decode("latin-1")
        raise ValueError(f"unknown JFR string encoding {encoding}")


class _Chunk:
    def __init__(self, data: bytes, start: int):
        (
            magic,
            major,
            _minor,
            size,
            cp_offset,
            meta_offset,
            _start_nanos,
            _duration,
            _start_ticks,
            self.ticks_per_second,
            features,
        ) = HEADER.unpack_from(data, start)
        if magic != MAGIC or major != 2:
            raise ValueError(f"not a JFR 2.x chunk (magic {magic!r}, version {major})")
        self.data, self.start, self.size = data, start, size
        self.compressed = bool(features & COMPRESSED_INTS)
        self.types: dict[int, _Type] = {}
        self.pools: dict[int, dict[int, Any]] = {}
        self._read_metadata(start + meta_offset)
        self._read_constant_pools(start + cp_offset)

    def buffer(self, position: int) -> _Buffer:
        return _Buffer(self.data, position, self.compressed)

    # -- metadata -----------------------------------------------------------------------------
    def _read_metadata(self, position: int) -> None:
        buffer = self.buffer(position)
        buffer.integer(4)  # size
        buffer.integer(8)  # type (0)
        for _ in range(3):  # start time, duration, metadata id
            buffer.integer(8)
        strings = [buffer.string() or "" for _ in range(buffer.integer(4))]

        def element() -> tuple[str, dict[str, str], list]:
            name = strings[buffer.integer(4)]
            attributes = {}
            for _ in range(buffer.integer(4)):
                key = strings[buffer.integer(4)]
                attributes[key] = strings[buffer.integer(4)]
            children = [element() for _ in range(buffer.integer(4))]
            return name, attributes, children

        _root, _attributes, sections = element()
        for section_name, _, classes in sections:
            if section_name != "metadata":
                continue
            for class_name, attributes, children in classes:
                if class_name != "class":
                    continue
                fields = [
                    _Field(
                        field["name"],
                        int(field["class"]),
                        field.get("constantPool") == "true",
                        field.get("dimension") == "1",
                    )
                    for child_name, field, _ in children
                    if child_name == "field"
                ]
                self.types[int(attributes["id"])] = _Type(attributes["name"], fields)

    # -- values -------------------------------------------------------------------------------
    def value(self, buffer: _Buffer, type_id: int) -> Any:
        type_ = self.types[type_id]
        match type_.name:
            case "int":
                return buffer.integer(4)
            case "long":
                return buffer.integer(8)
            case "short":
                return buffer.integer(2)
            case "char":
                return chr(buffer.integer(2) & 0xFFFF)
            case "byte" | "boolean":
                return buffer.byte()
            case "float":
                return struct.unpack(">f", buffer.raw(4))[0]
            case "double":
                return struct.unpack(">d", buffer.raw(8))[0]
            case "java.lang.String":
                return buffer.string()
        return {field.name: self.field(buffer, field) for field in type_.fields}

    def field(self, buffer: _Buffer, field: _Field) -> Any:
        if field.array:
            return [self.single(buffer, field) for _ in range(buffer.integer(4))]
        return self.single(buffer, field)

    def single(self, buffer: _Buffer, field: _Field) -> Any:
        if field.constant_pool:
            return _Reference(field.type_id, buffer.integer(8))
        return self.value(buffer, field.type_id)

    # -- constant pools -------------------------------------------------------------------------
    def _read_constant_pools(self, position: int) -> None:
        offset = position - self.start
        while True:
            buffer = self.buffer(self.start + offset)
            buffer.integer(4)  # size
            buffer.integer(8)  # type (1)
            buffer.integer(8)  # start time
            buffer.integer(8)  # duration
            delta = buffer.integer(8)  # to the previous constant pool event
            buffer.byte()  # flush / checkpoint type
            for _ in range(buffer.integer(4)):
                type_id = buffer.integer(8)
                pool = self.pools.setdefault(type_id, {})
                for _ in range(buffer.integer(4)):
                    key = buffer.integer(8)
                    pool[key] = self.value(buffer, type_id)
            if delta == 0:
                break
            offset += delta

    def resolve(self, value: Any) -> Any:
        if isinstance(value, _Reference):
            return self.pools.get(value.type_id, {}).get(value.key)
        return value

    # -- events ---------------------------------------------------------------------------------
    def events(self, wanted: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
        wanted_ids = {type_id for type_id, type_ in self.types.items() if type_.name in wanted}
        position, end = self.start + HEADER.size, self.start + self.size
        while position < end:
            buffer = self.buffer(position)
            size = buffer.integer(4)
            type_id = buffer.integer(8)
            if size <= 0:
                break
            if type_id in wanted_ids:
                type_ = self.types[type_id]
                yield type_.name, {field.name: self.field(buffer, field) for field in type_.fields}
            position += size


@dataclass(frozen=True)
class _Reference:
    type_id: int
    key: int


class _Stacks:
    """Frame names of a chunk's stack traces, made once per trace id."""

    def __init__(self, chunk: _Chunk):
        self.chunk = chunk
        self._stacks: dict[Any, tuple[str, ...]] = {}
        self._methods: dict[tuple[Any, str | None], str] = {}

    def stack(self, reference: Any) -> tuple[str, ...]:
        key = reference.key if isinstance(reference, _Reference) else id(reference)
        if key not in self._stacks:
            trace = self.chunk.resolve(reference) or {}
            frames = [self.frame(frame) for frame in trace.get("frames") or []]
            self._stacks[key] = tuple(reversed(frames))  # JFR lists the leaf first
        return self._stacks[key]

    def frame(self, frame: dict[str, Any]) -> str:
        frame_type = self.chunk.resolve(frame.get("type"))
        if isinstance(frame_type, dict):
            frame_type = frame_type.get("description")
        method_ref = frame.get("method")
        key = (method_ref.key if isinstance(method_ref, _Reference) else id(method_ref), frame_type)
        if key not in self._methods:
            self._methods[key] = self._method_name(self.chunk.resolve(method_ref) or {}, frame_type)
        return self._methods[key]

    def _method_name(self, method: dict[str, Any], frame_type: str | None) -> str:
        name = self._symbol(method.get("name")) or "[unknown]"
        if frame_type == "Kernel":
            return f"{name}_[k]"
        owner = self.chunk.resolve(method.get("type")) or {}
        class_name = (self._symbol(owner.get("name")) or "").replace("/", ".")
        if not class_name or frame_type in CLASSLESS_FRAME_TYPES:
            return name
        return f"{class_name}.{name}"

    def _symbol(self, reference: Any) -> str | None:
        symbol = self.chunk.resolve(reference)
        if isinstance(symbol, dict):
            return symbol.get("string")
        return symbol


def read_samples(path: Path) -> Iterator[Sample]:
    """Every execution and wall-clock sample of the recording, chunk by chunk, in file order."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CasstraceError(
            f"cannot read the profiler's recording {path} ({error.strerror})",
            "check that the JVM could write to that directory",
        ) from None
    start = 0
    while start + HEADER.size <= len(data):
        try:
            chunk = _Chunk(data, start)
        except (ValueError, struct.error, IndexError, KeyError) as error:
            raise CasstraceError(
                f"the profiler's recording {path} is not a readable JFR file ({error})",
                "run again; if it persists, report the async-profiler version",
            ) from None
        if chunk.size <= 0:
            break
        stacks = _Stacks(chunk)
        scale = 1e9 / chunk.ticks_per_second
        for name, fields in chunk.events(set(SAMPLE_EVENTS)):
            thread = chunk.resolve(fields.get("sampledThread")) or {}
            state = chunk.resolve(fields.get("state"))
            if isinstance(state, dict):
                state = state.get("name")
            yield Sample(
                event=name,
                ts_ns=round(fields["startTime"] * scale),
                tid=thread.get("osThreadId") or 0,
                thread=thread.get("javaName") or thread.get("osName") or "",
                stack=stacks.stack(fields.get("stackTrace")),
                state=state,
                weight=fields.get("samples") or 1,
            )
        start += chunk.size
