"""guard locks: cluster-wide serial groups and single_instance overlap

Revision ID: 0002
Revises: 0001
Create Date: 2026-02-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "guard_locks",
        sa.Column("key", sa.String(ID + 16), nullable=False),
        sa.Column("execution_id", BIG_ID, nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("acquired_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_guard_locks"),
    )
    op.create_index("ix_guard_locks_execution_id", "guard_locks", ["execution_id"])
    op.create_index("ix_guard_locks_node_id", "guard_locks", ["node_id"])


def downgrade() -> None:
    op.drop_index("ix_guard_locks_node_id", table_name="guard_locks")
    op.drop_index("ix_guard_locks_execution_id", table_name="guard_locks")
    op.drop_table("guard_locks")
