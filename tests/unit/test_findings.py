"""analyses/findings.py: how find() orders what the finders find for a flagged read and for one that is not."""

from casstrace.analyses.findings import FindingContext, find
from casstrace.analyses.model import Finding, NecessaryRead

NECESSARY = NecessaryRead(
    bytes=20_480,
    data_bytes=16_384,
    index_bytes=4_096,
    result_bytes=10_000,
    basis="payload",
    units=1,
    unit_bytes=16_384,
    chunk_length=16_384,
    sstable_format="big",
)


def context(flagged: bool) -> FindingContext:
    return FindingContext(
        flagged=flagged,
        threshold=10.0,
        executions=2,
        data_read_bytes=2 * 1_020_480,  # 1 MB of excess per execution
        syscall_bytes=2 * 1_020_480,
        cache_outside_syscall_bytes=None,
        payload_bytes=None,
        rows=None,
        necessary=NECESSARY,
        select=None,
        schema=None,
    )


def finding(cause, *, after_fix=None, saves_ns=None) -> Finding:
    return Finding(
        cause=cause,
        title=cause,
        certainty="measured",
        evidence=[],
        suggestion=[],
        read_after_fix_bytes=after_fix,
        saves_ns=saves_ns,
    )


# Found in the order a registry could list them: time first, bytes last.
FOUND = (
    finding("gc_pauses", saves_ns=5e6),
    finding("many_cells_per_row", saves_ns=9e6),
    finding("whole_partition_scan"),
    finding("many_sstables", after_fix=1_020_480 - 100_000),  # removes 100,000 B of 1,000,000: 'possible'
    finding("full_row_read", after_fix=20_480),  # removes the whole excess
)
FINDERS = tuple(lambda _context, found=found: found for found in FOUND)  # each finds its one finding


def test_a_flagged_reads_causes_are_weighed_then_the_unweighed_about_bytes_then_those_about_time():
    found = find(context(flagged=True), FINDERS)
    assert [f.cause for f in found.causes] == [
        "full_row_read",
        "many_sstables",
        "whole_partition_scan",
        "many_cells_per_row",
        "gc_pauses",
    ]
    assert [f.excess_share for f in found.causes][:2] == [1.0, 0.1]
    assert [f.certainty for f in found.causes][:2] == ["measured", "possible"]
    assert found.notes == []


def test_a_reads_notes_when_not_flagged_put_the_time_a_fix_saves_first():
    found = find(context(flagged=False), FINDERS)
    assert found.causes == []
    assert [f.cause for f in found.notes] == [
        "many_cells_per_row",
        "gc_pauses",
        "whole_partition_scan",
        "many_sstables",
        "full_row_read",
    ]


def test_a_weighed_cause_that_also_saves_time_keeps_its_place_by_share():
    both = finding("many_sstables", after_fix=20_480, saves_ns=1e6)  # removes the whole excess, and saves time
    small = finding("full_row_read", after_fix=1_020_480 - 100_000)  # removes a tenth of it
    found = find(context(flagged=True), (lambda _c: small, lambda _c: both))
    assert [f.cause for f in found.causes] == ["many_sstables", "full_row_read"]
