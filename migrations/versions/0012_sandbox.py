"""the truth about every attempt: resource figures and fenced final statuses

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

Every finished command execution records how it ended and what it used (``exit_code``,
``signal``, ``cpu_seconds``, ``max_rss_bytes``, from ``wait4``). A final status that
arrives after another node took the attempt over (and recorded it ``lost``) is kept
beside the row's status, never over it: ``fenced_status`` and ``fenced_at``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the column types of this revision (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("job_executions") as batch:
        batch.add_column(sa.Column("exit_code", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("signal", sa.String(16), nullable=True))
        batch.add_column(sa.Column("cpu_seconds", sa.Float(), nullable=True))
        batch.add_column(sa.Column("max_rss_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("fenced_status", sa.String(16), nullable=True))
        batch.add_column(sa.Column("fenced_at", TS, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_executions") as batch:
        for name in ("fenced_at", "fenced_status", "max_rss_bytes", "cpu_seconds", "signal",
                     "exit_code"):
            batch.drop_column(name)
