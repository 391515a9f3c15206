"""The dashboard's browser sessions (see :class:`ApiSessions` in :mod:`cronctl.store.base`)."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection, aware
from cronctl.store.records import SessionRecord
from cronctl.store.tables import api_sessions


class ApiSessionRows(SqlConnection):
    """The session methods of the Store Protocol."""

    def open_api_session(self, *, id_digest: str, token_name: str, token_digest: str,
                         created_at: datetime, expires_at: datetime,
                         client: str | None) -> None:
        S = api_sessions.c
        created = aware(created_at, "created_at")
        with self._write() as conn:
            # the table holds only live sessions: the expired go as new ones come
            conn.execute(sa.delete(api_sessions).where(S.expires_at <= created))
            conn.execute(sa.insert(api_sessions).values(
                id_digest=id_digest, token_name=token_name[:64], token_digest=token_digest,
                created_at=created, expires_at=aware(expires_at, "expires_at"),
                client=None if client is None else client[:64]))

    def find_api_session(self, id_digest: str, now: datetime) -> SessionRecord | None:
        S = api_sessions.c
        q = sa.select(api_sessions).where(S.id_digest == id_digest,
                                          S.expires_at > aware(now, "now"))
        with self._read() as conn:
            row = conn.execute(q).first()
        if row is None:
            return None
        return SessionRecord(token_name=row.token_name, token_digest=row.token_digest,
                             created_at=row.created_at, expires_at=row.expires_at,
                             client=row.client)

    def end_api_session(self, id_digest: str) -> bool:
        with self._write() as conn:
            done = conn.execute(sa.delete(api_sessions)
                                .where(api_sessions.c.id_digest == id_digest))
        return bool(done.rowcount)
