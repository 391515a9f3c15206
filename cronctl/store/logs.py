"""Job log lines and progress snapshots."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection, X
from cronctl.store.records import LogLine, require_aware
from cronctl.store.tables import (
    job_executions,
)
from cronctl.store.writerecords import LogEntry


def level_name(level: str | int) -> str:
    """``logging.INFO`` or ``"info"`` → ``"INFO"``."""
    if isinstance(level, int):
        return logging.getLevelName(level)
    return level.upper()


_CHUNK = 1000  # execution ids per IN list
_INSERT = "INSERT INTO job_logs (execution_id, seq, at, level, message) VALUES (?, ?, ?, ?, ?)"


class JobLogs(SqlConnection):
    """Job logs and progress of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        by_execution: dict[int, list[tuple[datetime, str, str]]] = {}
        for eid, at, level, message in batch:
            line = (require_aware(at, "log time"), level_name(level), message)
            by_execution.setdefault(int(eid), []).append(line)
        if not by_execution:
            return
        wanted = sorted(by_execution)
        raw = self._raw
        with self._raw_write() as cur:
            # Lock the execution rows (PostgreSQL; SQLite already holds the write lock) so
            # that two writers of one execution's log cannot pick the same seq. One query
            # per chunk of executions, not one per execution (a flush covers many), and
            # one executemany for the lines (psycopg pipelines it). The last seq is a
            # correlated lookup on job_logs' primary key: PostgreSQL plans an IN list
            # against job_logs without statistics as a full scan.
            last: dict[int, int] = {}
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start:start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                lock = " FOR UPDATE" if raw.pg else ""
                cur.execute(raw.sql(
                    "SELECT e.id, (SELECT MAX(l.seq) FROM job_logs l WHERE l.execution_id = "
                    f"e.id) FROM job_executions e WHERE e.id IN ({marks}){lock}"), tuple(chunk))
                last.update((int(e), int(n or 0)) for e, n in cur.fetchall())
            rows: list[tuple[int, int, Any, str, str]] = []
            for eid, lines in by_execution.items():
                if eid not in last:
                    continue
                for n, (at, level, message) in enumerate(lines, start=last[eid] + 1):
                    rows.append((eid, n, raw.ts(at), level, message))
            if rows:
                cur.executemany(raw.sql(_INSERT), rows)

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        with self._raw_read() as cur:
            return self._raw.read_logs(cur, execution_id, after_seq=after_seq, limit=limit)

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
