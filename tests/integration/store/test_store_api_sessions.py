"""The dashboard's browser sessions in the store, on SQLite and PostgreSQL: one replica
opens a session, another finds it, logout on either ends it for both, and an expired one
is neither found nor kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import StoreFactory

T0 = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_sessions_are_shared_by_every_replica_and_end_everywhere(
        store_factory: StoreFactory) -> None:
    one, two = store_factory(), store_factory()
    one.open_api_session(id_digest="a" * 64, token_name="ops", token_digest="d" * 64,
                         created_at=T0, expires_at=T0 + HOUR, client="127.0.0.1")
    found = two.find_api_session("a" * 64, T0 + HOUR / 2)
    assert found is not None
    assert (found.token_name, found.token_digest, found.expires_at, found.client) == (
        "ops", "d" * 64, T0 + HOUR, "127.0.0.1")
    assert two.find_api_session("a" * 64, T0 + HOUR) is None  # expired at its expiry
    assert two.find_api_session("b" * 64, T0) is None
    assert two.end_api_session("a" * 64) is True
    assert one.find_api_session("a" * 64, T0) is None
    assert one.end_api_session("a" * 64) is False


def test_expired_sessions_go_as_new_ones_open(store_factory: StoreFactory) -> None:
    import sqlalchemy as sa

    from cronctl.store.tables import api_sessions

    store = store_factory()
    for n in range(3):
        store.open_api_session(id_digest=f"{n}" * 64, token_name="ops", token_digest="d" * 64,
                               created_at=T0, expires_at=T0 + HOUR, client=None)
    store.open_api_session(id_digest="f" * 64, token_name="ops", token_digest="d" * 64,
                           created_at=T0 + 2 * HOUR, expires_at=T0 + 3 * HOUR, client=None)
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        kept = conn.execute(sa.select(api_sessions.c.id_digest)).scalars().all()
    assert kept == ["f" * 64]
