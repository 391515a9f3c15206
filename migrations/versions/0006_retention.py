"""retention: an index for pruning trigger requests, an end time on every finished execution

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Executions are pruned through their indexes on scheduled_at and (job_id,
    # scheduled_at); done trigger requests, oldest first, through this one.
    op.create_index("ix_trigger_requests_done_requested_at", "trigger_requests",
                    ["done", "requested_at"])
    # Retention needs a finished execution's end (finished_at). cronctl always writes one
    # with a final status; a row that has none (written by hand) gets its start, else
    # its planned instant, so that it ages like the others instead of staying forever.
    op.execute(sa.text(
        "UPDATE job_executions SET finished_at = COALESCE(started_at, scheduled_at) "
        "WHERE finished_at IS NULL AND status NOT IN ('pending', 'running')"))


def downgrade() -> None:
    op.drop_index("ix_trigger_requests_done_requested_at", table_name="trigger_requests")
