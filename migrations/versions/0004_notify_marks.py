"""notification marks (once cluster-wide) and per-node delivery failures

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "notify_marks",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_notify_marks"),
    )
    op.create_index("ix_notify_marks_created_at", "notify_marks", ["created_at"])
    op.create_table(
        "notify_failures",
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("failing_since", TS, nullable=False),
        sa.Column("last_failure_at", TS, nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("node_id", name="pk_notify_failures"),
    )


def downgrade() -> None:
    op.drop_table("notify_failures")
    op.drop_index("ix_notify_marks_created_at", table_name="notify_marks")
    op.drop_table("notify_marks")
