"""Experiments as objects: a plan, the one executor that carries it out, and the records it returns.

A `Plan` is the ordered variants one command measures on its node, its `Target` (targets.Target: the
node as the driver reaches it, its JVM where given, the query's other nodes over ssh where given):
`run`'s one query, compare's two sides, a sweep's points (a column count, a layout at a column count,
a table count), `watch`'s one watch. The command builds each variant's capture options from that one
target; the runner plans each run from them (runner.RunPlan: which JVMs, the replicas, how each is
captured).
A `Variant` is one point of it: what it sets up on the node before its captures and takes down after
(a table loaded, then dropped: `staged`, on every exit path), the captures it makes, and the record
of them it returns (its traces, and whatever its command's report reads). `execute` runs a plan's
variants in order through one `Captures`: a kept capture (orchestration.kept_capture: compiled and
attached once, detached once) when the variants run queries, else one capture each, as a watch makes.

The plan is checked before anything changes on a node (`Plan.check`: every capture's options aim at
the plan's target and pass their own checks, a run's (runner.check_options) or a watch's
(watcher.check_options); every trace it will write may be written); what a kind of variant refuses of
its own (a row over one write, too little heap) its builder refuses before it makes the plan. A new
kind of variant (a setting changed on a sandbox copy, a write design) is a class with `capture_options`,
`traces`, `staged` and `capture`, and a plan of them: the executor, its capture and its clean-up are
the same for every kind.
"""

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from casstrace.errors import CasstraceError
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.orchestration.runner import RunOptions, run
from casstrace.orchestration.runner import check_options as check_run_options
from casstrace.orchestration.targets import Target
from casstrace.orchestration.watcher import WatchCallbacks, WatchOptions, watch
from casstrace.orchestration.watcher import check_options as check_watch_options
from casstrace.outputs import check_output, same_file
from casstrace.phases import Phases
from casstrace.probes.backends import DEFAULT_BACKEND, StartedBackend

Progress = Callable[[str, int], None]  # (what is under way, progress units done since the last call)
Record = TypeVar("Record", covariant=True)  # what a variant's captures leave: its traces, and what its report reads
Recorded = TypeVar("Recorded")


def no_progress(label: str, units: int) -> None:
    """The progress of a plan nobody follows."""


class Captures(Protocol):
    """What a variant captures through: a run of a query, a watch of the node (its callbacks: watcher.watch's)."""

    def run(self, options: RunOptions, phases: Phases | None = None) -> Path: ...

    def watch(self, options: WatchOptions, callbacks: WatchCallbacks) -> Path: ...


class CapturePerRun:
    """Each capture its own, as a command alone makes it: `started`, the backend a run's command started
    already (probes.backends.started: compiling while the command connects), for its one run."""

    def __init__(self, started: StartedBackend | None = None):
        self.started = started

    def run(self, options: RunOptions, phases: Phases | None = None) -> Path:
        return run(options, phases, self.started)

    def watch(self, options: WatchOptions, callbacks: WatchCallbacks) -> Path:
        return watch(options, callbacks.live, callbacks.started, callbacks.interval_done)


class KeptCaptures(CapturePerRun):
    """The runs through one kept capture (detached once, at close); a watch captures on its own."""

    def __init__(self, kept: KeptCapture):
        super().__init__()
        self.kept = kept

    def run(self, options: RunOptions, phases: Phases | None = None) -> Path:
        return self.kept.run(options, phases)


class Variant(Protocol[Record]):
    """One point of a plan: the traces it writes, what it sets up on the node, its captures."""

    @property
    def label(self) -> str:
        """What it is, in a progress line: 'N=10', 'udt, N=50', 'before'."""
        ...

    @property
    def runs_queries(self) -> bool:
        """Its captures are runs of a query (a kept capture serves them), not watches."""
        ...

    def capture_options(self) -> Sequence[RunOptions | WatchOptions]:
        """The options of its captures, in order (checked before anything runs: Plan.check)."""
        ...

    def traces(self) -> list[Path]:
        """Where it writes its traces (checked before anything runs)."""
        ...

    def staged(self, progress: Progress) -> AbstractContextManager[None]:
        """What it sets up on the node (entered) and takes down (exited, however the block ends)."""
        ...

    def capture(self, captures: Captures, progress: Progress) -> Record:
        """Its captures, inside `staged`; their record."""
        ...


@dataclass(frozen=True)
class Plan(Generic[Recorded]):
    """The ordered variants of one command on its target node, and what the whole plan sets up there (a
    keyspace of its own) around them. `force`: the traces may replace an earlier plan's."""

    variants: tuple[Variant[Recorded], ...]
    target: Target
    backend: str = DEFAULT_BACKEND
    staged: Callable[[], AbstractContextManager[None]] = field(default=nullcontext)
    force: bool = False

    def traces(self) -> list[Path]:
        return [trace for variant in self.variants for trace in variant.traces()]

    def check(self) -> None:
        """Refuse, before anything changes on a node, a plan with a capture aimed at another node than its
        target or whose options their own checks refuse, or that would write one trace twice or over a
        file it may not replace (outputs.check_output)."""
        for variant in self.variants:
            for options in variant.capture_options():
                self.target.check_aims_at(options.target, f"the capture {variant.label!r}")
                if isinstance(options, RunOptions):
                    check_run_options(options)
                else:
                    check_watch_options(options)
        written: list[Path] = []
        for trace in self.traces():
            if any(same_file(trace, earlier) or trace == earlier for earlier in written):
                raise CasstraceError(
                    f"two of this command's traces would be written at {trace}", "give each its own path"
                )
            check_output(trace, self.force)
            written.append(trace)


def execute(
    plan: Plan[Recorded], progress: Progress = no_progress, captures: Captures | None = None
) -> Generator[Recorded, None, None]:
    """Carry out `plan`: its variants in order, each staged, captured and taken down, yielding each one's
    record as it is done. `captures`: what the caller started already (compare's kept capture, compiling
    while it checked the queries; run's started backend); else a kept capture when the variants run
    queries, detached as the plan ends. Closing the generator early (Ctrl-C) still takes down what
    the plan set up."""
    plan.check()
    with ExitStack() as stack:
        stack.enter_context(plan.staged())
        if captures is None:
            captures = stack.enter_context(_captures_for(plan))
        for variant in plan.variants:
            with variant.staged(progress):
                record = variant.capture(captures, progress)
            yield record


@contextmanager
def _captures_for(plan: Plan[Recorded]) -> Iterator[Captures]:
    if not any(variant.runs_queries for variant in plan.variants):
        yield CapturePerRun()
        return
    with KeptCapture(plan.backend) as kept:
        yield KeptCaptures(kept)


@dataclass(frozen=True)
class RunRecord:
    """A query's run: its variant's label and its trace."""

    label: str
    trace: Path


class AsGiven:
    """A capture as its options give it: nothing to set up on the node, its trace where they say (None:
    a default name, always new)."""

    options: RunOptions | WatchOptions

    def capture_options(self) -> Sequence[RunOptions | WatchOptions]:
        return [self.options]

    def traces(self) -> list[Path]:
        return [self.options.out] if self.options.out is not None else []

    def staged(self, progress: Progress) -> AbstractContextManager[None]:
        return nullcontext()


@dataclass(frozen=True)
class QueryRun(AsGiven):
    """A query's run (`run`'s, one side of a compare)."""

    label: str
    options: RunOptions
    phases: Phases | None = None  # where its wall time goes (run --timings)
    runs_queries: bool = True

    def capture(self, captures: Captures, progress: Progress) -> RunRecord:
        return RunRecord(self.label, captures.run(self.options, self.phases))


def query_plan(options: RunOptions, phases: Phases | None = None) -> Plan[RunRecord]:
    """`casstrace run`'s plan: one query, on the node its options name."""
    return Plan((QueryRun("run", options, phases),), options.target, options.backend, force=options.force)


def run_query(options: RunOptions, phases: Phases | None = None, started: StartedBackend | None = None) -> Path:
    """`casstrace run`: its plan carried out, captured through `started`, the backend its command started
    (compiling while it connects); the path of the trace written."""
    (record,) = execute(query_plan(options, phases), captures=CapturePerRun(started))
    return record.trace


@dataclass(frozen=True)
class NodeWatch(AsGiven):
    """A watch of the node (`watch`'s): its trace (with --interval, the last interval's) and the callbacks
    that follow it."""

    label: str
    options: WatchOptions
    callbacks: WatchCallbacks = field(default_factory=WatchCallbacks)  # none: a watch followed by nobody
    runs_queries: bool = False

    def capture(self, captures: Captures, progress: Progress) -> RunRecord:
        return RunRecord(self.label, captures.watch(self.options, self.callbacks))


def watch_plan(options: WatchOptions, callbacks: WatchCallbacks) -> Plan[RunRecord]:
    """`casstrace watch`'s plan: one watch, of the node its options name."""
    return Plan((NodeWatch("watch", options, callbacks),), options.target, force=options.force)


def watch_node(options: WatchOptions, callbacks: WatchCallbacks) -> Path:
    """`casstrace watch`: its plan carried out; the path of its trace (watcher.watch's)."""
    (record,) = execute(watch_plan(options, callbacks))
    return record.trace
