"""Rows of the SQL store's tables as the Store Protocol's records."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store.records import ExecutionRecord, NodeRecord, ScheduleState, TriggerRequest


def schedule_row(row: sa.Row[Any]) -> ScheduleState:
    m = row._mapping
    return ScheduleState(
        job_id=m["job_id"],
        definition=json.loads(m["definition"] or "{}"),
        cursor=m["cursor"],
        paused=bool(m["paused"]),
        fencing=int(m["fencing_token"]),
        updated_at=m["updated_at"],
    )


def execution_row(row: sa.Row[Any]) -> ExecutionRecord:
    m = row._mapping
    return ExecutionRecord(
        id=int(m["id"]),
        job_id=m["job_id"],
        occurrence_id=m["occurrence_id"],
        scheduled_at=m["scheduled_at"],
        attempt=int(m["attempt"]),
        origin=Origin(m["origin"]),
        status=ExecutionStatus(m["status"]),
        node_id=m["node_id"],
        scope_node=m["scope"] or None,
        fencing_token=None if m["fencing_token"] is None else int(m["fencing_token"]),
        target=m["target"],
        created_at=m["created_at"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        error=m["error"],
        progress_done=m["progress_done"],
        progress_total=m["progress_total"],
        progress_message=m["progress_message"],
        cancel_requested=bool(m["cancel_requested"]),
        pgid=m["pgid"],
        process_start=m["process_start"],
    )


def node_row(row: sa.Row[Any]) -> NodeRecord:
    m = row._mapping
    return NodeRecord(m["node_id"], m["host"], int(m["pid"]), m["started_at"], m["heartbeat_at"],
                      m["process_start"])


def trigger_row(row: sa.Row[Any]) -> TriggerRequest:
    m = row._mapping
    return TriggerRequest(
        id=int(m["id"]),
        job_id=m["job_id"],
        origin=Origin(m["origin"]),
        scheduled_at=m["scheduled_at"],
        requested_at=m["requested_at"],
        taken_by=m["taken_by"],
        taken_at=m["taken_at"],
        execution_id=None if m["execution_id"] is None else int(m["execution_id"]),
        error=m["error"],
        done=bool(m["done"]),
    )


__all__ = ["execution_row", "node_row", "schedule_row", "trigger_row"]
