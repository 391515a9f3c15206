"""skip ledger and per-node cursors of every_instance jobs

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "skip_records",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("scope", sa.String(ID), server_default="", nullable=False),
        sa.Column("first_at", TS, nullable=False),
        sa.Column("last_at", TS, nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_skip_records"),
        sa.UniqueConstraint("job_id", "scope", "first_at",
                            name="uq_skip_records_job_id_scope_first_at"),
    )
    op.create_index("ix_skip_records_job_id_last_at", "skip_records", ["job_id", "last_at"])
    op.create_index("ix_skip_records_last_at", "skip_records", ["last_at"])
    op.create_table(
        "node_cursors",
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("cursor", TS, nullable=False),
        sa.PrimaryKeyConstraint("job_id", "node_id", name="pk_node_cursors"),
    )


def downgrade() -> None:
    op.drop_table("node_cursors")
    op.drop_index("ix_skip_records_last_at", table_name="skip_records")
    op.drop_index("ix_skip_records_job_id_last_at", table_name="skip_records")
    op.drop_table("skip_records")
