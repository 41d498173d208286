"""What the backend that took a trace could do, as the trace records it (meta `capabilities`).

A capture backend declares its capabilities (casstrace.probes.backends); callers ask for one, never
for a backend's name, and the trace keeps the set, so that a reader asks the same question of the
file. A trace written before meta `capabilities` existed has them from the backend it names, as
those backends were then (LEGACY): the only place a reader goes by a backend's name.
"""

import enum
from collections.abc import Mapping
from typing import Any


class Capability(enum.Enum):
    PER_CALL_OFFSETS = "per_call_offsets"  # each read's and lseek's file offset, logged per call
    PAGE_CACHE_FILLS = "page_cache_fills"  # the pages the page cache filled for the process, per call and per fault
    EXACT_TOTALS = "exact_totals"  # totals counted where the calls happen: lost per-call records shorten none
    PROFILE_JOIN = "profile_join"  # that log of each read is on async-profiler's clock: reads join Java stacks
    FOLLOW_CHILDREN = "follow_children"  # a command captured with every process it starts (capture -- CMD)
    THREAD_IO = "thread_io"  # file bytes per thread and time slot (watch joins them with sessions)


# What a trace without meta `capabilities` (casstrace before they were recorded) could do, by its backend.
LEGACY: Mapping[str, frozenset[Capability]] = {
    "bcc": frozenset(Capability),
    "sysdig": frozenset({Capability.PER_CALL_OFFSETS}),
}


def recorded(capabilities: frozenset[Capability]) -> list[str]:
    """The value of meta `capabilities` for these."""
    return sorted(capability.value for capability in capabilities)


def capabilities_of(meta: Mapping[str, Any]) -> frozenset[Capability]:
    """What the trace with this meta says its backend could do (a capability this casstrace does not
    know is left out)."""
    if "capabilities" not in meta:
        return LEGACY.get(meta.get("backend", ""), frozenset())
    known = {capability.value: capability for capability in Capability}
    return frozenset(known[value] for value in meta["capabilities"] if value in known)
