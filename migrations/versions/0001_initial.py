"""initial schema: schedules, executions, logs, nodes, trigger requests

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the column types of this revision (never import them from cronctl:
# a migration must keep meaning what it meant when it was written).
# Timestamps: TIMESTAMP WITH TIME ZONE on PostgreSQL; on SQLite the fixed-width UTC
# text "YYYY-MM-DDTHH:MM:SS.ffffffZ", which sorts like the instants.
TS = sa.DateTime(timezone=True).with_variant(sa.String(27), "sqlite")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ID = 200


def upgrade() -> None:
    op.create_table(
        "job_schedules",
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("definition", sa.Text(), server_default="{}", nullable=False),
        sa.Column("cursor", TS, nullable=True),
        sa.Column("paused", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("fencing_token", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("job_id", name="pk_job_schedules"),
    )
    op.create_table(
        "job_executions",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("occurrence_id", sa.String(64), nullable=False),
        sa.Column("scheduled_at", TS, nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(ID), server_default="", nullable=False),
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("target", sa.Text(), server_default="", nullable=False),
        sa.Column("fencing_token", sa.BigInteger(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("progress_done", sa.Float(), nullable=True),
        sa.Column("progress_total", sa.Float(), nullable=True),
        sa.Column("progress_message", sa.Text(), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_executions"),
        # The single_instance election: '' scope = cluster-wide, node id = every_instance.
        sa.UniqueConstraint(
            "job_id",
            "occurrence_id",
            "scope",
            "attempt",
            name="uq_job_executions_job_id_occurrence_id_scope_attempt",
        ),
    )
    op.create_index(
        "ix_job_executions_job_id_scheduled_at", "job_executions", ["job_id", "scheduled_at"]
    )
    op.create_index("ix_job_executions_scheduled_at", "job_executions", ["scheduled_at"])
    op.create_index("ix_job_executions_status_node_id", "job_executions", ["status", "node_id"])
    op.create_table(
        "job_logs",
        sa.Column("execution_id", BIG_ID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["execution_id"],
            ["job_executions.id"],
            name="fk_job_logs_execution_id_job_executions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("execution_id", "seq", name="pk_job_logs"),
    )
    op.create_table(
        "scheduler_nodes",
        sa.Column("node_id", sa.String(ID), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", TS, nullable=False),
        sa.Column("heartbeat_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("node_id", name="pk_scheduler_nodes"),
    )
    op.create_table(
        "trigger_requests",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(ID), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("scheduled_at", TS, nullable=True),
        sa.Column("requested_at", TS, nullable=False),
        sa.Column("taken_by", sa.String(ID), nullable=True),
        sa.Column("taken_at", TS, nullable=True),
        sa.Column("done", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("execution_id", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_trigger_requests"),
        sa.UniqueConstraint(
            "job_id", "scheduled_at", name="uq_trigger_requests_job_id_scheduled_at"
        ),
    )
    op.create_index("ix_trigger_requests_taken_by_id", "trigger_requests", ["taken_by", "id"])


def downgrade() -> None:
    op.drop_table("trigger_requests")
    op.drop_table("scheduler_nodes")
    op.drop_table("job_logs")
    op.drop_index("ix_job_executions_status_node_id", table_name="job_executions")
    op.drop_index("ix_job_executions_scheduled_at", table_name="job_executions")
    op.drop_index("ix_job_executions_job_id_scheduled_at", table_name="job_executions")
    op.drop_table("job_executions")
    op.drop_table("job_schedules")
