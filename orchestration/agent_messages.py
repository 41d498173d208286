"""The capture agent's protocol as types: every command the driver sends and every reply an agent
gives, one frozen dataclass each, and the one place that turns them into JSON lines and back.

The wire format is the one casstrace.orchestration.agents documents (one JSON object per line each
way; a trace's bytes follow its TraceFollows line): changing a message here changes it for both
ends at once, and a line that is no message of the protocol is refused here, by name, instead of
surfacing later as a KeyError in whoever read it.
"""

import json
from dataclasses import dataclass
from typing import Any


class NotAMessage(ValueError):
    """A line that is no message of the protocol (JSON or not)."""


# -- driver -> agent -------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenWindow:
    label: str
    execution: int | None


@dataclass(frozen=True)
class ReadClock:
    pass


@dataclass(frozen=True)
class MakeCold:
    pass


@dataclass(frozen=True)
class Stop:
    pass


Command = OpenWindow | ReadClock | MakeCold | Stop


# -- agent -> driver -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    pid: int
    hostname: str
    casstrace_version: str
    protocol: int


@dataclass(frozen=True)
class WindowOpened:
    window: int
    ended_early: str | None


@dataclass(frozen=True)
class ClockReading:
    now_ns: int  # the agent's capture clock


@dataclass(frozen=True)
class PagedOut:
    paged_out: int  # bytes of address space pushed out (run --cold)


@dataclass(frozen=True)
class ColdRefused:
    cold_error: str


@dataclass(frozen=True)
class TraceFollows:
    trace: int  # the bytes of the partial trace that follow the line


@dataclass(frozen=True)
class Failed:
    error: str
    fix: str
    down: bool  # no Cassandra JVM serves the node: it is down, not the agent broken


Reply = Ready | WindowOpened | ClockReading | PagedOut | ColdRefused | TraceFollows | Failed


def encode(message: Command | Reply) -> bytes:
    """The message as its line of the protocol."""
    fields: dict[str, Any]
    match message:
        case OpenWindow(label, execution):
            fields = {"op": "window", "label": label, "execution": execution}
        case ReadClock():
            fields = {"op": "clock"}
        case MakeCold():
            fields = {"op": "cold"}
        case Stop():
            fields = {"op": "stop"}
        case Ready():
            fields = {"ready": vars(message)}
        case _:  # the other replies are their fields as they are
            fields = vars(message)
    return json.dumps(fields).encode() + b"\n"


def _fields(line: bytes) -> dict[str, Any]:
    try:
        fields = json.loads(line)
    except ValueError:
        raise NotAMessage(f"not JSON: {line[:80]!r}") from None
    if not isinstance(fields, dict):
        raise NotAMessage(f"not a JSON object: {line[:80]!r}")
    return fields


def decode_command(line: bytes) -> Command:
    fields = _fields(line)
    try:
        match fields.get("op"):
            case "window":
                execution = fields.get("execution")
                return OpenWindow(str(fields["label"]), None if execution is None else int(execution))
            case "clock":
                return ReadClock()
            case "cold":
                return MakeCold()
            case "stop":
                return Stop()
    except (KeyError, TypeError, ValueError):
        pass
    raise NotAMessage(f"an unknown command {fields.get('op')!r}")


def decode_reply(line: bytes) -> Reply:
    fields = _fields(line)
    try:
        if "ready" in fields:
            ready = fields["ready"]  # an agent of another protocol may say less: the driver names its version
            return Ready(
                int(ready.get("pid", 0)),
                str(ready.get("hostname", "")),
                str(ready.get("casstrace_version", "?")),
                int(ready.get("protocol", 0)),
            )
        if "error" in fields:
            return Failed(str(fields["error"]), str(fields.get("fix") or ""), bool(fields.get("down")))
        if "window" in fields:
            ended_early = fields.get("ended_early")
            return WindowOpened(int(fields["window"]), None if ended_early is None else str(ended_early))
        if "now_ns" in fields:
            return ClockReading(int(fields["now_ns"]))
        if "paged_out" in fields:
            return PagedOut(int(fields["paged_out"]))
        if "cold_error" in fields:
            return ColdRefused(str(fields["cold_error"]))
        if "trace" in fields:
            return TraceFollows(int(fields["trace"]))
    except (KeyError, TypeError, ValueError):
        pass
    raise NotAMessage(f"an unknown reply {sorted(fields)}")
