"""The database goes away while ``cronctl run`` runs (SPEC section 4): the process keeps
running, untracked jobs keep firing, and when the database is back the misfire policy
covers what was missed (``fire_now``: the newest once; ``fire_all``: each, oldest first)
without running any instant twice. PostgreSQL is reached through a TCP proxy this test
cuts (every connection closed, new ones refused) and restores."""

from __future__ import annotations

import collections
import contextlib
import re
import socket
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from test_run_support import Project

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

JOBS = '''
[jobs.newest]
every = "1s"
mode = "single_instance"
misfire_policy = "fire_now"
misfire_threshold = "1s"
command = ["true"]

[jobs.each]
every = "1s"
mode = "single_instance"
misfire_policy = "fire_all"
misfire_threshold = "1s"
command = ["true"]

[jobs.free]
every = "1s"
tracked = false
command = ["true"]
'''


class CuttableProxy:
    """127.0.0.1:<port> relayed to ``target``; :meth:`cut` closes every connection and
    refuses new ones until :meth:`restore`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._listen()

    def _listen(self) -> None:
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(64)
        self.port = lst.getsockname()[1]
        self._listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()

    def _accept(self, lst: socket.socket) -> None:
        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._socks += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(OSError):  # wakes the thread blocked in accept() (Linux)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._listener = None
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        self._listen()


def test_run_survives_a_database_outage_and_catches_up(tmp_path: Path,
                                                       postgres_url: str) -> None:
    head, _, database = postgres_url.rpartition("/")
    user_host = head.rsplit("@", 1)
    host, _, port = user_host[-1].partition(":")
    proxy = CuttableProxy((host, int(port or 5432)))
    via_proxy = f"{user_host[0]}@127.0.0.1:{proxy.port}/{database}"
    project = Project(tmp_path, via_proxy)
    project.jobs(JOBS)
    run = project.start("-v")  # each fire's own line, also when fires share a wake
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, timeout=15), run.text()
        time.sleep(2.2)
        proxy.cut()
        cut_at = len(run.text())
        time.sleep(3.5)
        assert run.proc.poll() is None, run.text()
        during = run.text()[cut_at:]
        proxy.restore()
        assert run.wait_for(lambda t: "store reachable again" in t, timeout=10), run.text()
        time.sleep(2.0)
    finally:
        code = run.stop()
        with contextlib.suppress(AssertionError):
            proxy.cut()
    text = run.text()
    assert code == 0, text
    assert text.count("store unreachable") == 1, text  # one WARNING, not one per fire
    assert text.count("store reachable again") == 1, text
    assert "Traceback" not in text, text
    # every-instance untracked jobs need no store: they kept firing during the outage
    assert during.count("fired job=free") >= 2, during

    store = open_store(postgres_url, node_id="reader")
    try:
        rows = {job: store.list_executions(job_id=job, limit=None) for job in ("newest", "each")}
    finally:
        store.close()
    for job, recs in rows.items():
        per_instant = collections.Counter(r.scheduled_at for r in recs)
        assert max(per_instant.values()) == 1, (job, per_instant)  # no instant ran twice
        assert all(r.attempt == 1 for r in recs), recs
        assert all(r.status is ExecutionStatus.SUCCEEDED for r in recs), recs
    # The catch-up of the outage: misfire rows planned before the store came back. (On a
    # loaded machine a fire later than misfire_threshold=1s is also a misfire; those are
    # planned after the return and not part of this check.)
    found = re.search(r"^(\S+) INFO store reachable again", text, re.MULTILINE)
    assert found is not None, text
    back = datetime.fromisoformat(found.group(1).replace("Z", "+00:00"))
    newest = [r for r in rows["newest"] if r.origin is Origin.MISFIRE and r.scheduled_at <= back]
    each = sorted((r for r in rows["each"]
                   if r.origin is Origin.MISFIRE and r.scheduled_at <= back),
                  key=lambda r: r.id)
    assert len(newest) == 1, rows["newest"]  # fire_now: the newest missed, once
    assert len(each) >= 2, [(r.scheduled_at.time(), r.origin.value)
                            for r in rows["each"]]  # fire_all: every missed instant...
    assert [r.scheduled_at for r in each] == sorted(r.scheduled_at for r in each)  # oldest first
    # ...and the catch-up covers the outage without a hole
    steps = {(b.scheduled_at - a.scheduled_at).total_seconds() for a, b in zip(each, each[1:],
                                                                                strict=False)}
    assert steps <= {1.0}, [(r.scheduled_at.time(), r.origin.value) for r in rows["each"]]
    confirmed = [r for r in rows["newest"] if r.origin is Origin.CRON]
    assert newest[0].scheduled_at > max(r.scheduled_at for r in confirmed
                                        if r.id < newest[0].id)
