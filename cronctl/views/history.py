"""``history`` and ``GET /api/v1/executions``, ``/skips``: executions and skip records,
newest first, in the ``history --json`` shape (:func:`cronctl.views.common.execution_json`).

Pages: :func:`read_history` takes ``before``, the (scheduled_at, id) of the last entry of
the previous page; the API hands it out as an opaque cursor (:func:`encode_cursor`).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cronctl.errors import UsageError
from cronctl.views.common import execution_json, iso_z, require_job_defined

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import ExecutionStatus
    from cronctl.store.base import ExecutionRecord, Reads
    from cronctl.store.records import SkipRecord
    from cronctl.views import shapes


SKIPPED = "skipped"


def parse_statuses(text: str | None) -> tuple[ExecutionStatus, ...] | None:
    if text is None:
        return None
    from cronctl.jobs.model import ExecutionStatus

    result: list[ExecutionStatus] = []
    for part in text.split(","):
        if part.strip().lower() == SKIPPED:
            continue
        try:
            result.append(ExecutionStatus.parse(part))  # type: ignore[arg-type]
        except ValueError as exc:
            raise UsageError(f"--status: {exc} (or {SKIPPED!r} for skip records)") from None
    return tuple(result)


def wants_skips(text: str | None) -> bool:
    return text is not None and any(p.strip().lower() == SKIPPED for p in text.split(","))


def skip_entries(store: Reads, config: Config, *, job_id: str | None,
                 since: datetime | None, until: datetime | None, limit: int
                 ) -> list[shapes.Skip]:
    """Skip records in the ``history --json`` shape, one entry per planned instant (a
    stored run of consecutive skips is expanded with the job's schedule), newest first."""
    from cronctl.ids import occurrence_id

    runs = store.list_skips(job_id=job_id, since=since, until=until, limit=limit)
    schedules: dict[str, Any] = {}
    entries: list[shapes.Skip] = []
    for run in runs:
        instants = [run.first_at] if run.count == 1 else _expand(run, config, schedules)
        for at in reversed(instants):
            if (since is not None and at < since) or (until is not None and at > until):
                continue
            entries.append({
                # Not an execution: "id" stays null (an execution id could collide with
                # it); "skip_id" is the stored record's, shared by the instants of a run
                # ("occurrence_id" names the instant).
                "id": None, "skip_id": run.id, "job": run.job_id,
                "occurrence_id": occurrence_id(run.job_id, at),
                "scheduled_at": iso_z(at), "started_at": None, "finished_at": None,
                "status": SKIPPED, "reason": run.reason, "attempt": 0, "node": run.node_id,
                "origin": "dependency" if run.reason == "upstream" else "cron",
                "error": None, "detail": run.detail,  # which calendar, which parent
            })
            if len(entries) >= limit:
                return entries
    return entries


def _expand(run: SkipRecord, config: Config, schedules: dict[str, Any]) -> list[datetime]:
    """The planned instants of a run: the job's fires in ``[first_at, last_at]``, or just
    the two ends when the job is no longer defined."""
    from datetime import timedelta

    from cronctl.core.timing import schedule_for
    from cronctl.errors import CronctlError
    from cronctl.jobs.loader import find_job

    if run.job_id not in schedules:
        try:
            schedules[run.job_id] = schedule_for(find_job(config.job_settings, run.job_id,
                                                            state_dir=config.state_dir))
        except CronctlError:
            schedules[run.job_id] = None
    schedule = schedules[run.job_id]
    if schedule is not None:
        fires = schedule.between(run.first_at - timedelta(microseconds=1), run.last_at,
                                 limit=run.count)
        if fires:
            return list(fires)
    return [run.first_at, run.last_at]


@dataclass(frozen=True)
class Entry:
    """One entry of a history page: its document, and the execution it shows (``None``
    for a skip record)."""

    doc: shapes.Execution | shapes.Skip
    record: ExecutionRecord | None


def read_history(store: Reads | None, config: Config, *, job: str | None,
                 status: str | None, since: datetime | None, until: datetime | None,
                 limit: int, before: tuple[datetime, int] | None = None) -> list[Entry]:
    """Executions (and, with ``skipped`` in ``status``, skip records) newest first, at most
    ``limit``; :class:`NotFoundError` for a ``job`` that has no rows and is not defined.
    ``before`` continues a page: only entries strictly older than it."""
    statuses = parse_statuses(status)  # () when only skip records were asked for
    skipped = wants_skips(status)
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {iso_z(since)} is after --until {iso_z(until)}")
    records: list[ExecutionRecord] = []
    skips: list[shapes.Skip] = []
    if store is not None:
        if statuses is None or statuses:
            records = store.list_executions(job_id=job, status=statuses, since=since,
                                            until=until, limit=limit, before=before)
        if skipped:
            skip_until = until
            if before is not None and (until is None or before[0] < until):
                skip_until = before[0]
            skips = skip_entries(store, config, job_id=job, since=since, until=skip_until,
                                 limit=limit)
            if before is not None:
                cut = iso_z(before[0])
                skips = [s for s in skips if s["scheduled_at"] < cut]
    if job is not None and not records and not skips and before is None:
        # No rows: is it a job that never ran (or not in this window), or no job at all?
        unfiltered = store.list_executions(job_id=job, limit=1) if store else []
        if not unfiltered:
            require_job_defined(config, job)
    entries = [Entry(execution_json(r), r) for r in records]
    entries += [Entry(doc, None) for doc in skips]
    entries.sort(key=lambda e: e.doc["scheduled_at"], reverse=True)  # stable: ids stay
    return entries[:limit]


def history_document(entries: list[Entry]) -> shapes.History:
    """``history --json``; the API adds ``next_cursor``."""
    return {"executions": [entry.doc for entry in entries]}


def encode_cursor(entry: Entry) -> str:
    """An opaque cursor after ``entry``: where the next page starts."""
    doc = entry.doc
    raw = json.dumps({"at": doc["scheduled_at"], "id": doc["id"] or 0}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> tuple[datetime, int]:
    """A cursor from :func:`encode_cursor`; :class:`UsageError` for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        doc = json.loads(raw)
        at = datetime.fromisoformat(doc["at"].replace("Z", "+00:00"))
        ident = int(doc["id"])
        if at.tzinfo is None:
            raise ValueError("naive")
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"cursor: {text[:40]!r} is not a cursor this server gave out") \
            from None
    return at, ident
