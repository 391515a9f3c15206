"""``list``, ``history`` and ``status`` in a real pseudo-terminal (SPEC section 6: "at 80
columns each row ... is one line"), at 80 and 200 columns, with ``--wide``, ``NO_COLOR``
and ``--no-color``, and piped. The state is a SQLite file written through the store:
long job ids, long errors, every status, running executions with progress."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronctl.cli.tables import text_width
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store
from cronctl.store.writerecords import SkipRun

pytestmark = pytest.mark.slow

LONG = "nightly-warehouse-export-to-the-archive-bucket-in-eu-west-with-retention"
NODE = "node-eu-west-1a-with-a-rather-long-hostname-derived-id"
ERROR = ("connection refused by warehouse.internal.example.com:5432 after 3 attempts; "
         "giving up and marking the export as failed")
PROGRESS = "copying partitions of the warehouse table sales_2024"
BASE = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
BREAKS = set(" -_./:,;=@")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
JOBS = f"""\
[jobs.{LONG}]
cron = "0 30 2 * * MON-FRI"
timezone = "America/Argentina/Buenos_Aires"
mode = "single_instance"
command = ["/usr/local/bin/export-warehouse", "--bucket", "s3://archive-eu-west/warehouse",
           "--compress", "--retention", "400d"]

[jobs.short]
every = "5m"
command = ["true"]

[jobs.held]
cron = "@hourly"
command = ["true"]

[jobs.off]
cron = "@daily"
command = ["true"]
enabled = false
"""
# (job, status, error, cancel requested); scheduled one minute apart from BASE
EXECUTIONS = [
    (LONG, ExecutionStatus.SUCCEEDED, None, False),
    ("short", ExecutionStatus.FAILED, ERROR, False),
    (LONG, ExecutionStatus.ABANDONED, ERROR, False),
    ("short", ExecutionStatus.CANCELLED, "cancelled by an operator", False),
    (LONG, ExecutionStatus.DEAD_LETTER, ERROR, False),
    ("short", ExecutionStatus.PENDING, None, False),
    (LONG, ExecutionStatus.RUNNING, None, False),
    ("short", ExecutionStatus.RUNNING, None, True),
]


@dataclass(frozen=True)
class Project:
    root: Path
    config: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CRONCTL_") and k not in (
                   "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "STATE_DIRECTORY",
                   "NOTIFY_SOCKET", "WATCHDOG_USEC")}
        env.update(TERM="xterm-256color", TZ="UTC")
        env.update(extra)
        return env

    def argv(self, args: tuple[str, ...]) -> list[str]:
        return [sys.executable, "-m", "cronctl", "-c", str(self.config), *args]

    def tty(self, *args: str, columns: int, set_columns: bool = True, **env: str) -> str:
        """stdout of ``cronctl ARGS`` in a pseudo-terminal ``columns`` wide (also in
        ``COLUMNS`` unless ``set_columns`` is False), escape codes kept."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        extra = {"COLUMNS": str(columns)} if set_columns else {}
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(self.argv(args), stdin=subprocess.DEVNULL, stdout=slave,
                                    stderr=err, cwd=self.root, env=self.env(**extra, **env))
            os.close(slave)
            data = bytearray()
            deadline = time.monotonic() + 60
            try:
                while True:
                    ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
                    if not ready:
                        proc.kill()
                        pytest.fail(f"cronctl {' '.join(args)} did not finish")
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: the child closed the terminal
                        break
                    if not chunk:
                        break
                    data += chunk
            finally:
                os.close(master)
            rc = proc.wait(timeout=30)
            err.seek(0)
            assert rc == 0, err.read().decode()
        return data.decode().replace("\r\n", "\n")

    def piped(self, *args: str, **env: str) -> str:
        proc = subprocess.run(self.argv(args), capture_output=True, text=True, cwd=self.root,
                              env=self.env(**env), check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.piped(*args, "--json"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("tables")
    (root / "jobs.d").mkdir()
    (root / "jobs.d" / "jobs.toml").write_text(JOBS)
    url = f"sqlite:///{root / 'state.db'}"
    config = root / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "{url}"\njobs_dir = "{root / "jobs.d"}"\n'
                      'node_id = "tester"\nheartbeat_interval = "1m"\n')
    store = open_store(url, node_id=NODE)
    try:
        for i, (job, status, error, cancel) in enumerate(EXECUTIONS):
            at = BASE + timedelta(minutes=i)
            eid = store.try_insert_execution(
                job_id=job, occurrence_id=f"{job}-{i}", scheduled_at=at, attempt=1 + i % 3,
                origin=Origin.CRON, node_id=NODE, scope_node=None, target="command: true")
            assert eid is not None
            if status is ExecutionStatus.PENDING:
                continue
            assert store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                                    started_at=at + timedelta(seconds=1))
            if status is ExecutionStatus.RUNNING:
                store.record_progress(eid, 3, 10, PROGRESS)
                if cancel:
                    assert store.request_cancel(eid)
                continue
            assert store.transition(eid, ExecutionStatus.RUNNING, status, error=error,
                                    finished_at=at + timedelta(seconds=75))
        store.record_skips([SkipRun("short", "overlap", BASE - timedelta(minutes=5),
                                    BASE - timedelta(minutes=5), 1, NODE)])
        store.set_paused("held", True)
        now = datetime.now(UTC)
        store.register_node(NODE, "build-host-01.eu-west-1.compute.internal", 4242,
                            now - timedelta(hours=3), ttl=timedelta(0))
        store.heartbeat(NODE, now)
    finally:
        store.close()
    return Project(root, config)


# --- reading a table off the screen -----------------------------------------------------


def _lines(screen: str) -> list[str]:
    return [ANSI.sub("", line) for line in screen.split("\n") if line.strip()]


def _cells(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def _assert_cut_at_a_word(cell: str, originals: list[str]) -> None:
    """A cell ending with … is a prefix of one of ``originals`` that ends at a word; an id
    shortened in the middle keeps a start and an end of one of them."""
    if "…" in cell and not cell.endswith("…"):
        head, tail = cell.split("…")
        # (an id: its start and its end tell it apart; cut mid-word only when no two
        # words fit, see tests/unit/cli/test_tables.py)
        assert any(o.startswith(head) and o.endswith(tail) for o in originals), cell
        return
    if not cell.endswith("…"):
        return
    kept = cell[:-1]
    matches = [o for o in originals if o.startswith(kept) and len(o) > len(kept)]
    assert matches, f"{cell!r} is not a shortened {originals}"
    assert kept[-1] in BREAKS or any(o[len(kept)] in BREAKS for o in matches), (
        f"{cell!r} broken mid-word")


def _row_lines(lines: list[str], first: str) -> list[str]:
    """The lines whose first cell is ``first`` or a shortened ``first``."""
    return [line for line in lines
            if (cell := _cells(line)[0]) == first
            or ("…" in cell and first.startswith(cell.split("…")[0])
                and first.endswith(cell.split("…")[1]))]


def _fits(screen: str, columns: int) -> list[str]:
    lines = _lines(screen)
    assert lines
    for line in lines:
        assert text_width(line) <= columns, f"{text_width(line)} > {columns}: {line!r}"
    return lines


# --- list ------------------------------------------------------------------------------------


def _check_list(project: Project, screen: str, columns: int) -> list[str]:
    lines = _fits(screen, columns)
    jobs = project.json("list")["jobs"]
    header, *rows = lines
    notes = [line for line in rows if line.startswith("not shown:")]
    assert len(rows) == len(jobs) + len(notes), "a job took more than one line"
    originals = [LONG, *(j["target"] for j in jobs)]
    for job in jobs:
        [line] = _row_lines(rows, job["id"])
        for cell in _cells(line):
            _assert_cut_at_a_word(cell, originals)
    assert _cells(header)[0] == "ID" and header.rstrip().endswith("LAST STATUS")
    return _cells(header)


@pytest.mark.parametrize("columns", [80, 200])
def test_list_fits_the_terminal(project: Project, columns: int) -> None:
    _check_list(project, project.tty("list", columns=columns), columns)


def test_list_shows_more_at_200_columns(project: Project) -> None:
    narrow = _check_list(project, project.tty("list", columns=80), 80)
    wide = _check_list(project, project.tty("list", columns=200), 200)
    assert set(narrow) < set(wide)


# --- history -------------------------------------------------------------------------------


def _check_history(project: Project, screen: str, columns: int) -> list[str]:
    lines = _fits(screen, columns)
    executions = project.json("history")["executions"]
    header, *rows = lines
    notes = [line for line in rows if line.startswith("not shown:")]
    assert len(rows) == len(executions) + len(notes), "an execution took more than one line"
    originals = [LONG, "short", NODE, ERROR, "cancelled by an operator"]
    for execution in executions:
        [line] = _row_lines(rows, str(execution["id"]))
        cells = _cells(line)
        assert execution["status"] in cells, f"status word not whole: {line!r}"
        for cell in cells:
            _assert_cut_at_a_word(cell, originals)
    return _cells(header)


@pytest.mark.parametrize("columns", [80, 200])
def test_history_fits_the_terminal(project: Project, columns: int) -> None:
    headers = _check_history(project, project.tty("history", columns=columns), columns)
    assert {"ID", "JOB", "SCHEDULED", "STATUS", "ERROR"} <= set(headers)


def test_history_shows_more_at_200_columns(project: Project) -> None:
    narrow_screen = project.tty("history", columns=80)
    wide_screen = project.tty("history", columns=200)
    narrow = _check_history(project, narrow_screen, 80)
    wide = _check_history(project, wide_screen, 200)
    assert set(narrow) < set(wide)
    assert "01-02 03:04:05" in narrow_screen  # a short time (TZ=UTC) at 80 columns
    assert "2026-01-02T03:04:05Z" in wide_screen  # ISO 8601 when there is room
    assert "not shown:" in narrow_screen and "--wide" in narrow_screen


def test_history_short_times_are_this_machines_local_time(project: Project) -> None:
    screen = project.tty("history", columns=80, TZ="Asia/Tokyo")
    assert "01-02 12:04:05" in screen  # BASE + 9h


def test_history_skip_records_fit(project: Project) -> None:
    lines = _fits(project.tty("history", "--status", "skipped", columns=80), 80)
    [row] = [line for line in lines if "skipped" in _cells(line)]
    assert _cells(row)[1] == "short" and "overlap" in row


# --- status ----------------------------------------------------------------------------------


def _check_status(project: Project, screen: str, columns: int) -> list[str]:
    lines = _fits(screen, columns)
    doc = project.json("status")
    running = lines[lines.index("Pending and running:") + 1:lines.index("Next fires:")]
    header, *rows = running
    notes = [line for line in rows if line.lstrip().startswith("not shown:")]
    assert len(rows) == len(doc["running"]) + len(notes)
    for execution in doc["running"]:
        [line] = _row_lines(rows, str(execution["id"]))
        cells = _cells(line)
        word = execution["status"] + (" (cancelling)" if execution["cancel_requested"] else "")
        assert word in cells, f"status not whole: {line!r}"
        if execution["status"] == "running":
            assert any(cell.startswith("3/10 (30%)") for cell in cells), line
        for cell in cells:
            _assert_cut_at_a_word(cell, [LONG, "short", NODE, f"3/10 (30%) {PROGRESS}"])
    nodes = lines[1:lines.index("Pending and running:")]
    assert len(nodes) == 2 and _cells(nodes[1])[0] in (NODE, *(
        NODE[:n] + "…" for n in range(len(NODE))))
    fires = lines[lines.index("Next fires:") + 2:]
    assert any(_cells(line)[0].startswith("nightly-") for line in fires)
    assert "paused: held" in lines and "disabled: off" in lines
    return _cells(header)


@pytest.mark.parametrize("columns", [80, 200])
def test_status_fits_the_terminal(project: Project, columns: int) -> None:
    _check_status(project, project.tty("status", columns=columns), columns)


def test_status_shows_more_at_200_columns(project: Project) -> None:
    narrow = _check_status(project, project.tty("status", columns=80), 80)
    wide = _check_status(project, project.tty("status", columns=200), 200)
    assert set(narrow) < set(wide)


def test_the_terminal_size_counts_without_columns(project: Project) -> None:
    _check_status(project, project.tty("status", columns=80, set_columns=False), 80)
    _check_history(project, project.tty("history", columns=80, set_columns=False), 80)


# --- --wide, colour, pipes -------------------------------------------------------------------


def test_wide_shows_every_column_in_full(project: Project) -> None:
    history = _lines(project.tty("history", "--wide", columns=80))
    assert _cells(history[0]) == ["ID", "JOB", "SCHEDULED", "STARTED", "DURATION", "STATUS",
                                  "ATTEMPT", "NODE", "ORIGIN", "EXIT", "SIGNAL", "CPU",
                                  "MAX RSS", "ERROR"]
    assert any(line.endswith(ERROR) and LONG in line and NODE in line for line in history)
    assert "2026-01-02T03:04:05Z" in "\n".join(history)
    listed = _lines(project.tty("list", "--wide", columns=80))
    assert _cells(listed[0]) == ["ID", "SCHEDULE", "ZONE", "MODE", "TARGET", "NEXT FIRE",
                                 "LAST STATUS"]
    assert any("America/Argentina/Buenos_Aires" in line and "--retention 400d" in line
               for line in listed)
    status = _lines(project.tty("status", "--wide", columns=80))
    assert any(f"3/10 (30%) {PROGRESS}" in line and NODE in line for line in status)
    for screen in (history, listed, status):
        text = "\n".join(screen)
        assert "…" not in text and "not shown" not in text
    assert max(len(line) for line in history) > 80  # long lines: the terminal wraps them


@pytest.mark.parametrize("command", ["list", "history", "status"])
def test_no_color_means_no_escape_code(project: Project, command: str) -> None:
    assert "\x1b" not in project.tty(command, columns=80, NO_COLOR="1")
    assert "\x1b" not in project.tty(command, "--wide", columns=80, NO_COLOR="1")
    assert "\x1b" not in project.tty("--no-color", command, columns=80)
    assert "\x1b[" in project.tty(command, columns=80)  # colour, on a terminal


@pytest.mark.parametrize("command", ["list", "history", "status"])
def test_piped_output_does_not_depend_on_the_width(project: Project, command: str) -> None:
    def steady(text: str) -> str:
        # "in 3m 2s" and "2h ago" move between two runs, and with them the width of their
        # column ("in 9s" -> "in 10s"): compare the cells, not the padding.
        text = re.sub(r"\((in [^)]*|[^)]* ago|just now)\)", "(...)", text)
        return re.sub(r" {2,}", "  ", text)

    narrow = project.piped(command, COLUMNS="80")
    assert steady(narrow) == steady(project.piped(command, COLUMNS="200"))
    assert "\x1b" not in narrow and "…" not in narrow
    if command != "history":  # history cuts an error at 80 characters unless --wide
        assert steady(narrow) == steady(project.piped(command, "--wide"))


def test_piped_history_is_todays_plain_text(project: Project) -> None:
    expected = [["ID", "JOB", "SCHEDULED", "STARTED", "DURATION", "STATUS", "ATTEMPT", "NODE",
                 "ORIGIN", "ERROR"]]
    for i, (job, status, error, _) in reversed(list(enumerate(EXECUTIONS))):
        at = BASE + timedelta(minutes=i)
        pending = status is ExecutionStatus.PENDING
        final = status.is_final
        if error is not None and len(error) > 80:
            error = error[:77] + "..."
        expected.append([
            str(i + 1), job, at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "-" if pending else (at + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "1m 14s" if final else "-", status.value, str(1 + i % 3), NODE, "cron",
            error or "-"])
    widths = [max(len(row[i]) for row in expected) for i in range(10)]
    text = "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)
                               ).rstrip() for row in expected) + "\n"
    assert project.piped("history", COLUMNS="80") == text
    wide = project.piped("history", "--wide")
    assert ERROR in wide and len(wide.splitlines()) == len(expected)
