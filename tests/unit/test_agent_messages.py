"""The capture agent's messages: each one's line is the documented wire format, reads back as itself,
and a line that is no message is refused by name."""

import pytest

from casstrace.orchestration.agent_messages import (
    ClockReading,
    ColdRefused,
    Failed,
    MakeCold,
    NotAMessage,
    OpenWindow,
    PagedOut,
    ReadClock,
    Ready,
    Stop,
    TraceFollows,
    WindowOpened,
    decode_command,
    decode_reply,
    encode,
)

COMMANDS = [
    (OpenWindow("execution 1", 1), b'{"op": "window", "label": "execution 1", "execution": 1}\n'),
    (OpenWindow("warmup", None), b'{"op": "window", "label": "warmup", "execution": null}\n'),
    (ReadClock(), b'{"op": "clock"}\n'),
    (MakeCold(), b'{"op": "cold"}\n'),
    (Stop(), b'{"op": "stop"}\n'),
]
REPLIES = [
    (
        Ready(4242, "node1", "0.1.0", 1),
        b'{"ready": {"pid": 4242, "hostname": "node1", "casstrace_version": "0.1.0", "protocol": 1}}\n',
    ),
    (WindowOpened(3, None), b'{"window": 3, "ended_early": null}\n'),
    (WindowOpened(4, "the JVM exited"), b'{"window": 4, "ended_early": "the JVM exited"}\n'),
    (ClockReading(123456789), b'{"now_ns": 123456789}\n'),
    (PagedOut(1 << 30), b'{"paged_out": 1073741824}\n'),
    (ColdRefused("process_madvise: EPERM"), b'{"cold_error": "process_madvise: EPERM"}\n'),
    (TraceFollows(8192), b'{"trace": 8192}\n'),
    (
        Failed("no Cassandra JVM", "start the node", True),
        b'{"error": "no Cassandra JVM", "fix": "start the node", "down": true}\n',
    ),
]


@pytest.mark.parametrize("message, line", COMMANDS)
def test_a_command_is_its_documented_line_and_reads_back(message, line):
    assert encode(message) == line
    assert decode_command(line) == message


@pytest.mark.parametrize("message, line", REPLIES)
def test_a_reply_is_its_documented_line_and_reads_back(message, line):
    assert encode(message) == line
    assert decode_reply(line) == message


def test_an_agent_of_another_protocol_reads_as_ready_with_its_protocol_and_version():
    assert decode_reply(b'{"ready": {"pid": 7, "casstrace_version": "0.0.9"}}') == Ready(7, "", "0.0.9", 0)


@pytest.mark.parametrize(
    "line",
    [
        b"Warning: Permanently added 'node1' to the list of known hosts.",
        b"[1, 2]",
        b'{"op": "dance"}',
        b'{"op": "window"}',
    ],
)
def test_a_line_that_is_no_command_is_refused(line):
    with pytest.raises(NotAMessage):
        decode_command(line)


@pytest.mark.parametrize(
    "line", [b"bash: casstrace: command not found", b'"ready"', b'{"window": "three"}', b'{"hello": 1}']
)
def test_a_line_that_is_no_reply_is_refused(line):
    with pytest.raises(NotAMessage):
        decode_reply(line)
