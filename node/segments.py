"""Protocol-v5 segments reassembled into CQL frames in time linear in the bytes received.

cassandra-driver 3.30.1 (Connection.process_io_buffer with checksumming, i.e. protocol v5) copies
everything read and not yet decoded into a new buffer after each segment it decodes
(_ConnectionIOBuffer.reset_io_buffer). A segment holds at most 128 KiB, so a result of B bytes that
reaches the buffer in one go costs about B² / 256 KiB bytes of copying: minutes in the kernel for a
page of 190 MB, hundreds of thousands of page faults a second, and the event loop too busy to read
the heartbeats' answers ("Connection heartbeat timeout"). The driver's own decoding of each segment
(its SegmentCodec: CRCs, decompression) and of each frame (Connection.process_msg) is kept; only
the buffering differs: each received byte is appended once, and each frame is copied out once.
"""

import io
import struct
from collections import deque

from cassandra import ProtocolVersion
from cassandra.cluster import DefaultConnection
from cassandra.connection import Connection, CrcMismatchException, ProtocolError, _Frame
from cassandra.segment import CrcException, SegmentCodec

PROTOCOL_VERSION_MASK = 0x7F
FRAME_HEADER = struct.Struct(">BhBi")  # flags, stream, opcode, body length: after the version byte
FRAME_HEADER_LENGTH = 1 + FRAME_HEADER.size


class ByteQueue:
    """Bytes appended at the tail and taken from the head: the chunks as they came, each byte
    copied once, when it is taken (a chunk taken in part stays as a view of its rest)."""

    def __init__(self) -> None:
        self._chunks: deque[memoryview] = deque()
        self._length = 0

    def __len__(self) -> int:
        return self._length

    def append(self, data: bytes) -> None:
        if data:
            self._chunks.append(memoryview(data))
            self._length += len(data)

    def peek(self, length: int) -> bytes:
        pieces, wanted = [], length
        for chunk in self._chunks:
            if wanted <= 0:
                break
            pieces.append(chunk[:wanted])
            wanted -= len(pieces[-1])
        return b"".join(pieces)

    def take(self, length: int) -> bytes:
        pieces, wanted = [], length
        while wanted > 0:
            chunk = self._chunks[0]
            if len(chunk) <= wanted:
                pieces.append(self._chunks.popleft())
            else:
                pieces.append(chunk[:wanted])
                self._chunks[0] = chunk[wanted:]
            wanted -= len(pieces[-1])
        self._length -= length
        return b"".join(pieces)


class SegmentReassembler:
    """Segments in (as the bytes arrive, in chunks of any size), frames out: the driver's _Frame
    (header fields, body offset and end) and the frame's body."""

    def __init__(self, codec: SegmentCodec):
        self.codec = codec
        self._received = ByteQueue()  # raw segment bytes not decoded yet
        self._payloads = ByteQueue()  # segments' payloads: CQL frames, the last maybe partial
        self._frame: _Frame | None = None

    def feed(self, data: bytes) -> list[tuple[_Frame, bytes]]:
        """Decode what `data` completes. Raises CrcException on a corrupt segment, ProtocolError on
        a frame the driver does not support."""
        self._received.append(data)
        while self._decode_segment():
            pass
        frames = []
        while (frame := self._next_frame()) is not None:
            frames.append(frame)
        return frames

    def _decode_segment(self) -> bool:
        header_length = self.codec.header_length_with_crc
        if len(self._received) < header_length:
            return False
        header = self.codec.decode_header(io.BytesIO(self._received.peek(header_length)))
        if len(self._received) < header.segment_length:
            return False
        self._received.take(header_length)
        body = io.BytesIO(self._received.take(header.segment_length - header_length))
        self._payloads.append(self.codec.decode(body, header).payload)
        return True

    def _next_frame(self) -> tuple[_Frame, bytes] | None:
        if self._frame is None:
            if len(self._payloads) < FRAME_HEADER_LENGTH:
                return None
            header = self._payloads.peek(FRAME_HEADER_LENGTH)
            version = header[0] & PROTOCOL_VERSION_MASK
            if version not in ProtocolVersion.SUPPORTED_VERSIONS or version < 3:
                raise ProtocolError(f"This version of the driver does not support protocol version {version}")
            flags, stream, opcode, body_length = FRAME_HEADER.unpack_from(header, 1)
            if body_length < 0:
                raise ProtocolError(f"Received negative body length: {body_length!r}")
            self._frame = _Frame(version, flags, stream, opcode, FRAME_HEADER_LENGTH, FRAME_HEADER_LENGTH + body_length)
        frame = self._frame
        if len(self._payloads) < frame.end_pos:
            return None
        self._payloads.take(frame.body_offset)
        body = self._payloads.take(frame.end_pos - frame.body_offset)
        self._frame = None
        return frame, body


class LinearSegments(Connection):
    """Mixed in before a driver connection class: v5 segments reassembled by SegmentReassembler.
    Until checksumming starts (the STARTUP exchange, and protocol v4 and below throughout) the
    driver's own buffering runs unchanged."""

    _reassembler: SegmentReassembler | None = None

    def process_io_buffer(self) -> None:
        if not self._is_checksumming_enabled:
            super().process_io_buffer()
            return
        if self._reassembler is None:
            self._reassembler = SegmentReassembler(self._segment_codec)
        received = self._iobuf  # the reactor's read buffer (the driver's name for it)
        data = received.getvalue()
        received.seek(0)
        received.truncate()
        try:
            frames = self._reassembler.feed(data)
        except CrcException as error:
            self.defunct(CrcMismatchException(str(error), self.endpoint))
            return
        except Exception as error:
            self.defunct(error)
            return
        for frame, body in frames:
            self.process_msg(frame, body)


class LinearSegmentsConnection(LinearSegments, DefaultConnection):
    """The driver's default connection (its event loop reactor), with LinearSegments: what
    casstrace's sessions connect with (Cluster's connection_class)."""
