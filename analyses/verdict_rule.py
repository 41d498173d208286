"""The one rule every verdict applies (`run`, `report`, `compare`, `sweep`, `watch`), and what it decides.

`VerdictRule` is --threshold and --min-excess; `judge` gives the three-way status from a read, the
necessary read and what bounds either. The sentences that go with a status are the callers' (a run
says what it measured, a watch what it sampled); the decision is made here only.
See docs/verdicts.md.
"""

from dataclasses import dataclass, replace
from typing import Literal

from casstrace.analyses.units import KIB, human_bytes

DEFAULT_THRESHOLD = 10.0  # data read ÷ necessary read at or above which a read is flagged
DEFAULT_MIN_EXCESS = 64 * KIB  # bytes per execution past the necessary read below which nothing is flagged

Status = Literal["flagged", "not flagged", "undetermined"]


@dataclass(frozen=True)
class VerdictRule:
    """--threshold and --min-excess: flagged when, over `executions` executions, the read is at least
    `threshold` x the necessary one, and past it by at least `min_excess` per execution."""

    threshold: float = DEFAULT_THRESHOLD
    min_excess: int = DEFAULT_MIN_EXCESS

    def exceeds(self, data_read: float, necessary: float, executions: int) -> bool:
        return (data_read - necessary) / executions >= self.min_excess and data_read >= self.threshold * necessary

    def describe(self) -> str:
        return f"threshold {self.threshold:g}x and {human_bytes(self.min_excess)} per execution"

    def for_read(self, filtering_scan: bool) -> "VerdictRule":
        """The rule a read is judged by, in `run` and `watch` alike: a filtering scan's read grows with
        the table while its result does not, so past --min-excess it is flagged whatever the ratio
        (which a small table keeps low today)."""
        return replace(self, threshold=1.0) if filtering_scan else self


DEFAULT_RULE = VerdictRule()


def judge(
    rule: VerdictRule,
    data_read: float,
    necessary: float | None,
    executions: int,
    *,
    data_read_least: float | None = None,
    necessary_least: float | None = None,
    unseen: bool = False,
) -> Status:
    """The status of a read of `data_read` bytes over `executions` executions against its `necessary`
    read over as many (None: nothing to judge it by). Never flagged nor cleared on a figure that cannot say:
    undetermined when only the read's upper bound is flagged (`data_read_least`: the least the same
    evidence allows), when only the necessary read's lower bound would flag it (`necessary_least`),
    or when reads no measure saw (`unseen`) could lift a figure below the rule."""
    if necessary is None:
        return "undetermined"
    if rule.exceeds(data_read, necessary, executions):
        if data_read_least is not None and not rule.exceeds(data_read_least, necessary, executions):
            return "undetermined"
        return "flagged"
    if necessary_least is not None and rule.exceeds(data_read, necessary_least, executions):
        return "undetermined"
    return "undetermined" if unseen else "not flagged"
