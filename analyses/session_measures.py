"""Per-execution measures (casstrace.traces.measures) of the requests Cassandra traced, taken over a
traced session: from its own record (its duration, its time in the commit log) and from what the
capture kept over its span (the JVM's pauses, its threads' CPU per slot).

A watch's sampled execution is one session; a run's execution is its sessions (one a page), its
figure of a measure the measure's merge of theirs (`per_execution`). So `watch` and `run` give a
measure one definition: a session source computes it for both, by its registry name.

A session source is a function of the sessions' inputs to session -> {measure: figure}; a figure it
could not take is absent, never 0. Adding one is its registry entry (derived: no window source records
it) and a function in SOURCES.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from casstrace.analyses.attribution import Span, served_cpu_ns
from casstrace.traces.measures import measure
from casstrace.traces.queries import StatementSession, ThreadCpu
from casstrace.traces.spans import covered_ns, union
from casstrace.traces.thread_roles import SESSION_ROLES, role_of

Figures = dict[int, dict[str, float]]  # session -> {measure name: its figure}


@dataclass(frozen=True)
class TracedSession:
    """A traced session as its measures need it."""

    session: int
    started_ns: int
    duration_ns: int | None
    mutations: int | None  # its 'Appending to commitlog' events (None: none)
    commitlog_ns: int | None  # from each to its thread's next event

    @classmethod
    def of(cls, row: StatementSession) -> "TracedSession":
        return cls(row.session, row.started_ns, row.duration_ns, row.mutations, row.commitlog_ns)


@dataclass(frozen=True)
class SessionInputs:
    sessions: list[TracedSession]
    spans: list[Span]
    # the JVM's pauses, (start_ns, end_ns) on the sessions' clock: every GC and safepoint, and the GCs
    # alone (None: not measured)
    pauses: list[tuple[int, int]] | None = None
    gc_pauses: list[tuple[int, int]] | None = None
    thread_cpu: list[ThreadCpu] | None = None  # the request threads' on-CPU ns per slot (None: not measured)


def own_record(inputs: SessionInputs) -> Figures:
    """Its duration as the coordinator counted it (Cassandra's traced time), and, of a session that
    appended to the commit log, its time there: the append, and the wait for the sync where the commit
    log syncs before it answers."""
    found: Figures = {}
    for session in inputs.sessions:
        figures = found.setdefault(session.session, {})
        if session.duration_ns is not None:
            figures["traced_ns"] = float(session.duration_ns)
        if session.mutations is not None:
            figures["commitlog_ns"] = float(session.commitlog_ns or 0)
    return found


def pauses_overlapped(inputs: SessionInputs) -> Figures:
    """The JVM's pauses within its span (start to start + duration): the GCs', and every pause's (a GC's
    pause lies inside the safepoint it needs: both are logged, so they are merged first)."""
    if inputs.pauses is None:
        return {}
    gc_pauses, pauses = union(inputs.gc_pauses), union(inputs.pauses)
    found: Figures = {}
    for session in inputs.sessions:
        if session.duration_ns is not None:
            end = session.started_ns + session.duration_ns
            found[session.session] = {
                "gc_pause_ns": float(covered_ns(session.started_ns, end, gc_pauses)),
                "safepoint_ns": float(covered_ns(session.started_ns, end, pauses)),
            }
    return found


def serving_cpu(inputs: SessionInputs) -> Figures:
    """The CPU its threads ran while they served it (analyses.attribution.served_cpu_ns, `run`'s rule), of
    the sessions whose every span is on a thread found, of a role whose CPU the capture keeps."""
    if inputs.thread_cpu is None:
        return {}
    served: dict[int, list[Span]] = defaultdict(list)
    for span in inputs.spans:
        served[span.session].append(span)
    measured = {
        session: spans
        for session, spans in served.items()
        if all(span.tid is not None and role_of(span.thread) in SESSION_ROLES for span in spans)
    }
    return {session: {"serving_cpu_ns": cpu} for session, cpu in served_cpu_ns(measured, inputs.thread_cpu).items()}


SOURCES: tuple[Callable[[SessionInputs], Figures], ...] = (own_record, pauses_overlapped, serving_cpu)


def session_figures(inputs: SessionInputs) -> Figures:
    """Each session's figures, from every source."""
    found: Figures = {session.session: {} for session in inputs.sessions}
    for source in SOURCES:
        for session, figures in source(inputs).items():
            found.setdefault(session, {}).update(figures)
    return found


def per_execution(figures: Figures, executions: dict[int, int], names: tuple[str, ...]) -> dict[int, dict[str, float]]:
    """execution -> its sessions' figures of the measures `names`, each combined by its merge rule
    (`executions`: session -> the execution it traced). An execution one of whose sessions lacks a
    measure has none of it: a part is not passed off as the whole."""
    listed: dict[int, list[dict[str, float]]] = defaultdict(list)
    for session, execution in executions.items():
        listed[execution].append(figures.get(session, {}))
    return {
        execution: {
            name: measure(name).combine([each[name] for each in sessions])
            for name in names
            if all(name in each for each in sessions)
        }
        for execution, sessions in listed.items()
    }
