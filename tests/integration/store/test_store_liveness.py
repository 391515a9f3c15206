"""Node liveness in the Store contract (SPEC section 4, "Liveness never trusts a node's
wall clock"), with real processes on SQLite and PostgreSQL: a node registered by a live
process is live whatever its heartbeats say about the time; killed with SIGKILL it is
dead within a moment (SQLite: its process is gone; PostgreSQL: the server released its
lock), its guard locks can be released and its id taken over; two live processes never
hold one node id."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from conftest import StoreFactory
from test_store_contract import race

from cronctl import processes
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import NodeIdInUse, Store, occurrence_id
from cronctl.store.base import NewExecution, job_lock

TTL = timedelta(seconds=30)
NOW = datetime.now(UTC)

NODE_PROCESS = textwrap.dedent('''
    import os, socket, sys, time
    from datetime import UTC, datetime, timedelta
    from cronctl import processes
    from cronctl.store import open_store
    store = open_store(sys.argv[1], node_id=sys.argv[2])
    store.register_node(sys.argv[2], socket.gethostname(), os.getpid(), datetime.now(UTC),
                        ttl=timedelta(seconds=30),
                        process_start=processes.identity(os.getpid()))
    print("registered", flush=True)
    time.sleep(120)
''')


class NodeProcess:
    """A process that registers ``node_id`` the way ``cronctl run`` does, then waits."""

    def __init__(self, url: str, node_id: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", NODE_PROCESS, url, node_id],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "registered"

    def kill(self) -> float:
        """SIGKILL it; the monotonic time it was gone."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(5)
        return time.monotonic()


@pytest.fixture
def node_process(store_url: str) -> Iterator[list[NodeProcess]]:
    started: list[NodeProcess] = []
    yield started
    for p in started:
        if p.proc.poll() is None:
            p.kill()
        assert p.proc.stdout is not None
        p.proc.stdout.close()


def _ids(nodes: list[object]) -> list[str]:
    return [n.node_id for n in nodes]  # type: ignore[attr-defined]


def _me(store: Store, node_id: str, at: datetime = NOW) -> None:
    store.register_node(node_id, socket.gethostname(), os.getpid(), at, ttl=TTL,
                        process_start=processes.identity(os.getpid()))


def test_a_killed_node_is_dead_at_once_and_its_id_can_be_taken(
        store: Store, store_url: str, node_process: list[NodeProcess]) -> None:
    victim = NodeProcess(store_url, "victim")
    node_process.append(victim)
    assert _ids(store.live_nodes(NOW, TTL)) == ["victim"]
    with pytest.raises(NodeIdInUse, match="victim.*in use by a live scheduler"):
        _me(store, "victim")
    gone = victim.kill()
    while "victim" not in _ids(store.dead_nodes(datetime.now(UTC), TTL)):
        assert time.monotonic() - gone < 3.0, "the killed node is still judged alive"
        time.sleep(0.05)
    assert store.live_nodes(datetime.now(UTC), TTL) == []
    _me(store, "victim")  # its id is free
    [node] = store.live_nodes(datetime.now(UTC), TTL)
    assert (node.node_id, node.pid) == ("victim", os.getpid())


def test_two_live_processes_never_hold_one_node_id(
        store_factory: StoreFactory, store_url: str, node_process: list[NodeProcess]) -> None:
    node_process.append(NodeProcess(store_url, "busy"))
    with pytest.raises(NodeIdInUse):
        _me(store_factory(), "busy")

    def register(s: Store, i: int) -> bool:
        try:
            s.register_node("same", f"host-{i}", 1000 + i, NOW, ttl=TTL)
        except NodeIdInUse:
            return False
        return True

    assert sorted(race(store_factory, 4, register)) == [False, False, False, True]


def test_a_live_node_whose_clock_steps_is_never_dead(store: Store, backend: str) -> None:
    _me(store, "me")
    # Heartbeats stamped by a clock stepped back an hour, then forward a day; other
    # nodes judge with their own clock (or the server's).
    assert store.heartbeat("me", NOW - timedelta(hours=1), host=socket.gethostname(),
                           pid=os.getpid())
    for judge in (NOW, NOW + timedelta(minutes=5), NOW - timedelta(hours=2)):
        assert _ids(store.live_nodes(judge, TTL)) == ["me"], judge
        assert store.dead_nodes(judge, TTL) == []
    assert store.heartbeat("me", NOW + timedelta(days=1))
    assert _ids(store.live_nodes(NOW, TTL)) == ["me"]
    [node] = store.live_nodes(NOW, TTL)
    if backend == "postgresql":  # stamped by the server's clock, not the one passed in
        assert abs(node.heartbeat_at - datetime.now(UTC)) < timedelta(minutes=1)
    else:
        assert node.heartbeat_at == NOW + timedelta(days=1)


def test_a_restart_of_the_same_process_takes_its_row_back(store: Store) -> None:
    _me(store, "me")
    _me(store, "me", NOW + timedelta(seconds=1))
    node = store.get_node("me")
    assert node is not None and node.started_at == NOW + timedelta(seconds=1)
    assert node.process_start == processes.identity(os.getpid())
    store.unregister_node("me")
    assert store.get_node("me") is None and not store.heartbeat("me", NOW)
    store.unregister_node("me")  # idempotent


def test_rows_without_a_process_identity_age_by_their_heartbeat(store: Store,
                                                                 backend: str) -> None:
    # What a cronctl before liveness locks wrote: only the heartbeat age can tell.
    store.register_node("old", "elsewhere", 4242, NOW - timedelta(minutes=5), ttl=TTL)
    if backend == "sqlite":
        assert _ids(store.dead_nodes(NOW, TTL)) == ["old"]
        store.register_node("old", "host-b", 1, NOW, ttl=TTL)  # dead: taken over
    else:  # the server stamped it just now: live until its heartbeat is older than ttl
        assert _ids(store.live_nodes(NOW, TTL)) == ["old"]
        assert _ids(store.dead_nodes(NOW, timedelta(0))) == ["old"]


def test_locks_of_a_killed_node_are_released(store: Store, store_url: str,
                                             node_process: list[NodeProcess]) -> None:
    victim = NodeProcess(store_url, "victim")
    node_process.append(victim)
    _me(store, "me")

    def guarded(job: str, node: str) -> None:
        [got] = store.insert_guarded([NewExecution(
            job_id=job, occurrence_id=occurrence_id(job, NOW), scheduled_at=NOW, attempt=1,
            origin=Origin.CRON, node_id=node, scope_node=None, fencing_token=1,
            status=ExecutionStatus.RUNNING, started_at=NOW, created_at=NOW,
            locks=(job_lock(job),))])
        assert isinstance(got, int)

    guarded("theirs", "victim")
    guarded("mine", "me")
    guarded("nobodys", "unregistered")
    assert store.release_stale_locks(NOW, TTL) == 1  # no node row: gone
    gone = victim.kill()
    while store.release_stale_locks(datetime.now(UTC), TTL) == 0:
        assert time.monotonic() - gone < 3.0
        time.sleep(0.05)
    assert [(g.key, g.node_id) for g in store.guard_locks()] == [(job_lock("mine"), "me")]


@pytest.mark.postgres
def test_a_lock_held_by_a_lingering_session_does_not_stop_heartbeats(
        postgres_url: str) -> None:
    """After a network cut the server may keep the node's old session (and its lock) for
    a while: the heartbeat is stamped meanwhile, and the lock taken back once free."""
    import psycopg

    from cronctl.store import open_store

    store = open_store(postgres_url, node_id="n")
    libpq = postgres_url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        _me(store, "n")
        key = "hashtextextended('cronctl-node:' || 'n', 0)"
        with psycopg.connect(libpq, autocommit=True) as admin:
            # The node's session goes away; another one (the lingering one) holds the lock.
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = 'cronctl-node' AND datname = "
                          "current_database()")
            time.sleep(0.2)
            assert admin.execute(f"SELECT pg_try_advisory_lock({key})").fetchone() == (True,)
            before = store.get_node("n")
            assert store.heartbeat("n", NOW, host=socket.gethostname(), pid=os.getpid())
            after = store.get_node("n")
            assert before is not None and after is not None
            assert after.heartbeat_at > before.heartbeat_at
            admin.execute(f"SELECT pg_advisory_unlock({key})")
        assert store.heartbeat("n", NOW, host=socket.gethostname(), pid=os.getpid())
        with psycopg.connect(libpq, autocommit=True) as admin:  # the node holds it again
            assert admin.execute(f"SELECT pg_try_advisory_lock({key})").fetchone() == (False,)
    finally:
        store.close()


def test_server_now_is_the_servers_clock_on_postgresql_and_none_on_sqlite(
        store: Store, backend: str) -> None:
    """The reference each node compares its wall clock with (SPEC section 4, "Clocks")."""
    before = datetime.now(UTC)
    got = store.server_now()
    after = datetime.now(UTC)
    if backend == "sqlite":
        assert got is None
        return
    assert got is not None and got.utcoffset() == timedelta(0)
    # the same host: the reading lies inside the round trip (its clock_timestamp(), not
    # the transaction's start)
    assert before - timedelta(milliseconds=50) <= got <= after + timedelta(milliseconds=50)
    assert store.server_now() is not None
    assert store.server_now() > got  # type: ignore[operator]
