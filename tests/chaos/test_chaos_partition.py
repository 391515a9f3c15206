"""Never two at once when a node loses the database (docs/liveness.md): two real
``cronctl run`` nodes on PostgreSQL, each in its own PID namespace when this process may
make one (as separate hosts: a peer cannot end the other's attempts), run one
single_instance command job and one single_instance Python job (default isolation:
warm worker processes), 3 s long every 4 s, each node through a TCP proxy of its own
(equally slow: each wins its share of the races). Both stamp their own start, a line every
0.1 s while they run, and their end (the stamps of an attempt killed before its end stop
at its last refresh). A round waits for an attempt that just started, and its node is the
victim:

- cut: its TCP path to the server closed (a proxy of the test's own closes every
  connection and refuses new ones): the server drops its sessions and its lock at once;
- freeze: the same path stops forwarding, closes nothing (a frozen switch);
- sigstop: its scheduler process frozen (SIGSTOP), its children and supervisor not;

for 5 s (past the others' lock grace and the 3 s lease of ``heartbeat_interval = "1s"``),
then restores it. The audit counts attempts of one occurrence whose stamped intervals
overlap: 0 in every round, and the lost rows say what is known. ``make test`` runs one
round of each; ``make chaos`` 10 (``CRONCTL_CHAOS_ROUNDS`` overrides). The figures are
printed (``pytest -s``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from nemesis_faults import FreezableProxy
from nemesis_harness import attempts, namespaces_work, tree

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.timeout(1200)]

LONG = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "0")) >= 60
ROUNDS = int(os.environ.get("CRONCTL_CHAOS_ROUNDS", "10" if LONG else "1"))
FAULT = 5.0  # seconds each fault lasts
JOBS = ("cmd", "py")
NODES = ("n1", "n2")

STAMP = r'''
import os, sys, time

def _node():
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    return os.path.basename(argv[argv.index(b"-c") + 1].decode())[:-len(".toml")]

def run(log, job, occurrence, execution, attempt, seconds, node=None):
    node = node or _node()
    def rec(kind):
        line = (f"{kind} {job} {occurrence} {execution} {attempt} {node} {os.getpid()} "
                f"{time.time():.6f}\n")
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    rec("S")
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(0.1, left))
        rec("T")
    rec("E")

def handler(ctx):
    run(ctx.parameters["log"], ctx.job_id, ctx.occurrence_id, ctx.execution_id,
        ctx.attempt, 3.0)

if __name__ == "__main__":
    e = os.environ
    run(sys.argv[1], e["CRONCTL_JOB_ID"], e["CRONCTL_OCCURRENCE_ID"],
        e["CRONCTL_EXECUTION_ID"], e["CRONCTL_ATTEMPT"], 3.0)
'''


@dataclass
class Pair:
    root: Path
    url: str
    proxies: dict[str, FreezableProxy]
    namespaces: bool
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.root / "attempts.log"

    def setup(self) -> None:
        (self.root / "jobs.d").mkdir(parents=True)
        (self.root / "partition_stamp.py").write_text(STAMP)
        log = self.log
        (self.root / "jobs.d" / "jobs.toml").write_text(
            '[jobs.cmd]\nevery = "4s"\nmode = "single_instance"\nmax_attempts = 5\n'
            'retry_backoff = "1s"\n'
            f'command = ["{sys.executable}", "-I", "-S", "{self.root / "partition_stamp.py"}", '
            f'"{log}"]\n'
            '[jobs.py]\nevery = "4s"\nanchor = "1970-01-01T00:00:02Z"\n'
            'mode = "single_instance"\nmax_attempts = 5\nretry_backoff = "1s"\n'
            'target = "python:partition_stamp:handler"\n'
            f'parameters = {{ log = "{log}" }}\n')
        port = self.url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        for name in NODES:
            url = self.url.replace(f":{port}/", f":{self.proxies[name].port}/")
            (self.root / f"{name}.toml").write_text(
                f'[scheduler]\ndatabase = "{url}"\njobs_dir = "{self.root / "jobs.d"}"\n'
                f'node_id = "{name}"\nheartbeat_interval = "1s"\nshutdown_timeout = "5s"\n'
                f'python_path = ["{self.root}"]\nprogress_flush_interval = "1s"\n')

    def start(self, name: str) -> None:
        argv = [sys.executable, "-m", "cronctl", "-c", str(self.root / f"{name}.toml"), "run"]
        if self.namespaces:
            argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *argv]
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "CRONCTL_DATABASE_URL",
                            "CRONCTL_CONFIG")}
        with (self.root / f"{name}.log").open("a") as out:
            self.procs[name] = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out,
                                                env=env, cwd=self.root,
                                                start_new_session=True)

    def text(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def ready(self, name: str) -> bool:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if f"ready node={name}" in self.text(name):
                return True
            time.sleep(0.1)
        return False

    def scheduler_pid(self, name: str) -> int:
        for pid in tree(self.procs[name].pid):
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[1:3] == [b"-m", b"cronctl"]:
                    return pid
        raise RuntimeError(f"no scheduler under {self.procs[name].pid}")

    def stop(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                for pid in tree(proc.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
                with contextlib.suppress(RuntimeError, ProcessLookupError):
                    os.kill(self.scheduler_pid(name), signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def running_on(pair: Pair, timeout: float = 24) -> tuple[str, str] | None:
    """Wait until an attempt started within the last second and runs on (by its own
    stamps); its job and node."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = time.time()
        for a in attempts(pair.log).values():
            if not a.ended and now - 1.2 < a.start < now - 0.2:
                return str(a.job), str(a.node)
        time.sleep(0.05)
    return None


def overlaps(log: Path) -> list[str]:
    by_occ: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for a in attempts(log).values():
        by_occ[(a.job, a.occurrence)].append(a)
    out = []
    for (job, occ), group in by_occ.items():
        group.sort(key=lambda a: a.start)
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b.start < a.last:
                    out.append(f"{job}/{occ[:8]} a{a.attempt}@{a.node} {a.start:.2f}-"
                               f"{a.last:.2f} beside a{b.attempt}@{b.node} from {b.start:.2f}")
    return out


Fault = Callable[[Pair, str], None]


def cut(pair: Pair, node: str) -> None:
    pair.proxies[node].cut()
    time.sleep(FAULT)
    pair.proxies[node].resume()


def freeze(pair: Pair, node: str) -> None:
    pair.proxies[node].freeze()
    time.sleep(FAULT)
    pair.proxies[node].resume()


def sigstop(pair: Pair, node: str) -> None:
    pid = pair.scheduler_pid(node)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(FAULT)
    os.kill(pid, signal.SIGCONT)


@pytest.fixture
def pair(tmp_path: Path, postgres_url: str) -> Iterator[Pair]:
    port = int(postgres_url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    proxies = {name: FreezableProxy(port) for name in NODES}
    pair = Pair(tmp_path / "run", postgres_url, proxies, namespaces_work())
    pair.setup()
    try:
        yield pair
    finally:
        pair.stop()
        for proxy in proxies.values():
            proxy.close()


def _rounds(pair: Pair, fault: Fault, name: str) -> dict[str, Any]:
    for node in NODES:
        pair.start(node)
    for node in NODES:
        assert pair.ready(node), pair.text(node)[-3000:]
    store = open_store(pair.url, node_id="partition-observer")
    faults: dict[str, int] = defaultdict(int)  # by the job the victim was running
    victims: dict[str, int] = defaultdict(int)
    try:
        for _ in range(ROUNDS):
            found = running_on(pair)
            if found is None:
                continue
            fault(pair, found[1])
            faults[found[0]] += 1
            victims[found[1]] += 1
            time.sleep(4)  # the takeover, the victim's return and its fenced report
        time.sleep(2)
        rows = [r for r in store.list_executions(limit=None) if r.job_id in JOBS]
    finally:
        store.close()
        pair.stop()
    lost = [r for r in rows if r.status is ExecutionStatus.LOST]
    found = overlaps(pair.log)
    figures = {
        "fault": name, "rounds": ROUNDS, "faults": sum(faults.values()),
        "faults_by_job": dict(faults), "victims": dict(victims), "namespaces": pair.namespaces,
        "attempts": len(attempts(pair.log)), "executions": len(rows), "lost": len(lost),
        "lost_by_job": {j: sum(1 for r in lost if r.job_id == j) for j in JOBS},
        "fenced": sum(1 for r in rows if r.fenced_status is not None),
        "concurrent": len(found), "concurrent_sample": found[:5],
        "marked_concurrent": sum(1 for r in rows if r.error and
                                 "concurrent_after_partition" in r.error),
        "lost_errors": sorted({(r.error or "").split(" at ")[0] for r in lost}),
    }
    print(f"\npartition {name}: {json.dumps(figures)}")
    (pair.root.parent / f"partition-{name}.json").write_text(json.dumps(figures, indent=2))
    return figures


@pytest.mark.parametrize("name", ["cut", "freeze", "sigstop"])
def test_no_two_attempts_at_once_when_a_node_loses_the_database(pair: Pair, name: str
                                                                ) -> None:
    figures = _rounds(pair, {"cut": cut, "freeze": freeze, "sigstop": sigstop}[name], name)
    assert figures["faults"] > 0, figures
    assert figures["concurrent"] == 0, figures
    assert figures["marked_concurrent"] == 0, figures
    if name == "cut":  # the server dropped its lock: taken over, and said so
        assert figures["lost"] > 0, figures
        assert all(e.startswith("lost: node n") and e.endswith(" lost the database")
                   for e in figures["lost_errors"]), figures
