"""Job log lines and progress snapshots."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection, X
from cronctl.store.records import (
    LogEntry,
    LogLine,
    require_aware,
)
from cronctl.store.tables import (
    job_executions,
    job_logs,
)


def level_name(level: str | int) -> str:
    """``logging.INFO`` or ``"info"`` → ``"INFO"``."""
    if isinstance(level, int):
        return logging.getLevelName(level)
    return level.upper()


class JobLogs(SqlConnection):
    """Job logs and progress of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        by_execution: dict[int, list[tuple[datetime, str, str]]] = {}
        for eid, at, level, message in batch:
            line = (require_aware(at, "log time"), level_name(level), message)
            by_execution.setdefault(int(eid), []).append(line)
        if not by_execution:
            return
        L = job_logs.c
        with self._write() as conn:
            # Lock the execution rows (PostgreSQL; SQLite already holds the write lock) so
            # that two writers of one execution's log cannot pick the same seq.
            existing = set(
                conn.execute(
                    sa.select(X.id).where(X.id.in_(list(by_execution))).with_for_update()
                ).scalars()
            )
            rows: list[dict[str, Any]] = []
            for eid, lines in by_execution.items():
                if eid not in existing:
                    continue
                last = conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(L.seq), 0)).where(L.execution_id == eid)
                ).scalar_one()
                for n, (at, level, message) in enumerate(lines, start=int(last) + 1):
                    rows.append(
                        {
                            "execution_id": eid,
                            "seq": n,
                            "at": at,
                            "level": level,
                            "message": message,
                        }
                    )
            if rows:
                conn.execute(sa.insert(job_logs), rows)

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        L = job_logs.c
        q = (
            sa.select(job_logs)
            .where(L.execution_id == execution_id, L.seq > after_seq)
            .order_by(L.seq)
        )
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [
                LogLine(int(r.execution_id), int(r.seq), r.at, r.level, r.message)
                for r in conn.execute(q)
            ]

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                sa.update(job_executions)
                .where(X.id == execution_id)
                .values(progress_done=done, progress_total=total, progress_message=message)
            )


__all__ = ["JobLogs", "level_name"]
