"""The audit log of the HTTP API: one row per ``POST`` (see :class:`AuditLog` in
:mod:`cronctl.store.base`)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection, aware
from cronctl.store.records import AuditRecord
from cronctl.store.tables import audit_log

# What one column holds at most: a longer value is cut (an error message, a client).
_TEXT_LIMIT = 2000


class AuditLog(SqlConnection):
    """The audit methods of the Store Protocol."""

    def record_audit(self, *, at: datetime, actor: str, role: str | None, action: str,
                     target: str | None, detail: str | None, status: int, result: str,
                     client: str | None) -> int:
        values = dict(at=aware(at, "at"), actor=actor[:200], role=role, action=action[:32],
                      target=None if target is None else target[:200],
                      detail=None if detail is None else detail[:_TEXT_LIMIT],
                      status=int(status), result=result[:_TEXT_LIMIT],
                      client=None if client is None else client[:64])
        with self._write() as conn:
            row = conn.execute(sa.insert(audit_log).values(**values)
                               .returning(audit_log.c.id)).scalar_one()
        return int(row)

    def list_audit(self, *, since: datetime | None = None, limit: int | None = 50
                   ) -> list[AuditRecord]:
        A = audit_log.c
        q = sa.select(audit_log).order_by(A.at.desc(), A.id.desc())
        if since is not None:
            q = q.where(A.at >= aware(since, "since"))
        if limit is not None:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
        return [AuditRecord(id=int(r.id), at=r.at, actor=r.actor, role=r.role,
                            action=r.action, target=r.target, detail=r.detail,
                            status=int(r.status), result=r.result, client=r.client)
                for r in rows]
