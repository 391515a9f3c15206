"""When the command supervisor (:mod:`cronctl.dispatch.supervisor`) ends this node's
commands: the timing rule of SPEC section 4, "a command attempt also ends before its
node's lease can be taken over when its scheduler is alive but frozen".

Only where a live-looking node can be taken over: on PostgreSQL another node takes over
a node whose heartbeat is older than ``ttl`` even while its session lock is held (see
CONTRIBUTING.md). On SQLite a node is dead only once its process is gone, and then its
commands die with it (parent-death signal, and the supervisor's pipe closes): a frozen
scheduler there is never taken over, so its commands are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from cronctl.dispatch.command import CommandDispatcher
from cronctl.store.base import Store

MIN_MARGIN = 1.0  # seconds


def supervision_limit(ttl: timedelta, beat_every: float) -> float:
    """Seconds without an accepted heartbeat after which the supervisor ends the commands:
    the lease (``ttl``) minus a margin of a quarter of it, at least two beats and a
    second. The margin covers what lies between the server stamping a beat and the
    supervisor hearing of it (the commit, the pipe), and the kill itself; the other
    nodes' own check interval only makes the takeover later."""
    lease = ttl.total_seconds()
    margin = max(lease / 4, 2 * beat_every, MIN_MARGIN)
    return max(beat_every, lease - margin)


def supervised(dispatcher: object, store: Store, ttl: timedelta, beat_every: float,
               heartbeat: Callable[[], None]) -> Callable[[], None]:
    """``heartbeat``, followed by a beat to the supervisor of ``dispatcher``'s commands
    once the store accepted it; the supervisor starts with the first accepted beat (and
    stops with the dispatcher's ``shutdown``). Without PostgreSQL (or without a command
    dispatcher) ``heartbeat`` unchanged."""
    commands = getattr(dispatcher, "commands", dispatcher)
    if store.beat_interval is None or not isinstance(commands, CommandDispatcher):
        return heartbeat
    limit = supervision_limit(ttl, beat_every)

    def beat() -> None:
        heartbeat()  # raises when the store refused it: then no beat
        commands.supervise(limit)  # (once; later calls find it running)
        commands.beat()

    return beat


__all__ = ["supervised", "supervision_limit"]
