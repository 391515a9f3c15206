"""the dashboard's browser sessions

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07

``cronctl serve`` keeps each browser session as a row (the sha256 of its random id, the
token it was opened with, when it expires), so every replica sees the same sessions and
logout ends one everywhere. Expired rows are deleted as new sessions open, hence the index
on ``expires_at``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of this revision's column types (see 0001).
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")


def upgrade() -> None:
    op.create_table(
        "api_sessions",
        sa.Column("id_digest", sa.String(64), nullable=False),
        sa.Column("token_name", sa.String(64), nullable=False),
        sa.Column("token_digest", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("client", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id_digest", name="pk_api_sessions"),
    )
    op.create_index("ix_api_sessions_expires_at", "api_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_api_sessions_expires_at", table_name="api_sessions")
    op.drop_table("api_sessions")
