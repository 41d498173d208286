"""Capture backends declare what they can do, and everyone else asks for a capability, never for a
backend's name: the backends module names them, and traces/capabilities.py reads the traces written
before meta `capabilities` existed by their backend's name. Nothing here needs BPF, sysdig or a node."""

import ast
import subprocess
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.cli.import_scap import run_import
from casstrace.probes.backends import BACKENDS, DEFAULT_BACKEND, Backend, StartedBackend, backends_with
from casstrace.probes.protocol import CaptureOptions
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.capabilities import LEGACY, Capability, capabilities_of

PACKAGE = Path(__file__).resolve().parents[2]
SCAP = Path(__file__).resolve().parents[1] / "data" / "scap" / "curl_google.scap"
# Where a backend may be named: its registry, the legacy reading of old traces, and the sysdig program.
NAMING_BACKENDS = {"probes/backends.py", "traces/capabilities.py", "probes/sysdig/sysdig_tool.py"}


def test_each_backend_declares_its_capabilities_and_the_default_is_one_of_them():
    assert DEFAULT_BACKEND in BACKENDS
    for name, backend in BACKENDS.items():
        assert backend.name == name
        assert isinstance(backend.capabilities, frozenset) and backend.capabilities <= set(Capability)
        assert backend.meta() == {"backend": name, "capabilities": sorted(c.value for c in backend.capabilities)}
    assert backends_with(Capability.PROFILE_JOIN) == ["bcc"]
    assert set(backends_with(Capability.PER_CALL_OFFSETS)) == {"bcc", "sysdig"}


def test_no_module_but_the_registry_names_a_backend():
    """'"bcc"' and '"sysdig"' as string constants anywhere else would be a caller going by name."""
    # The files git tracks: the build/ copy that `pip install -e` leaves of every module is not one of them.
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=PACKAGE, capture_output=True, text=True, check=True
    ).stdout.split()
    named = sorted(
        name
        for name in tracked
        if not name.startswith("tests/") and name not in NAMING_BACKENDS
        for node in ast.walk(ast.parse((PACKAGE / name).read_text()))
        if isinstance(node, ast.Constant) and node.value in BACKENDS
    )
    # One place, by file (a reformat moves lines): it runs the sysdig program, not a backend.
    assert named == ["benchmarks/import_streaming.py"]


@pytest.mark.parametrize("options", [CaptureOptions(command="cat x"), CaptureOptions(thread_slot_ns=10**8)])
def test_a_backend_refuses_what_its_capabilities_lack(options):
    backend = BACKENDS["sysdig"]
    assert options.needs() and not options.needs() <= backend.capabilities
    with pytest.raises(ValueError, match="the sysdig backend cannot"):
        backend(1, options=options)  # refused before anything is looked at: pid 1 is not even checked


def test_an_import_records_its_backends_capabilities(tmp_path):
    run_import(SCAP, pid=None, proc=None, out=tmp_path / "i.trace", force=False, query=None, stream_limit=None)
    with Trace(tmp_path / "i.trace") as trace:
        assert trace.meta["capabilities"] == ["per_call_offsets"]
        assert trace.captured_with(Capability.PER_CALL_OFFSETS)
        assert not trace.captured_with(Capability.EXACT_TOTALS)


@pytest.mark.parametrize(
    "meta, expected",
    [
        ({"backend": "bcc"}, LEGACY["bcc"]),  # before meta capabilities: by the backend
        ({"backend": "sysdig"}, frozenset({Capability.PER_CALL_OFFSETS})),
        ({"backend": "dtrace"}, frozenset()),
        ({}, frozenset()),
        ({"backend": "bcc", "capabilities": ["exact_totals", "teleportation"]}, frozenset({Capability.EXACT_TOTALS})),
    ],
)
def test_a_trace_says_what_its_backend_could_do_old_ones_too(meta, expected):
    assert capabilities_of(meta) == expected


@pytest.mark.parametrize("recorded, exact", [(None, True), (["exact_totals"], True), (["per_call_offsets"], False)])
def test_lost_events_are_said_by_the_capability_not_the_backends_name(tmp_path, recorded, exact):
    writer = TraceWriter(tmp_path / "lost.trace")
    writer.set_meta(
        backend="bcc",
        measures={"syscalls": True},
        capture_start_ns=0,
        capture_end_ns=10,
        lost_events=12,
        unstreamed_events=0,
        **({"capabilities": recorded} if recorded else {}),
    )
    writer.add_window("capture", 0, 10)
    (lost,) = [warning for warning in analyse(writer.finish()).warnings if "12 events were lost" in warning]
    assert ("totals are exact" in lost) == exact and ("may be short" in lost) == (not exact)


class Prepared:
    def __init__(self) -> None:
        self.closed = 0

    def close(self, wait: bool = False) -> None:
        self.closed += 1


class Recorded(Backend):
    """A backend that records what each capture was handed (no capture is made)."""

    name = "recorded"
    capabilities = frozenset(Capability)

    def __init__(self) -> None:
        self.prepared: list[tuple[Prepared, bool]] = []
        self.handed: list[object] = []

    def _capture(self, pid, extra_dirs, stream_limit, options, prepared):
        self.handed.append(prepared)
        return None

    def prepare(self, thread_slot_ns: int = 0, kept: bool = False) -> Prepared:
        self.prepared.append((Prepared(), kept))
        return self.prepared[-1][0]


def test_a_kept_preparation_goes_to_every_capture_run_asks_for_and_is_closed_once():
    factory = Recorded()
    started = StartedBackend(factory, kept=True)
    runs = CaptureOptions(thread_slot_ns=started.thread_slot_ns)
    for _ in range(3):
        started(1, options=runs)
    started(1, options=runs._replace(all_syscalls=True))  # another program: a capture of its own
    started(1, options=runs, stream_limit=10)
    ((prepared, kept),) = factory.prepared
    assert kept and factory.handed == [prepared, prepared, prepared, None, None]
    started.release()
    started(1, options=runs)  # released: the runs after it prepare their own
    started.release()
    assert prepared.closed == 1 and factory.handed[-1] is None


def test_a_preparation_not_kept_goes_to_the_first_capture_only():
    factory = Recorded()
    started = StartedBackend(factory)
    runs = CaptureOptions(thread_slot_ns=started.thread_slot_ns)
    started(1, options=runs)
    started(1, options=runs)
    ((prepared, kept),) = factory.prepared
    assert not kept and factory.handed == [prepared, None]
