"""When the command supervisor (:mod:`cronctl.dispatch.supervisor`) ends this node's
commands: the timing rule of docs/liveness.md, a node that cannot confirm its liveness
ends its own attempts before any peer may declare it dead.

Only where a live-looking node can be taken over: on PostgreSQL another node takes over
a node whose lock is free and whose heartbeat is older than ``LOCK_GRACE``, or whose
heartbeat is older than ``ttl`` even while its session lock is held (see
CONTRIBUTING.md). On SQLite a node is dead only once its process is gone, and then its
commands die with it (parent-death signal, and the supervisor's pipe closes): a frozen
scheduler there is never taken over, so its commands are left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from cronctl.dispatch.command import CommandDispatcher
from cronctl.store.base import Store
from cronctl.store.liveness import LOCK_GRACE, RESTART_GRACE

MIN_MARGIN = 1.0  # seconds
# Seconds between the supervisor's short limit and the others' lock grace: its own wake-up
# and the SIGKILL (both counted from when the last accepted beat was sent, which is before
# the server stamped it).
FENCE_MARGIN = 0.5


@dataclass(frozen=True)
class Limits:
    """The supervisor's three limits (seconds since the last accepted beat was sent)."""

    ok: float  # the last beat confirmed the lock, none under way: inside the lease
    doubt: float  # a beat in flight or failed, or stamped without the lock: inside LOCK_GRACE
    restart: float  # a failure proved a server restart: inside RESTART_GRACE and the lease


def supervision_limit(ttl: timedelta, beat_every: float) -> float:
    """Seconds without an accepted heartbeat after which the supervisor ends the commands
    of a node whose lock was confirmed (a frozen scheduler keeps its session: only the
    lease rule can take it over): the lease (``ttl``) minus a margin of a quarter of it,
    at least two beats and a second. The margin covers the kill; the other nodes' own
    check interval only makes the takeover later."""
    lease = ttl.total_seconds()
    margin = max(lease / 4, 2 * beat_every, MIN_MARGIN)
    return max(beat_every, lease - margin)


def limits(ttl: timedelta, beat_every: float) -> Limits:
    """The three limits for a lease of ``ttl`` and beats every ``beat_every`` seconds (the
    numbers: docs/liveness.md)."""
    ok = supervision_limit(ttl, beat_every)
    doubt = min(ok, LOCK_GRACE.total_seconds() - FENCE_MARGIN)
    restart = max(doubt, min(ok, RESTART_GRACE.total_seconds() - FENCE_MARGIN))
    return Limits(ok=ok, doubt=doubt, restart=restart)


def supervised(dispatcher: object, store: Store, node_id: str, ttl: timedelta,
               beat_every: float, heartbeat: Callable[[], None]) -> Callable[[], None]:
    """``heartbeat``, with the supervisor of ``dispatcher``'s commands told that a beat is
    under way, then whether the store accepted it (and when it was sent) or it failed;
    the supervisor starts with the first beat (and stops with the dispatcher's
    ``shutdown``). Without PostgreSQL (or without a command dispatcher) ``heartbeat``
    unchanged."""
    commands = getattr(dispatcher, "commands", dispatcher)
    if store.beat_interval is None or not isinstance(commands, CommandDispatcher):
        return heartbeat
    lim = limits(ttl, beat_every)

    def beat() -> None:
        commands.supervise(lim.ok, lim.doubt, lim.restart)  # (once; later calls find it)
        supervisor = commands.supervisor
        if supervisor is None:  # (shut down)
            heartbeat()
            return
        sent = time.monotonic()
        supervisor.beating()
        try:
            heartbeat()
        except BaseException:
            supervisor.failed(restart=store.lock_evidence(node_id)[1])
            raise
        supervisor.beat(sent, locked=store.lock_evidence(node_id)[0])

    return beat


__all__ = ["FENCE_MARGIN", "Limits", "limits", "supervised", "supervision_limit"]
