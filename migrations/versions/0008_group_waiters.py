"""group waiters: a freed serial group goes to its oldest waiting fire, cluster-wide

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

A fire blocked by its serial group's lock on another node registers here; the group's
lock is then only taken by a fire with no older live waiter, so a job whose group is
free for a moment between another node's runs is not starved (it used to lose the group
to whichever node asked first).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "group_waiters",
        sa.Column("key", sa.String(ID + 16), nullable=False),
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("planned", TS, nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("seen_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("key", "job_id", "planned", name="pk_group_waiters"),
    )
    op.create_index("ix_group_waiters_node_id", "group_waiters", ["node_id"])


def downgrade() -> None:
    op.drop_index("ix_group_waiters_node_id", table_name="group_waiters")
    op.drop_table("group_waiters")
