"""Nemeses the kill rotation of :mod:`test_chaos` does not cover (issue 22 item 8):
three real ``cronctl run`` nodes on one database running command jobs
(:mod:`nemesis_harness`: single_instance ``solo-*`` of 3 s every 5 s, every_instance
``each-*`` of 0.3 s every 2 s), each node in its own PID, mount and UTS namespace with a
boot id of its own when this process may create them (root: a peer then cannot reach
another node's children, as on separate hosts). The faults (:mod:`nemesis_faults`):

- PostgreSQL (a private server): the scheduler process alone of a node running a
  command frozen (SIGSTOP) past its lease, then resumed; its whole process tree frozen
  (a paused VM; xfail, see the test); all its sessions ended by the server
  (``pg_terminate_backend``) every few seconds, and in a burst every 0.2 s for 4 s; its
  TCP path to the server silent (a proxy that forwards nothing, closes nothing) 30 s;
- SQLite on an 8 MB tmpfs that a filler file fills up for 8 s, then frees.

The audit reads what the commands themselves wrote as well as the rows: no two attempts
of one occurrence ran at the same time, every planned instant has an execution or a skip
record, no row is left running after the clean stop, every ``succeeded`` attempt wrote
its end, no command ran without a row (and on SQLite ``PRAGMA integrity_check`` is ok).

``make test`` runs each round with about one fault (10 s); ``make chaos`` each for
``CRONCTL_CHAOS_SECONDS``. The figures are printed (``pytest -s``) and written to
``nemesis-<name>.json`` in the test's directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from nemesis_faults import (
    FreezableProxy,
    NetworkHost,
    SmallDisk,
    client_ports,
    terminate_sessions,
)
from nemesis_harness import Cluster, audit, check, fresh_solo, namespaces_work, running_solo, tree
from private_pg import PrivatePostgres

from cronctl.store import Store, open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(1800)]

SECONDS = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "20"))
# make test: a round of about one fault each (the module stays near 2.5 min in all)
ROUND = SECONDS if SECONDS >= 60 else min(SECONDS, 10.0)
NODES = ("n1", "n2", "n3")
FROZEN = 6.0  # seconds a node stays frozen: past its lease (ttl 3 s with heartbeats of 1 s)
PATH_FROZEN = 30.0  # seconds the proxy forwards nothing
PATH_SILENT = 15.0  # seconds a node's packets to the server are dropped (past its lease)
DISK_FULL = 8.0  # seconds the SQLite disk stays full

Nemesis = Callable[[Cluster, Store], dict[str, Any]]


@dataclass(frozen=True)
class PrivateDatabase:
    """A fresh database of the module's private server: ``url`` for cronctl, ``admin``
    for psycopg, ``port`` of the server."""

    url: str
    admin: str
    port: int


@pytest.fixture(scope="module")
def private_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePostgres]:
    try:
        # nodes in network namespaces of their own reach it from 10.x (NetworkHost)
        server = PrivatePostgres(tmp_path_factory.mktemp("pg"), trust_net="10.0.0.0/8")
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"PostgreSQL server binaries required in CI: {exc}")
        pytest.skip(str(exc))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def private_pg(private_server: PrivatePostgres, request: pytest.FixtureRequest
               ) -> PrivateDatabase:
    """A database of its own for each round (node locks are per database) on the
    module's server (started once: initdb takes seconds)."""
    import psycopg

    name = f"nemesis_{request.node.name.removeprefix('test_nemesis_')}"
    base = private_server.url.rsplit("/", 1)[0]
    admin = base.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(f"{admin}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return PrivateDatabase(f"{base}/{name}", f"{admin}/{name}", private_server.port)


def run_round(root: Path, url: str, nemesis: Nemesis, *, seconds: float = ROUND,
              namespaces: bool | None = None, urls: dict[str, str] | None = None,
              prefixes: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Start the nodes (``urls`` overrides the database URL of some, ``prefixes`` is put
    before the command of some), apply ``nemesis`` until ``seconds`` passed, let the
    cluster settle, stop it cleanly, audit."""
    cluster = Cluster(root, url, namespaces_work() if namespaces is None else namespaces,
                      prefixes=prefixes or {})
    cluster.setup(NODES, urls or {})
    for name in NODES:
        cluster.start(name)
    observer = open_store(url, node_id="nemesis-observer")
    faults: list[dict[str, Any]] = []
    try:
        for name in NODES:
            assert cluster.ready(name), cluster.text(name)[-3000:]
        began = datetime.now(UTC)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            faults.append(nemesis(cluster, observer))
        time.sleep(4)  # the last takeover and retry settle while every node is live
        ended = datetime.now(UTC)
    finally:
        codes = cluster.stop_all()
    try:
        figures = audit(root, observer, began, ended, codes)
    finally:
        observer.close()
    figures.update(seconds=seconds, namespaces=cluster.namespaces, faults=len(faults),
                   fault_log=faults)
    return figures


def _report(figures: dict[str, Any], root: Path, name: str) -> None:
    (root / f"nemesis-{name}.json").write_text(json.dumps(figures, indent=2))
    print(f"\nnemesis {name}: {json.dumps(figures)}")


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def freeze_scheduler(cluster: Cluster, store: Store) -> dict[str, Any]:
    """SIGSTOP the scheduler process of a node running a single_instance command (not
    its children, not its supervisor) past its lease, then SIGCONT."""
    victim = fresh_solo(cluster.log)
    if victim is None:
        return {"victim": None}
    pid = cluster.nodes[victim].scheduler_pid()
    os.kill(pid, signal.SIGSTOP)
    time.sleep(FROZEN)
    os.kill(pid, signal.SIGCONT)
    time.sleep(1)
    return {"victim": victim, "frozen_s": FROZEN}


def freeze_tree(cluster: Cluster, store: Store) -> dict[str, Any]:
    """SIGSTOP every process of a node running a single_instance command (the scheduler,
    its supervisor, its commands: a paused VM) past its lease, then SIGCONT them all."""
    victim = fresh_solo(cluster.log)
    if victim is None:
        return {"victim": None}
    proc = cluster.nodes[victim].proc
    assert proc is not None
    stopped: list[int] = []
    for _ in range(3):  # a process forked while we walked is caught by the next walk
        fresh = [p for p in tree(proc.pid) if p not in stopped]
        _signal_all(fresh, signal.SIGSTOP)
        stopped += fresh
    time.sleep(FROZEN)
    # A paused VM resumes its processes in no particular order; the commands first (the
    # deepest processes first) is one of those orders, and the one that shows the gap.
    _signal_all(stopped[::-1], signal.SIGCONT)
    time.sleep(1)
    return {"victim": victim, "frozen_s": FROZEN, "processes": len(stopped)}


def test_nemesis_scheduler_frozen(tmp_path: Path, private_pg: PrivateDatabase) -> None:
    figures = run_round(tmp_path / "run", private_pg.url, freeze_scheduler)
    _report(figures, tmp_path, "scheduler-frozen")
    check(figures)
    assert figures["lost"] > 0, figures  # the freeze really was taken over
    # the node's own instants due while it was frozen are not blamed on a command that
    # may have ended meanwhile (misfire, the scheduler held up), never `overlap`
    assert figures["overlap_skips_nothing_ran"] == 0, figures


@pytest.mark.xfail(strict=True, reason=(
    "SPEC section 4 promises that a command ends before its lease can be taken over also "
    "under a VM pause, but when a node's whole process tree (its supervisor included) is "
    "frozen past the lease nothing on that node can end the command: another node takes "
    "the occurrence over (lost, attempt 2) and, on resume, the old command runs on beside "
    "its successor until the woken supervisor kills it (or it ends first)"))
def test_nemesis_tree_frozen(tmp_path: Path, private_pg: PrivateDatabase) -> None:
    if not namespaces_work():
        pytest.skip("needs a PID namespace per node (root): on one host a successor's "
                    "recovery may end the frozen attempt's process group itself")
    figures = run_round(tmp_path / "run", private_pg.url, freeze_tree)
    _report(figures, tmp_path, "tree-frozen")
    check(figures)
    assert figures["lost"] > 0, figures


def test_nemesis_sessions_terminated(tmp_path: Path, private_pg: PrivateDatabase) -> None:
    """``pg_terminate_backend`` of every session of one node (found by the client ports
    its processes hold), every few seconds."""
    admin = private_pg.admin
    rng = random.Random(int(os.environ.get("CRONCTL_CHAOS_SEED", "7")))

    def terminate(cluster: Cluster, store: Store) -> dict[str, Any]:
        time.sleep(rng.uniform(2.0, 4.0))
        victim = running_solo(store, timeout=2) or rng.choice(NODES)
        proc = cluster.nodes[victim].proc
        assert proc is not None
        ports = client_ports(proc.pid, private_pg.port)
        return {"victim": victim, "terminated": terminate_sessions(admin, ports)}

    figures = run_round(tmp_path / "run", private_pg.url, terminate)
    _report(figures, tmp_path, "sessions-terminated")
    check(figures)
    assert sum(f["terminated"] for f in figures["fault_log"]) > 0, figures


def test_nemesis_sessions_terminated_burst(tmp_path: Path,
                                          private_pg: PrivateDatabase) -> None:
    """Every session of a node running a command terminated every 0.2 s for 4 s: its
    node lock cannot be held, and its beats mostly fail."""
    admin = private_pg.admin

    def burst(cluster: Cluster, store: Store) -> dict[str, Any]:
        victim = fresh_solo(cluster.log) or "n1"
        proc = cluster.nodes[victim].proc
        assert proc is not None
        terminated = 0
        until = time.monotonic() + 4
        while time.monotonic() < until:
            terminated += terminate_sessions(admin, client_ports(proc.pid, private_pg.port))
            time.sleep(0.2)
        time.sleep(1)
        return {"victim": victim, "terminated": terminated}

    figures = run_round(tmp_path / "run", private_pg.url, burst)
    _report(figures, tmp_path, "sessions-terminated-burst")
    check(figures)
    assert sum(f["terminated"] for f in figures["fault_log"]) > 0, figures


def test_nemesis_frozen_tcp_path(tmp_path: Path, private_pg: PrivateDatabase) -> None:
    """Every node reaches the database through a proxy of its own (all equally slow, so
    each wins its share of the single_instance races); the proxy of a node running a
    single_instance command stops forwarding, without closing anything, for 30 s, then
    forwards again."""
    proxies = {name: FreezableProxy(private_pg.port) for name in NODES}
    urls = {name: private_pg.url.replace(f":{private_pg.port}/", f":{proxy.port}/")
            for name, proxy in proxies.items()}

    def silence(cluster: Cluster, store: Store) -> dict[str, Any]:
        victim = fresh_solo(cluster.log, timeout=15) or "n1"
        proxies[victim].freeze()
        time.sleep(PATH_FROZEN)
        proxies[victim].resume()
        time.sleep(3)
        return {"victim": victim, "silent_s": PATH_FROZEN}

    try:
        figures = run_round(tmp_path / "run", private_pg.url, silence, urls=urls)
    finally:
        for proxy in proxies.values():
            proxy.close()
    _report(figures, tmp_path, "frozen-tcp-path")
    check(figures)
    assert figures["lost"] > 0, figures  # the silent node's attempt was taken over


def _network_hosts() -> list[NetworkHost]:
    """One network namespace per node, or a skip (a failure in CI) naming why not."""
    hosts: list[NetworkHost] = []
    try:
        if os.geteuid() != 0:
            raise PermissionError("network namespaces need root")
        for i, _ in enumerate(NODES):
            hosts.append(NetworkHost(i))
    except (OSError, subprocess.SubprocessError) as exc:
        for host in hosts:
            host.close()
        detail = getattr(exc, "stderr", b"") or b""
        reason = f"cannot make a network namespace here: {exc} {detail!r}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)
    return hosts


def _first_after(cluster: Cluster, name: str, needle: str, seen: int, timeout: float
                 ) -> float | None:
    """Seconds until the node's log holds more than ``seen`` lines with ``needle``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if cluster.text(name).count(needle) > seen:
            return round(time.monotonic() - began, 2)
        time.sleep(0.1)
    return None


def test_nemesis_silent_network_path(tmp_path: Path, private_pg: PrivateDatabase) -> None:
    """Every node runs in a network namespace of its own; the packets of a node running a
    single_instance command to the server are dropped (a blackhole route: no error, no
    reset, nothing acknowledged) past its lease, then flow again. The node notices within
    cronctl's PostgreSQL timeouts (statement, keepalive, TCP user timeout: below the
    lease), says "store unreachable" at once instead of hanging, and is back within ~2 s
    of the path's return (the probe's backoff is capped near the heartbeat)."""
    hosts = dict(zip(NODES, _network_hosts(), strict=True))
    urls = {name: private_pg.url.replace("@127.0.0.1:", f"@{host.gateway}:")
            for name, host in hosts.items()}
    prefixes = {name: host.prefix for name, host in hosts.items()}

    def silence(cluster: Cluster, store: Store) -> dict[str, Any]:
        victim = fresh_solo(cluster.log, timeout=15) or "n1"
        down = cluster.text(victim).count("store unreachable")
        back = cluster.text(victim).count("store reachable again")
        hosts[victim].silence()
        try:
            noticed = _first_after(cluster, victim, "store unreachable", down, PATH_SILENT)
            time.sleep(max(0.0, PATH_SILENT - (noticed or PATH_SILENT)))
        finally:
            hosts[victim].restore()
        returned = _first_after(cluster, victim, "store reachable again", back, 20)
        time.sleep(2)
        return {"victim": victim, "silent_s": PATH_SILENT, "noticed_after_s": noticed,
                "back_after_s": returned}

    try:
        figures = run_round(tmp_path / "run", private_pg.url, silence, urls=urls,
                            prefixes=prefixes)
    finally:
        for host in hosts.values():
            host.close()
    _report(figures, tmp_path, "silent-network-path")
    check(figures)
    for fault in figures["fault_log"]:
        # noticed below the lease's order (tcp_user_timeout 8 s, statement_timeout 10 s),
        # not after TCP's ~15 minutes of retransmissions
        assert fault["noticed_after_s"] is not None, figures
        assert fault["noticed_after_s"] <= 12, figures
        assert fault["back_after_s"] is not None and fault["back_after_s"] <= 8, figures


def test_nemesis_sqlite_disk_full(tmp_path: Path) -> None:
    """The SQLite database on a small tmpfs that a filler file fills up and that empties
    again; afterwards ``PRAGMA integrity_check`` is ok."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        disk = SmallDisk(tmp_path / "disk")
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    database = disk.path / "state.db"

    def fill(cluster: Cluster, store: Store) -> dict[str, Any]:
        time.sleep(3)
        written = disk.fill()
        time.sleep(DISK_FULL)
        disk.empty()
        time.sleep(5)
        return {"filled_bytes": written, "full_s": DISK_FULL}

    try:
        figures = run_round(tmp_path / "run", f"sqlite:///{database}", fill,
                            namespaces=False)
        with sqlite3.connect(database) as conn:
            figures["integrity"] = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.close()
    finally:
        disk.empty()
        disk.close()
    _report(figures, tmp_path, "sqlite-disk-full")
    # A node whose final status waits for the full disk leaves its row ``running``; a peer
    # records the job's next instant ``overlap``; the node's late insert of that instant is
    # refused (test_store_locks), as a skip after a started row is (test_store_skips).
    check(figures)
    assert figures["integrity"] == "ok", figures
