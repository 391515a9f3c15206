"""process identity: liveness by process on SQLite, process groups of executions

Revision ID: 0005
Revises: 0004
Create Date: 2026-03-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# "<boot id>:<start time in clock ticks>" (see cronctl.processes); frozen here.
IDENT = 64


def upgrade() -> None:
    with op.batch_alter_table("scheduler_nodes") as batch:
        batch.add_column(sa.Column("process_start", sa.String(IDENT), nullable=True))
    with op.batch_alter_table("job_executions") as batch:
        batch.add_column(sa.Column("pgid", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("process_start", sa.String(IDENT), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_executions") as batch:
        batch.drop_column("process_start")
        batch.drop_column("pgid")
    with op.batch_alter_table("scheduler_nodes") as batch:
        batch.drop_column("process_start")
