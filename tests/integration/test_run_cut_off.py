"""A node cut off from PostgreSQL while its scheduler runs (docs/liveness.md): the server
drops its lock session, so a peer may declare it dead once its last heartbeat is older
than the lock grace; the cut-off node's command must have ended by then, although its
lease (15 s here) is far from over and its scheduler never stopped. The node runs in a
PID namespace of its own, as on a separate host (its peer cannot end its command), and
the overlap is read from the command's own stamps (it stamps every 50 ms while alive)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_run_support import Project, Running

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chaos"))
from nemesis_faults import FreezableProxy  # noqa: E402
from nemesis_harness import namespaces_work  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _drop_lock_session(url: str, node_id: str) -> int:
    """The server ends the session holding ``node_id``'s lock (as when it notices the
    client's path is gone); the node's other sessions are left to the frozen path."""
    import psycopg

    with psycopg.connect(_libpq(url), autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND granted AND ((classid::bigint << 32) | objid::bigint) = "
            "hashtextextended('cronctl-node:' || %s, 0)", (node_id,)).fetchall()
    return len(rows)


def test_a_cut_off_node_ends_its_command_before_a_peer_may_take_it_over(
        tmp_path: Path, postgres_url: str) -> None:
    if not namespaces_work():
        pytest.skip("needs root and unshare (a PID namespace for the cut-off node)")
    project = Project(tmp_path, postgres_url)
    stamps = project.root / "stamps"
    stamps.mkdir()
    project.jobs(f'''
[jobs.long]
every = "1s"
mode = "single_instance"
max_attempts = 3
command = ["sh", "-c", "while :; do date +%s.%N >> {stamps}/$CRONCTL_ATTEMPT; sleep 0.05; done"]
''')
    port = postgres_url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    proxy = FreezableProxy(int(port))
    nodes: dict[str, Running] = {}
    store = open_store(postgres_url, node_id="reader")
    try:
        for node in ("node-a", "node-b"):  # the default lease: heartbeat_interval 5s
            config = project.write_config(node, name=f"{node}.toml")
            text = config.read_text().replace('heartbeat_interval = "1s"',
                                              'heartbeat_interval = "5s"')
            if node == "node-a":  # the victim reaches the server through the proxy
                text = text.replace(f"127.0.0.1:{port}/", f"127.0.0.1:{proxy.port}/")
            config.write_text(text)
            nodes[node] = _start(project, config, node, own_pids=node == "node-a")
            assert nodes[node].wait_for(lambda t, n=node: f"ready node={n}" in t,
                                        timeout=20), nodes[node].text()
            if node == "node-a":
                deadline = time.monotonic() + 10
                while not (stamps / "1").exists():
                    assert time.monotonic() < deadline, nodes[node].text()
                    time.sleep(0.05)
        [victim] = store.pending_or_running(job_ids=["long"])
        assert victim.node_id == "node-a"
        time.sleep(1.0)  # the peer's view of node-a settles
        proxy.freeze()
        cut = time.time()
        assert _drop_lock_session(postgres_url, "node-a") == 1
        deadline = time.monotonic() + 20
        while not (stamps / "2").exists():
            assert time.monotonic() < deadline, nodes["node-b"].text()
            time.sleep(0.05)
        time.sleep(0.3)
        first_end = float((stamps / "1").read_text().split()[-1])
        second_start = float((stamps / "2").read_text().split()[0])
        print(f"cut: attempt 1 last alive {first_end - cut:.2f} s after the cut, attempt 2 "
              f"started {second_start - cut:.2f} s after it")
        # ended before the peer started the next attempt, with a margin
        assert first_end < second_start - 0.2, (first_end - cut, second_start - cut)
        # the record says what is known: the node lost the database, not "it stopped"
        old = store.get_execution(victim.id)
        assert old is not None and old.status is ExecutionStatus.LOST
        assert old.error is not None and old.error.startswith(
            "lost: node node-a lost the database at "), old.error
        assert old.error.endswith("its outcome is unknown"), old.error
        # the node comes back: its attempt's real end is kept beside the row, unmarked
        proxy.resume()
        deadline = time.monotonic() + 20
        while (old := store.get_execution(victim.id)) is not None and old.fenced_status is None:
            assert time.monotonic() < deadline, nodes["node-a"].text()
            time.sleep(0.1)
        assert old is not None and old.fenced_status is ExecutionStatus.FAILED
        assert old.fenced_at is not None and old.fenced_at.timestamp() < second_start
        assert old.error is not None and "concurrent_after_partition" not in old.error
    finally:
        proxy.close()
        store.close()
        for run in nodes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.proc.pid, signal.SIGKILL)
            run.kill()


def _start(project: Project, config: Path, node: str, *, own_pids: bool) -> Running:
    argv = [sys.executable, "-m", "cronctl", "-c", str(config), "run"]
    if own_pids:
        argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *argv]
    log = project.root / f"{node}.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=handle,
                                env=project.env(), cwd=project.root, start_new_session=True)
    return Running(proc, log)
