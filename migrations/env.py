"""alembic environment for cronctl.

cronctl runs alembic programmatically (``cronctl db upgrade``, ``auto_migrate``) and
hands over an open connection in ``config.attributes["connection"]``, already inside a
transaction that holds the migration lock. For development, ``alembic`` on the command
line works too: set ``sqlalchemy.url`` or ``$CRONCTL_DATABASE_URL``.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy.engine import Connection

from cronctl.store.tables import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("CRONCTL_DATABASE_URL")
    if not url:
        raise SystemExit("set sqlalchemy.url or CRONCTL_DATABASE_URL")
    return url


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
    else:
        from cronctl.store.engine import make_engine, writer

        engine = make_engine(_url())
        try:
            with writer(engine).begin() as conn:
                _run(conn)
        finally:
            engine.dispose()
