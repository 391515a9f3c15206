"""when each job was first scheduled on this database

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03

``why`` and ``replay`` must not invent history from before a job existed: ``cronctl
run`` stamps ``first_seen`` when it first saves a job's definition. Rows from before this
revision get the epoch: when they were first scheduled is unknown, so every instant
counts as one the job may have had (what ``why`` and ``replay`` assumed until now).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of the timestamp type (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
EPOCH_SQLITE = "1970-01-01T00:00:00.000000Z"


def upgrade() -> None:
    with op.batch_alter_table("job_schedules") as batch:
        batch.add_column(sa.Column("first_seen", TS, nullable=True))
    bind = op.get_bind()
    epoch = ("TIMESTAMPTZ '1970-01-01 00:00:00+00'" if bind.dialect.name == "postgresql"
             else f"'{EPOCH_SQLITE}'")
    op.execute(f"UPDATE job_schedules SET first_seen = {epoch}")


def downgrade() -> None:
    with op.batch_alter_table("job_schedules") as batch:
        batch.drop_column("first_seen")
