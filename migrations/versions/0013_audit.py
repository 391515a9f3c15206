"""the audit log of the HTTP API

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03

``cronctl serve`` writes one row per POST (who, what, when, the result); ``cronctl
audit`` lists them, newest first, so the index is on ``at``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("actor", sa.String(ID), nullable=False),
        sa.Column("role", sa.String(16), nullable=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("target", sa.String(ID), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("client", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
