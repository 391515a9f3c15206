"""``logs`` and ``GET /api/v1/executions/{id}/logs``: an execution with its job log lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cronctl.views.common import execution_json, line_json

if TYPE_CHECKING:
    from cronctl.store.base import ExecutionRecord, LogLine
    from cronctl.views import shapes


def logs_document(record: ExecutionRecord, lines: Sequence[LogLine]) -> shapes.Logs:
    """``logs EXECUTION_ID --json``; the API's ``?after_seq=`` gives the lines after it."""
    return {"execution": execution_json(record), "lines": [line_json(x) for x in lines]}


def job_logs_document(newest: ExecutionRecord, records: Sequence[ExecutionRecord],
                      tagged: Sequence[tuple[ExecutionRecord, LogLine]]) -> dict[str, Any]:
    """``logs --job JOB --json``: the lines of the job's recent executions, oldest first."""
    return {
        "execution": execution_json(newest),
        "executions": [execution_json(r) for r in records],
        "lines": [{**line_json(line), "execution_id": r.id} for r, line in tagged],
    }
