"""``audit --json``: who did what through the HTTP API, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cronctl.views.common import iso_z

if TYPE_CHECKING:
    from cronctl.store.records import AuditRecord


def audit_json(record: AuditRecord) -> dict[str, Any]:
    return {"id": record.id, "at": iso_z(record.at), "actor": record.actor,
            "role": record.role, "action": record.action, "target": record.target,
            "detail": record.detail, "status": record.status, "result": record.result,
            "client": record.client}


def audit_document(records: Sequence[AuditRecord]) -> dict[str, Any]:
    return {"audit": [audit_json(r) for r in records]}
