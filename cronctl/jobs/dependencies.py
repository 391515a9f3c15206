"""Dependents (docs/behaviour.md#spread-calendars-and-dependencies): ``after = ["extract",
"load:any"]``, checked across jobs.

A dependent has no schedule of its own: it runs at its parents' planned instants, so all
its parents must share one schedule (the same expression or interval, zone and DST
policies). A parent may be a dependent itself (extract -> transform -> load): its
schedule is then its own parents'. This module checks the edges (unknown parents, cycles,
parents on different schedules, untracked parents) and copies the shared schedule into
each dependent's definition, so everything that reads a schedule (``next``, ``why``,
``list``) treats a dependent like any job."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace

from cronctl.jobs.model import JobDefinition, Mode
from cronctl.jobs.violation import Violation, did_you_mean

ScheduleKey = tuple[object, ...]


def schedule_key(job: JobDefinition) -> ScheduleKey:
    """What two jobs must share to be parents of one dependent."""
    return (job.cron, job.every, job.anchor, job.timezone, job.dst_gap, job.dst_fold)


def describe(job: JobDefinition) -> str:
    zone = "" if job.every is not None else f" in {job.timezone}"
    return f"{job.schedule_text!r}{zone}"


def resolve_dependents(
    built: dict[str, JobDefinition], failed: Mapping[str, object], *,
    sources: Mapping[str, str], explicit_mode: Collection[str] = (),
) -> dict[str, list[Violation]]:
    """Check every dependent in ``built`` and give it its parents' schedule, in place.
    A dependent with a problem moves out of ``built``: the result maps it to its
    violations (at least one each);
    ``failed`` holds the ids of jobs that did not build (not reported again here);
    ``sources`` the ``path:line`` of each job's ``after`` key.

    A dependent whose parents are all single_instance is single_instance too (its row is
    claimed like theirs: one execution per instant, cluster-wide, also through
    recoveries), unless it sets ``mode`` or ``overlap_policy`` itself
    (``explicit_mode``)."""
    violations: dict[str, list[Violation]] = {}
    resolved: dict[str, JobDefinition | None] = {}  # None: could not be resolved

    def bad(job_id: str, message: str) -> None:
        violations.setdefault(job_id, []).append(
            Violation(sources.get(job_id, built[job_id].source), job_id, "after", message))

    def resolve(job_id: str, path: tuple[str, ...]) -> JobDefinition | None:
        if job_id in resolved:
            return resolved[job_id]
        job = built[job_id]
        if not job.after:
            resolved[job_id] = job
            return job
        parents: list[JobDefinition] = []
        ok = True
        for edge in job.after:
            parent_id = edge.job_id
            if parent_id in path or parent_id == job_id:
                cycle = [*path[path.index(parent_id):], job_id, parent_id] if (
                    parent_id in path) else [job_id, job_id]
                bad(job_id, f"dependency cycle: {' -> '.join(cycle)}")
                ok = False
                continue
            if parent_id not in built:
                if parent_id not in failed:
                    bad(job_id, f"unknown job {parent_id!r}"
                                f"{did_you_mean(parent_id, [*built, *failed])}")
                ok = False
                continue
            parent = resolve(parent_id, (*path, job_id))
            if parent is None:
                if job_id not in violations:
                    bad(job_id, f"parent {parent_id!r} is invalid (see its violation)")
                ok = False
                continue
            if not parent.tracked:
                bad(job_id, f"parent {parent_id!r} is not tracked (tracked = false): its "
                            "outcomes are not recorded, so nothing could follow them")
                ok = False
            parents.append(parent)
        if ok and parents:
            first = parents[0]
            for other in parents[1:]:
                if schedule_key(other) != schedule_key(first):
                    bad(job_id, f"parents do not share one schedule: {first.id} runs at "
                                f"{describe(first)} ({first.dst_gap.value}/"
                                f"{first.dst_fold.value}), {other.id} at {describe(other)} "
                                f"({other.dst_gap.value}/{other.dst_fold.value})")
                    ok = False
                    break
        if not ok or not parents:
            resolved[job_id] = None
            return None
        root = parents[0]
        if job_id not in explicit_mode and all(p.mode is Mode.SINGLE_INSTANCE
                                               for p in parents):
            job = replace(job, mode=Mode.SINGLE_INSTANCE)
        done = replace(job, cron=root.cron, cron_written=root.cron_written, every=root.every,
                       anchor=root.anchor, timezone=root.timezone, dst_gap=root.dst_gap,
                       dst_fold=root.dst_fold)
        resolved[job_id] = done
        return done

    for job_id in sorted(built):
        cycle = _cycle_through(built, job_id)
        if cycle:
            bad(job_id, f"dependency cycle: {' -> '.join(cycle)}")
            resolved[job_id] = None
    for job_id in sorted(built):
        resolve(job_id, ())
    for job_id, job in resolved.items():
        if job is None:
            del built[job_id]
        else:
            built[job_id] = job
    return violations


def _cycle_through(built: Mapping[str, JobDefinition], start: str) -> list[str] | None:
    """A path ``start -> ... -> start`` along ``after`` edges, or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        job_id, path = stack.pop()
        job = built.get(job_id)
        if job is None:
            continue
        for edge in job.after:
            if edge.job_id == start:
                return [*path, start]
            if edge.job_id not in seen:
                seen.add(edge.job_id)
                stack.append((edge.job_id, [*path, edge.job_id]))
    return None


def chain_of(jobs: Iterable[JobDefinition], parent_id: str) -> list[str]:
    """Every job that depends on ``parent_id``, directly or through other dependents, in
    the order they run (breadth first): what ``--chain`` runs after it."""
    by_parent: dict[str, list[str]] = {}
    for job in jobs:
        for edge in job.after:
            by_parent.setdefault(edge.job_id, []).append(job.id)
    out: list[str] = []
    frontier = [parent_id]
    while frontier:
        nxt: list[str] = []
        for job_id in frontier:
            for child in sorted(by_parent.get(job_id, [])):
                if child not in out and child != parent_id:
                    out.append(child)
                    nxt.append(child)
        frontier = nxt
    return out


def dependents_of(jobs: Mapping[str, JobDefinition], parent_id: str) -> list[JobDefinition]:
    """The jobs that name ``parent_id`` in their ``after``, by id."""
    return sorted((j for j in jobs.values() if any(e.job_id == parent_id for e in j.after)),
                  key=lambda j: j.id)


__all__ = ["chain_of", "dependents_of", "describe", "resolve_dependents", "schedule_key"]
