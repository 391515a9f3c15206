"""The harness of :mod:`test_chaos_nemeses`: several real ``cronctl run`` nodes on one
database running command jobs, each node optionally in its own PID, mount and UTS
namespace with a boot id of its own (a peer then cannot see, or kill, another node's
children: like separate hosts), and the audit of what the commands themselves wrote.

Every command appends lines ``KIND job occurrence execution attempt node pid time`` to
one file: ``S`` when it starts, ``T`` every 0.1 s while it runs, ``E`` when it ends
normally. An attempt *ran* from its ``S`` to its last line; two attempts of one
occurrence are concurrent when one wrote anything after the other started and before
that one's last line (a frozen command writes nothing while frozen, so a command
stopped beside its successor counts only if it runs again).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import Store

ATTEMPT = r'''
import os, sys, time
e = os.environ
# The node is the scheduler that started this command: its config is <root>/<node>.toml
# (a job's environment holds nothing of the scheduler's, and every node shares jobs.d).
with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
    argv = f.read().split(b"\0")
NODE = os.path.basename(argv[argv.index(b"-c") + 1].decode())[:-len(".toml")]
def rec(kind):
    line = (f"{kind} {e['CRONCTL_JOB_ID']} {e['CRONCTL_OCCURRENCE_ID']} "
            f"{e['CRONCTL_EXECUTION_ID']} {e['CRONCTL_ATTEMPT']} {NODE} "
            f"{os.getpid()} {time.time():.6f}\n")
    fd = os.open(e["NEMESIS_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
rec("S")
end = time.monotonic() + float(sys.argv[1])
while (left := end - time.monotonic()) > 0:
    time.sleep(min(0.1, left))
    rec("T")
rec("E")
'''

SOLO = ("solo-0", "solo-1")  # single_instance, every 5 s, 3 s long
EACH = ("each-0", "each-1")  # every_instance, every 2 s, 0.3 s long
STEP = {**{j: timedelta(seconds=5) for j in SOLO}, **{j: timedelta(seconds=2) for j in EACH}}


def jobs_toml(root: Path) -> str:
    script = root / "attempt.py"
    log = f'env = {{ NEMESIS_LOG = "{root / "attempts.log"}" }}\n'
    out = []
    for i, job in enumerate(SOLO):
        out.append(f'[jobs.{job}]\nevery = "5s"\nanchor = "1970-01-01T00:00:0{2 * i}Z"\n'
                   'mode = "single_instance"\nmax_attempts = 3\nretry_backoff = "1s"\n'
                   f'command = ["{sys.executable}", "-I", "-S", "{script}", "3"]\n{log}')
    for job in EACH:
        out.append(f'[jobs.{job}]\nevery = "2s"\nmode = "every_instance"\n'
                   f'command = ["{sys.executable}", "-I", "-S", "{script}", "0.3"]\n{log}')
    return "\n".join(out)


def namespaces_work() -> bool:
    """Whether this process may start a node in its own PID/mount/UTS namespace."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--uts", "--mount-proc",
                            "true"], capture_output=True, timeout=10, check=False)
    return probe.returncode == 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children")
                        .read_text().split()]
    return out


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants, parents first (their own sessions included)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo += _children(p)
    return out


@dataclass
class Node:
    name: str
    config: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def scheduler_pid(self) -> int:
        """The host pid of the ``cronctl run`` process (inside its namespace or not)."""
        assert self.proc is not None
        for pid in tree(self.proc.pid):
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[1:3] == [b"-m", b"cronctl"]:  # not unshare, not sh
                    return pid
        raise RuntimeError(f"no scheduler process under {self.proc.pid}")


@dataclass
class Cluster:
    root: Path
    url: str
    namespaces: bool
    nodes: dict[str, Node] = field(default_factory=dict)
    # argv put before a node's command (e.g. ``ip netns exec NAME``: a network of its own)
    prefixes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.root / "attempts.log"

    def setup(self, names: tuple[str, ...], urls: dict[str, str]) -> None:
        (self.root / "jobs.d").mkdir(parents=True, exist_ok=True)
        (self.root / "attempt.py").write_text(ATTEMPT)
        (self.root / "jobs.d" / "nemesis.toml").write_text(jobs_toml(self.root))
        for name in names:
            config = self.root / f"{name}.toml"
            config.write_text(
                "[scheduler]\n"
                f'database = "{urls.get(name, self.url)}"\njobs_dir = "{self.root / "jobs.d"}"\n'
                f'node_id = "{name}"\nheartbeat_interval = "1s"\nshutdown_timeout = "5s"\n'
                'progress_flush_interval = "1s"\n')
            self.nodes[name] = Node(name, config)

    def env(self, node: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "CRONCTL_DATABASE_URL",
                            "CRONCTL_CONFIG")}
        return env

    def start(self, name: str) -> None:
        node = self.nodes[name]
        node.starts += 1
        argv = [sys.executable, "-m", "cronctl", "-c", str(node.config), "run"]
        if self.namespaces:
            boot = self.root / f"{name}.boot_id"
            boot.write_text(f"{name}-{os.urandom(6).hex()}-boot\n")
            script = (f'mount --bind "{boot}" /proc/sys/kernel/random/boot_id && '
                      f'hostname "nemesis-{name}" && "$@"')
            argv = ["unshare", "--pid", "--fork", "--mount", "--uts", "--mount-proc",
                    "--kill-child", "sh", "-c", script, "sh", *argv]
        argv = [*self.prefixes.get(name, []), *argv]
        with (self.root / f"{name}.{node.starts}.log").open("w") as log:
            node.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log,
                                         env=self.env(name), cwd=self.root,
                                         start_new_session=True)

    def ready(self, name: str, timeout: float = 30) -> bool:
        node = self.nodes[name]
        log = self.root / f"{name}.{node.starts}.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready " in log.read_text(errors="replace"):
                return True
            time.sleep(0.1)
        return False

    def text(self, name: str) -> str:
        node = self.nodes[name]
        return (self.root / f"{name}.{node.starts}.log").read_text(errors="replace")

    def stop_all(self) -> dict[str, int]:
        codes: dict[str, int] = {}
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                for pid in tree(node.proc.pid):  # nothing may stay stopped
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
                with contextlib.suppress(RuntimeError, ProcessLookupError):
                    os.kill(node.scheduler_pid(), signal.SIGTERM)
        for name, node in self.nodes.items():
            if node.proc is not None:
                try:
                    codes[name] = node.proc.wait(40)
                except subprocess.TimeoutExpired:
                    os.killpg(node.proc.pid, signal.SIGKILL)
                    codes[name] = -9
        return codes


def running_solo(store: Store, timeout: float = 12, node: str | None = None) -> str | None:
    """The node (or ``node``) of a running single_instance attempt."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            rows = [r for r in store.pending_or_running(job_ids=list(SOLO))
                    if r.status is ExecutionStatus.RUNNING
                    and (node is None or r.node_id == node)]
            if rows:
                return rows[0].node_id
        time.sleep(0.1)
    return None


def fresh_solo(log: Path, within: float = 1.5, timeout: float = 12) -> str | None:
    """The node of a single_instance command that started less than ``within`` seconds
    ago and has not ended (from the commands' own log: it surely runs on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = time.time()
        for a in attempts(log).values():
            if a.job in SOLO and not a.ended and now - within < a.start < now - 0.2:
                return a.node
        time.sleep(0.1)
    return None


@dataclass
class Attempt:
    job: str
    occurrence: str
    execution: int
    attempt: int
    node: str
    start: float = float("inf")
    last: float = float("-inf")
    ended: bool = False


def attempts(log: Path) -> dict[int, Attempt]:
    out: dict[int, Attempt] = {}
    for line in (log.read_text().splitlines() if log.exists() else []):
        parts = line.split()
        if len(parts) != 8:
            continue
        kind, job, occ, execution, attempt, node, _pid, at = parts
        a = out.setdefault(int(execution), Attempt(job, occ, int(execution), int(attempt),
                                                   node))
        t = float(at)
        if kind == "S":
            a.start = min(a.start, t)
        a.last = max(a.last, t)
        a.ended = a.ended or kind == "E"
    return out


def audit(root: Path, store: Store, began: datetime, ended: datetime,
          codes: dict[str, int]) -> dict[str, Any]:
    rows = [r for r in store.list_executions(limit=None) if r.job_id in STEP]
    skips = [s for s in store.list_skips(limit=None) if s.job_id in STEP]
    ran = attempts(root / "attempts.log")
    # 0 concurrent attempts of one occurrence (every_instance: of one node's occurrence)
    by_occ: dict[tuple[str, str, str], list[Attempt]] = defaultdict(list)
    for a in ran.values():
        by_occ[(a.job, a.occurrence, "" if a.job in SOLO else a.node)].append(a)
    concurrent: list[str] = []
    for key, group in by_occ.items():
        group.sort(key=lambda a: a.start)
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b.start < a.last:
                    concurrent.append(f"{key[0]}/{key[1][:8]} a{a.attempt}@{a.node} "
                                      f"{a.start:.2f}-{a.last:.2f} a{b.attempt}@{b.node} "
                                      f"from {b.start:.2f}")
    # 0 unaccounted planned instants
    nodes = sorted({r.node_id for r in rows} | {s.node_id for s in skips})
    done: set[tuple[str, str | None, datetime]] = set()
    for r in rows:
        done.add((r.job_id, r.scope_node, r.scheduled_at))
    executed = set(done)
    ran_and_skipped: list[str] = []
    false_overlap: list[str] = []  # "the previous execution still ran", but none did
    for s in skips:
        at = s.first_at
        for _ in range(s.count):
            if (s.job_id, s.scope_node, at) in executed:
                ran_and_skipped.append(f"{s.job_id}@{s.scope_node or '*'}@{at:%H:%M:%S}")
            if s.reason == "overlap" and not _running_at(ran.values(), s.job_id,
                                                         s.scope_node, at.timestamp()):
                false_overlap.append(f"{s.job_id}@{s.scope_node or '*'}@{at:%H:%M:%S}")
            done.add((s.job_id, s.scope_node, at))
            at += STEP[s.job_id]
    planned = 0
    missing: list[str] = []
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    for job, step in STEP.items():
        state = store.get_schedule(job)
        last = min(state.cursor, ended) if job in SOLO and state and state.cursor else ended
        last -= timedelta(seconds=0 if job in SOLO else 3)
        for scope in ([None] if job in SOLO else nodes):
            anchor = timedelta(seconds=2 * SOLO.index(job)) if job in SOLO else timedelta()
            t = epoch + anchor + ((began + timedelta(seconds=2) - epoch - anchor) // step + 1
                                  ) * step
            while t <= last:
                planned += 1
                if (job, scope, t) not in done:
                    missing.append(f"{job}@{scope or '*'}@{t:%H:%M:%S}")
                t += step
    # every row's final status true
    left_running = [r.id for r in rows if r.status is ExecutionStatus.RUNNING
                    or (r.status is ExecutionStatus.PENDING and r.attempt == 1)]
    false_success = [r.id for r in rows if r.status is ExecutionStatus.SUCCEEDED
                     and not (r.id in ran and ran[r.id].ended)]
    unrecorded = [e for e in ran if e not in {r.id for r in rows}]
    statuses: dict[str, int] = defaultdict(int)
    for r in rows:
        statuses[r.status.value] += 1
    reasons: dict[str, int] = defaultdict(int)
    for s in skips:
        reasons[s.reason] += s.count
    return {
        "planned": planned, "executions": len(rows), "statuses": dict(statuses),
        "skipped": dict(reasons), "command_attempts": len(ran),
        "concurrent": len(concurrent), "concurrent_sample": concurrent[:5],
        "unaccounted": len(missing), "missing_sample": missing[:10],
        "ran_and_skipped": len(ran_and_skipped), "ran_and_skipped_sample": ran_and_skipped[:5],
        "overlap_skips_nothing_ran": len(false_overlap),
        "overlap_skips_nothing_ran_sample": false_overlap[:5],
        "lost": statuses.get("lost", 0),
        "fenced": sum(1 for r in rows if r.fenced_status is not None),
        "left_running": len(left_running), "false_success": len(false_success),
        "attempts_without_row": len(unrecorded), "exit_codes": codes,
    }


def _running_at(ran: Any, job: str, node: str | None, at: float) -> bool:
    """Whether an attempt of ``job`` (on ``node``, when given) ran at ``at`` by its own
    log (a margin for the final status still on its way)."""
    return any(a.job == job and (node is None or a.node == node)
               and a.start - 0.5 <= at <= a.last + 0.5 for a in ran)


def check(figures: dict[str, Any]) -> None:
    """Every count of a broken promise is 0."""
    for key in ("concurrent", "unaccounted", "ran_and_skipped", "left_running",
                "false_success", "attempts_without_row"):
        assert figures[key] == 0, (key, figures)
    assert figures["command_attempts"] > 0, figures
    assert all(code == 0 for code in figures["exit_codes"].values()), figures
