"""a partial index of the live executions (pending, running)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

``status``, ``cancel JOB``, start-up and recovery ask for the live rows, which are a
handful however long the history is. Through ``(status, scheduled_at, id)`` that answer
depended on statistics: once ``ANALYZE`` (or ``PRAGMA optimize``) told SQLite that a
status value stands for a third of the rows, it scanned the whole table instead (1M
rows: 0.58 s). An index holding only the live rows is as small as the answer whatever
the statistics say, on SQLite and PostgreSQL alike; the queries name its predicate.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE_WHERE = "status IN ('pending', 'running')"


def upgrade() -> None:
    op.create_index("ix_job_executions_live", "job_executions", ["scheduled_at", "id"],
                    sqlite_where=sa.text(LIVE_WHERE), postgresql_where=sa.text(LIVE_WHERE))


def downgrade() -> None:
    op.drop_index("ix_job_executions_live", table_name="job_executions")
