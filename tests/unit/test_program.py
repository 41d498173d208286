"""The codes and records capture.c shares with Python are generated from one definition (probes/bcc/program.py)."""

import ctypes
import re
from importlib import resources

from casstrace.probes.bcc import program
from casstrace.probes.bcc.program import EventRecord, FollowedNoticeRecord, Kind, c_defines, c_struct, record_struct
from casstrace.traces.schema import PAGE_BYTES


def test_every_code_reaches_the_program_as_a_macro_and_none_is_defined_twice():
    defines = dict(define[2:].split("=") for define in c_defines())
    assert defines["KIND_CLOSED"] == "5" and defines["NOTICE_THREAD"] == "6" and defines["SYS_NEW_FD"] == "8"
    assert defines["COUNT_AGGREGATE_OVERFLOW"] == "2" and defines["CONTROL_START_NS"] == "1"
    assert 1 << int(defines["PAGE_SHIFT_4K"]) == PAGE_BYTES
    assert len(defines) == len(c_defines())
    source = resources.files("casstrace.probes.bcc").joinpath("capture.c").read_text()
    redefined = [name for name in defines if re.search(rf"#define\s+{name}\b", source)]
    assert redefined == []
    assert not re.search(r"struct (event|notice)\s*\{", source)


def test_records_are_the_same_layout_in_c_and_python():
    assert c_struct("event", EventRecord).splitlines()[1:3] == ["    u64 ts;", "    u64 latency;"]
    notice = c_struct("notice", FollowedNoticeRecord)
    assert f"    char text[{program.NOTICE_PATH}];\n    u32 tgid;\n    u32 _pad;\n}};" in notice
    unpacker = record_struct(FollowedNoticeRecord)
    assert unpacker.size == ctypes.sizeof(FollowedNoticeRecord)
    assert unpacker.format.endswith(f"{program.NOTICE_PATH}sI4x")  # padding skipped when unpacking
    assert record_struct(EventRecord).format == "<QQqqqQIiIIIIQII"


def test_kind_names_are_the_trace_format_names():
    assert program.KIND_NAMES[Kind.FILE] == "file" and program.KIND_NAMES[Kind.CLOSED] == "unknown"
    assert set(program.SOURCE_NAMES.values()) == {"syscall", "page_cache"}


def test_a_kept_program_empties_every_hash_map_of_the_program():
    """What a capture leaves in the kernel's maps is emptied before a kept program's next capture
    (bcc_capture.KeptProgram): a map added to capture.c must be in ProgramOptions.hash_maps."""
    from casstrace.probes.bcc.bcc_capture import ProgramOptions

    source = resources.files("casstrace.probes.bcc").joinpath("capture.c").read_text()
    declared = set(re.findall(r"^BPF_HASH\((\w+),", source, re.MULTILINE))
    every = ProgramOptions(follow_children=True, thread_slot_ns=1_000_000)
    assert len(declared) == 12 and set(every.hash_maps) == declared and len(every.hash_maps) == len(declared)
    assert set(ProgramOptions().hash_maps) == declared - {"thread_io", "followed"}
