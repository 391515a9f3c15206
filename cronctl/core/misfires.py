"""docs/behaviour.md#misfires, as pure functions of a schedule, a job and ``now``.

On start, when the store is reachable again, and after a stall of the scheduler thread,
the planned instants of a job after its cursor and up to now form ONE set. If its oldest
is late (``now`` minus its due time, planned + jitter) by at most ``misfire_threshold``,
nothing was missed: the engine leaves them to the heap, which fires them late, oldest
first, with overlap applying as usual. Otherwise the whole set is missed and the policy
decides: ``skip`` fires none; ``fire_now`` the newest, once; ``fire_all`` the newest
``catchup_limit``, oldest first. The instants that do not fire are consecutive planned
instants (the oldest of the set), so they are reported as ONE :class:`Skip` run
(``misfire``) whatever their number: a set is counted (up to a cap), never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronctl.core.actions import Action, AdvanceCursor, Missed, Skip, SkipReason
from cronctl.core.timing import ScheduleLike, missed_between
from cronctl.jobs.model import JobDefinition, MisfirePolicy, Origin


@dataclass(frozen=True, slots=True)
class MissedSet:
    """What the policy made of a missed set: the actions to report it (:class:`Missed`,
    the skip runs, a cursor), the instants to fire (oldest first, ``origin = misfire``)
    and the newest instant of the set (now handled)."""

    actions: tuple[Action, ...]
    fire: tuple[datetime, ...]
    newest: datetime


def decide(schedule: ScheduleLike, job: JobDefinition, after: datetime, oldest: datetime,
           now: datetime, *, recorded: bool, paused: bool) -> MissedSet | None:
    """Apply the policy to the missed set ``(after, now]`` (``oldest`` its first instant).

    ``recorded`` is False for untracked jobs and a memory store: they always behave as
    ``skip`` and record nothing (a :class:`Missed` for the log, no skip run). A paused
    job's would-be catch-up fires are one ``paused`` run instead."""
    policy = job.misfire_policy if recorded else MisfirePolicy.SKIP
    runs = (0 if policy is MisfirePolicy.SKIP else 1 if policy is MisfirePolicy.FIRE_NOW
            else max(job.catchup_limit, 0))
    # One more than will run: the newest dropped instant ends the misfire run.
    count, tail, exact = missed_between(schedule, after, now, runs + 1)
    if not tail:
        return None
    runs = min(runs, len(tail))
    newest = tail[-1]
    dropped = count - runs if len(tail) > runs else 0
    out: list[Action] = [Missed(job.id, policy, count, dropped, newest, exact)]
    if dropped and recorded:
        out.append(skip_run(job.id, oldest, tail[-runs - 1], dropped, exact,
                            SkipReason.MISFIRE))
    fire = tuple(tail[len(tail) - runs:]) if runs else ()
    if not fire:
        out.append(AdvanceCursor(job.id, newest))
    elif paused:
        out.append(skip_run(job.id, fire[0], newest, runs, True, SkipReason.PAUSED))
        fire = ()
    return MissedSet(tuple(out), fire, newest)


def skip_run(job_id: str, first: datetime, last: datetime, count: int, exact: bool,
             reason: SkipReason) -> Skip:
    """A :class:`Skip` of the consecutive planned instants ``first`` .. ``last``."""
    return Skip(job_id, first, Origin.MISFIRE, reason, None if last == first else last,
                count, exact)
