"""The JVM's pause log (casstrace.node.gc_pauses) read into pauses, and pauses cut to windows
(lines as a Java 17 G1 JVM writes them with `VM.log ... decorators=timenanos`)."""

from casstrace.node.gc_pauses import Pause, overlap, parse_log
from casstrace.traces.spans import covered_ns, union

LOG = """\
[1664669319993ns] Safepoint "Cleanup", Time since last: 3004621515 ns, Reaching safepoint: 19196 ns, \
Cleanup: 19928 ns, At safepoint: 4778 ns, Total: 43902 ns
[1672364269096ns] GC(11) Pause Full (Diagnostic Command) 418M->57M(1024M) 1110.588ms
[1672368670265ns] Safepoint "G1CollectFull", Time since last: 6584306322 ns, Reaching safepoint: 39133 ns, \
Cleanup: 5881 ns, At safepoint: 1114998086 ns, Total: 1115043100 ns
[1680000000000ns] GC(12) Pause Young (Normal) (G1 Evacuation Pause) 120M->30M(1024M) 5.500ms
[1680000000001ns] GC(12) Using 2 workers of 2 for evacuation
"""
MiB = 1 << 20


def test_each_pause_with_its_collector_length_and_heap():
    pauses = parse_log(LOG)
    assert [p for p in pauses if p.kind == "gc"] == [
        Pause(
            "gc",
            "Pause Full (Diagnostic Command)",
            1672364269096 - 1110588000,
            1672364269096,
            418 * MiB,
            57 * MiB,
            1024 * MiB,
        ),
        Pause(
            "gc",
            "Pause Young (Normal) (G1 Evacuation Pause)",
            1680000000000 - 5500000,
            1680000000000,
            120 * MiB,
            30 * MiB,
            1024 * MiB,
        ),
    ]
    assert [(p.what, p.end_ns - p.start_ns) for p in pauses if p.kind == "safepoint"] == [
        ("Cleanup", 43902),
        ("G1CollectFull", 1115043100),
    ]


def test_a_pause_counts_in_a_window_only_as_far_as_it_overlaps_it():
    pause = Pause("gc", "Pause Young", 100, 200)
    assert overlap(pause, 0, 100) == 0  # ends as the pause begins
    assert overlap(pause, 150, 1000) == 50
    assert overlap(pause, 120, 130) == 10
    assert overlap(pause, 0, 1000) == 100


def test_pauses_the_log_gives_overlapping_count_once_in_a_window():
    """Two logged pauses can overlap (each line's time is when it was logged): a window holds their
    union, never more than its own length (a 26.5 ms window once held 33.5 ms so: a trace refused)."""
    spans = union([(150, 260), (100, 200), (400, 410)])
    assert spans == [(100, 260), (400, 410)]
    assert covered_ns(120, 250, spans) == 130  # not 80 + 100
    assert covered_ns(0, 1000, spans) == 170
