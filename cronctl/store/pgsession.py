"""How long a PostgreSQL session of cronctl may wait before it gives up (stdlib only: the
read commands use it without SQLAlchemy).

A network path that silently drops packets (a frozen switch, a VM paused elsewhere, a
firewall that forgets the connection) sends no error: without timeouts a query waits for
TCP's own retransmission limit, ~15 minutes, and the node hangs without a word. Every
bound here is below a node's lease (``3 × heartbeat_interval``, 15 s by default), so the
node logs "store unreachable" and retries before another node takes over its work:

- ``connect_timeout``: a server that does not answer the connection at all;
- ``tcp_user_timeout``: data sent and not acknowledged (the path dropped it);
- TCP keepalives: a connection idle on our side while the server (or the path) died;
- ``statement_timeout`` (server side): a statement stuck behind a lock or a slow plan.

The server gets the same keepalive and user timeouts for its side of the session, so a
node cut off from the server loses its advisory lock (docs/behaviour.md#durability-and-clusters)
within seconds, not after the kernel's two hours.
"""

from __future__ import annotations

CONNECT_TIMEOUT_S = 5
TCP_USER_TIMEOUT_MS = 8000
KEEPALIVE_IDLE_S = 3
KEEPALIVE_INTERVAL_S = 1
KEEPALIVE_COUNT = 3
STATEMENT_TIMEOUT_MS = 10_000

_SERVER_OPTIONS = (
    f"-c statement_timeout={STATEMENT_TIMEOUT_MS} "
    f"-c tcp_keepalives_idle={KEEPALIVE_IDLE_S} "
    f"-c tcp_keepalives_interval={KEEPALIVE_INTERVAL_S} "
    f"-c tcp_keepalives_count={KEEPALIVE_COUNT} "
    f"-c tcp_user_timeout={TCP_USER_TIMEOUT_MS}")


def session_args(application_name: str, user_options: str | None = None) -> dict[str, object]:
    """libpq connection parameters for one of cronctl's sessions. ``user_options`` (an
    ``options`` parameter the user wrote in the URL) comes after ours, so a setting the
    user chose there wins."""
    options = _SERVER_OPTIONS if not user_options else f"{_SERVER_OPTIONS} {user_options}"
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "application_name": application_name,
        "keepalives": 1,
        "keepalives_idle": KEEPALIVE_IDLE_S,
        "keepalives_interval": KEEPALIVE_INTERVAL_S,
        "keepalives_count": KEEPALIVE_COUNT,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
        "options": options,
    }


__all__ = ["CONNECT_TIMEOUT_S", "STATEMENT_TIMEOUT_MS", "session_args"]
