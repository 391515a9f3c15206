"""Which node of a cluster tries a single_instance job's planned instants first.

Every node has every job and tries each of its instants; the database elects one (the
row's unique key). Tried at the same moment, the nodes' inserts of one row wait for each
other's transactions: with 1,000 such jobs a second on three nodes on PostgreSQL the
scheduler threads spent three quarters of their time waiting, fires came seconds late
and, late, found the previous instant's guard still held (``bench_scale cluster``: two of
three instants skipped ``overlap``). So each job has a home: the live node with the
highest rendezvous hash of (job id, node id), the same on every node that sees the same
live nodes, and ~1/n of the jobs on each. The home node tries the job's instants on time,
the others :data:`TAKEOVER` later, when the home's row is usually committed (losing to it
then costs no wait). If the home node is gone, frozen or slow, another takes the instant
TAKEOVER late. The election stays the database's: nodes that disagree about who is live
only contend, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta

from cronctl.core import SchedulerCore
from cronctl.jobs.model import JobDefinition, Mode

TAKEOVER = timedelta(milliseconds=500)
_ON_TIME = timedelta(0)


def home_of(job_id: str, nodes: Iterable[str]) -> str:
    """The home of ``job_id`` among ``nodes`` (rendezvous hashing: when a node joins or
    leaves, only the jobs whose home it is or becomes move)."""
    return max(nodes, key=lambda node: (_weight(job_id, node), node))


def _weight(job_id: str, node: str) -> bytes:
    return hashlib.blake2b(f"{job_id}\0{node}".encode(), digest_size=8).digest()


class Homes:
    """This node's view: the live nodes (set by the liveness thread at each check) and,
    for the scheduler thread, how long after its instant this node tries a job's fire."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self._live: frozenset[str] = frozenset()
        self._delays: dict[str, timedelta] = {}  # for ``_for``: job id -> delay
        self._for: frozenset[str] = frozenset()
        self._core: SchedulerCore | None = None

    def attach(self, core: SchedulerCore) -> None:
        """Set ``core.away`` to :meth:`delay` while this node has peers, to None while
        it is alone (a push then costs no call: 1,000 fires a second push 1,000 times)."""
        self._core = core

    def live_are(self, nodes: Iterable[str]) -> None:
        """The nodes alive now (a new set only when it changed: the cache stays)."""
        live = frozenset(nodes)
        if live != self._live:
            self._live = live
            if self._core is not None:  # (one attribute write: read by the core's thread)
                self._core.away = self.delay if len(live) > 1 else None

    def delay(self, job: JobDefinition) -> timedelta:
        """0 on the job's home, on a node alone, or for a job every node runs; else
        :data:`TAKEOVER`."""
        live = self._live
        if job.mode is not Mode.SINGLE_INSTANCE or len(live) < 2 or self.node_id not in live:
            return _ON_TIME
        if live is not self._for:  # (a read of the reference: no lock with the setter)
            self._delays, self._for = {}, live
        got = self._delays.get(job.id)
        if got is None:
            got = self._delays[job.id] = (
                _ON_TIME if home_of(job.id, live) == self.node_id else TAKEOVER)
        return got


__all__ = ["TAKEOVER", "Homes", "home_of"]
