"""SPEC section 6 (and what a user sees of sections 3 and 4): commands, global options,
exit codes, JSON shapes, one-line errors."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from acc_helpers import (
    CRONCTL,
    Run,
    Write,
    assert_one_error_line,
    assert_user_error,
    clean_env,
    iso_z,
)

COMMANDS = [("validate",), ("list",), ("next",), ("run",), ("trigger",), ("cancel",),
            ("logs",), ("history",), ("db",), ("db", "upgrade"), ("db", "current"),
            ("init",), ("systemd-unit",), ("replay",), ("pause",), ("resume",), ("status",)]
STATUSES = {"pending", "running", "succeeded", "failed", "abandoned", "cancelled", "lost",
            "dead_letter"}
ORIGINS = {"cron", "misfire", "replay", "manual"}

JOBS = """
[jobs.ok]
cron = "@daily"
command = ["sh", "-c", "echo hello; echo oops >&2"]

[jobs.bad]
cron = "@daily"
command = "false"
max_attempts = 1
"""


@pytest.fixture
def jobs(write: Write) -> None:
    write("jobs.d/jobs.toml", JOBS)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose SQLite state holds two finished manual executions:
    1 = ok (succeeded, two log lines), 2 = bad (dead_letter)."""
    root = tmp_path_factory.mktemp("executed")
    (root / "jobs.d").mkdir()
    (root / "jobs.d" / "jobs.toml").write_text(JOBS)
    for job in ("ok", "bad"):
        subprocess.run([str(CRONCTL), "trigger", job, "--here", "--wait"], cwd=root,
                       env=clean_env(), capture_output=True, check=False, timeout=60)
    return root


# --- help, entry points -----------------------------------------------------------------

def test_help_on_every_command(run: Run) -> None:
    top = run("--help")
    assert top.rc == 0 and "Traceback" not in top.err
    for name in ("validate", "list", "next", "run", "trigger", "cancel", "logs", "history",
                 "db", "init", "systemd-unit", "replay", "pause", "resume", "status"):
        assert name in top.out, f"{name} missing from cronctl --help"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_of_each_command(run: Run, command: tuple[str, ...]) -> None:
    result = run(*command, "--help")
    assert result.rc == 0 and "Usage" in result.out and "Traceback" not in result.err
    for option in ("--config", "--database", "--jobs-dir", "--verbose", "--quiet",
                   "--no-color"):
        assert option in result.out, f"{option} not on cronctl {' '.join(command)}"


def test_python_dash_m(run: Run) -> None:
    result = run("next", "@daily", "-n", "1", "--json", module=True)
    assert result.rc == 0 and result.json()["expression"] == "0 0 0 * * *"
    assert run("--help", module=True).rc == 0


# --- global options everywhere ------------------------------------------------------------

@pytest.mark.parametrize(("command", "rc"), [
    # history: 3, g.db (--database, after the command) does not exist (issue 39)
    (("validate",), 0), (("list",), 0), (("next", "ok"), 0), (("history",), 3),
    (("db", "current"), 0), (("systemd-unit",), 0), (("logs", "99"), 3),
    (("cancel", "99"), 3), (("trigger", "nope"), 3),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v))
def test_global_options_after_the_command(
    run: Run, write: Write, tmp_path: Path, command: tuple[str, ...], rc: int
) -> None:
    write("conf/cronctl.toml", '[scheduler]\ndatabase = "x.db"\n')
    write("elsewhere/jobs.toml", JOBS)  # found only through --jobs-dir
    options = ("-c", "conf/cronctl.toml", "--database", f"sqlite:///{tmp_path}/g.db",
               "--jobs-dir", "elsewhere", "-v", "--no-color", "-q")
    after = run(*command, *options)
    assert after.rc == rc, str(after)


def test_global_options_before_the_command(run: Run, write: Write, tmp_path: Path) -> None:
    write("elsewhere/jobs.toml", JOBS)
    result = run("-c", "conf.toml", "next", "ok", env=clean_env())
    assert result.rc == 1  # a named config file must exist
    write("conf.toml", '[scheduler]\njobs_dir = "elsewhere"\n')
    for args in (("-c", "conf.toml"), ("--config", "conf.toml"),
                 ("--jobs-dir", "elsewhere", "--database", "none", "-vv", "-q", "--no-color")):
        result = run(*args, "next", "ok", "--json")
        assert result.rc == 0 and result.json()["job"] == "ok", str(result)


def test_quiet_validate_prints_nothing_when_clean(run: Run, jobs: None) -> None:
    for args in (("-q", "validate"), ("validate", "-q")):
        result = run(*args)
        assert result.rc == 0 and result.out == "", str(result)


@pytest.mark.parametrize("command", [("validate",), ("list",), ("next", "@daily"),
                                     ("history",), ("db", "current")], ids=" ".join)
def test_bad_option_is_a_usage_error(run: Run, command: tuple[str, ...]) -> None:
    result = run(*command, "--bogus")
    assert result.rc == 2 and "Traceback" not in result.err and result.out == ""


def test_unknown_command_is_a_usage_error(run: Run) -> None:
    result = run("frobnicate")
    assert result.rc == 2 and "Traceback" not in result.err


# --- next ---------------------------------------------------------------------------------

NEXT_KEYS = {"job", "expression", "timezone", "description", "fires"}


def test_next_json_shape(run: Run) -> None:
    result = run("next", "0 30 2 * * *", "--tz", "America/New_York",
                 "--from", "2026-03-07T12:00:00Z", "--json")
    assert result.rc == 0, str(result)
    doc = result.json()
    assert set(doc) >= NEXT_KEYS
    assert doc["job"] is None and doc["expression"] == "0 30 2 * * *"
    assert doc["timezone"] == "America/New_York"
    assert doc["description"] == "At 02:30:00, every day"
    assert len(doc["fires"]) == 5  # default N
    first = doc["fires"][0]
    assert first["utc"] == "2026-03-08T07:00:00Z"
    assert first["local"] == "2026-03-08T03:00:00-04:00"
    for fire in doc["fires"]:
        assert datetime.fromisoformat(fire["local"]) == iso_z(fire["utc"])


def test_next_plain_output(run: Run) -> None:
    result = run("next", "0 30 2 * * *", "--tz", "America/New_York", "-n", "2",
                 "--from", "2026-03-07T12:00:00Z")
    assert result.rc == 0
    assert "2026-03-08T07:00:00Z" in result.out and "03:00:00" in result.out
    assert "At 02:30:00, every day" in result.out
    assert " ago" in result.out   # "3h 2m ago" style, counted from now, not from --from
    soon = run("next", "0 30 2 * * *", "-n", "1")
    assert soon.rc == 0 and " in " in soon.out       # "in 3h 2m" style
    assert "02:30" in result.out and "not exist" in result.out  # the DST note


def test_next_count_and_five_fields_and_every(run: Run) -> None:
    result = run("next", "*/15 * * * *", "-n", "3", "--from", "2026-01-01T00:00:00Z", "--json")
    assert [f["utc"] for f in result.json()["fires"]] == [
        "2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"]
    every = run("next", "@every 90s", "-n", "2", "--from", "2026-01-01T00:00:00Z", "--json")
    assert every.rc == 0, str(every)
    assert [f["utc"] for f in every.json()["fires"]] == [
        "2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z"]


@pytest.mark.parametrize(("start", "delta"), [("2h", timedelta(hours=2)),
                                              ("3d", timedelta(days=3))])
def test_next_from_relative(run: Run, start: str, delta: timedelta) -> None:
    before = datetime.now(UTC)
    result = run("next", "* * * * * *", "-n", "1", "--from", start, "--json")
    assert result.rc == 0, str(result)
    first = iso_z(result.json()["fires"][0]["utc"])
    assert before + delta < first < datetime.now(UTC) + delta + timedelta(seconds=2)


@pytest.mark.parametrize("args", [
    ("next", "0 61 * * * *"),
    ("next", "0 0 0 * * FRI-MON"),
    ("next", "0 0 0 30 2 *"),
    ("next", "* * *"),
    ("next", "@daily", "--from", "yesterday-ish"),
    ("next", "@daily", "--from", "2026-13-01"),
    ("next", "@daily", "--tz", "Mars/Base"),
    ("next", "@every 0s"),
    ("next", "@every soon"),
], ids=lambda a: " ".join(a))
def test_next_usage_errors(run: Run, args: tuple[str, ...]) -> None:
    line = assert_one_error_line(run(*args), 2)
    assert line.startswith("error:")


def test_next_bad_expression_names_the_field(run: Run) -> None:
    line = assert_one_error_line(run("next", "0 61 * * * *"), 2)
    assert "minute field: 61 is out of range 0-59" in line


def test_next_unknown_job_is_not_found(run: Run, jobs: None) -> None:
    line = assert_one_error_line(run("next", "nosuchjob"), 3)
    assert "nosuchjob" in line


# --- validate / list ------------------------------------------------------------------------

def test_validate_json_shape(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", '[jobs.a]\ncron = "0 61 * * * *"\ncommand = "true"\n'
                           '[jobs.b]\ncron = "0 0 0 */2 * 1"\ncommand = "true"\n')
    result = run("validate", "--json")
    assert result.rc == 1
    doc = result.json()
    assert set(doc) >= {"ok", "jobs", "violations", "warnings"}
    assert doc["ok"] is False and isinstance(doc["jobs"], int) and doc["jobs"] >= 2
    for item in (*doc["violations"], *doc["warnings"]):
        assert set(item) >= {"source", "job", "key", "message"}
        assert isinstance(item["source"], str) and isinstance(item["message"], str)
        assert item["job"] is None or isinstance(item["job"], str)
        assert item["key"] is None or isinstance(item["key"], str)
    assert [v["job"] for v in doc["violations"]] == ["a"]
    assert [w["job"] for w in doc["warnings"]] == ["b"]


def test_list_json_shape(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", """
        [jobs.nightly]
        cron = "30 2 * * *"
        timezone = "Europe/Berlin"
        command = ["echo", "hi"]
        description = "text"

        [jobs.py]
        every = "90s"
        target = "python:os:getcwd"
        """)
    result = run("list", "--json")
    assert result.rc == 0, str(result)
    jobs = {j["id"]: j for j in result.json()["jobs"]}
    nightly = jobs["nightly"]
    assert set(nightly) >= {"id", "cron", "timezone", "mode", "target", "enabled", "paused",
                            "next_fire"}
    assert nightly["cron"] == "0 30 2 * * *" and nightly["timezone"] == "Europe/Berlin"
    assert nightly["mode"] == "every_instance" and nightly["enabled"] is True
    assert nightly["paused"] is False
    fire = iso_z(nightly["next_fire"])
    assert fire > datetime.now(UTC) and fire.astimezone().second == 0
    assert jobs["py"]["target"] == "python:os:getcwd"
    plain = run("list")
    assert plain.rc == 0 and "nightly" in plain.out and "Europe/Berlin" in plain.out
    assert "\x1b[" not in plain.out  # plain text when piped


def test_list_with_violations_fails_without_traceback(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", '[jobs.a]\ncron = "0 61 * * * *"\ncommand = "true"\n')
    for args in (("list",), ("list", "--json")):
        result = run(*args)
        assert result.rc == 1 and "Traceback" not in result.err and result.out == ""


HEAVY = """
import sys
from cronctl.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "alembic", "psycopg"))
print("HEAVY", heavy, file=sys.stderr)
"""


@pytest.mark.parametrize("command", [("next", "@daily"), ("next", "ok"), ("validate",),
                                     ("list",), ("list", "--json")], ids=" ".join)
def test_light_commands_do_not_import_the_database_layer(
    executed: Path, command: tuple[str, ...]
) -> None:
    # ``executed`` has a state database with rows, so ``list`` really reads last status
    proc = subprocess.run([sys.executable, "-c", HEAVY, *command], cwd=executed,
                          env=clean_env(), capture_output=True, text=True, check=False,
                          timeout=30)
    assert "HEAVY []" in proc.stderr, proc.stderr
    assert "succeeded" in proc.stdout or command[0] != "list"


# --- history, logs, cancel, trigger ----------------------------------------------------------

HISTORY_KEYS = {"id", "job", "occurrence_id", "scheduled_at", "started_at", "finished_at",
                "status", "attempt", "node", "origin", "error"}


def test_history_json_shape(run: Run, executed: Path) -> None:
    result = run("history", "--json", cwd=executed)
    assert result.rc == 0, str(result)
    rows = result.json()["executions"]
    assert [r["job"] for r in rows] == ["bad", "ok"]  # newest first
    for row in rows:
        assert set(row) >= HISTORY_KEYS
        assert isinstance(row["id"], int) and not isinstance(row["id"], bool)
        assert isinstance(row["attempt"], int) and row["attempt"] == 1
        assert isinstance(row["occurrence_id"], str) and row["occurrence_id"]
        iso_z(row["scheduled_at"])
        iso_z(row["started_at"])
        iso_z(row["finished_at"])
        assert row["status"] in STATUSES and row["origin"] in ORIGINS
        assert row["origin"] == "manual" and isinstance(row["node"], str)
    bad, ok = rows
    assert ok["status"] == "succeeded" and ok["error"] is None
    assert bad["status"] == "dead_letter" and isinstance(bad["error"], str)
    assert bad["id"] > ok["id"]


def test_history_filters(run: Run, executed: Path) -> None:
    def ids(*args: str) -> list[str]:
        result = run("history", *args, "--json", cwd=executed)
        assert result.rc == 0, str(result)
        return [r["job"] for r in result.json()["executions"]]

    assert ids("ok") == ["ok"]
    assert ids("--status", "dead_letter") == ["bad"]
    assert ids("--status", "DEAD-LETTER") == ["bad"]
    assert ids("--limit", "1") == ["bad"]
    assert ids("--since", "2h") == ["bad", "ok"]
    assert ids("--since", "3d") == ["bad", "ok"]
    future = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids("--since", future) == []
    assert ids("--since", "2020-01-01T00:00:00Z") == ["bad", "ok"]
    plain = run("history", cwd=executed)
    assert plain.rc == 0 and "dead_letter" in plain.out and "succeeded" in plain.out


@pytest.mark.parametrize(("args", "rc"), [
    (("history", "nosuchjob"), 3),
    (("history", "--since", "yesterday-ish"), 2),
    (("history", "--since", "2026-02-30"), 2),
    (("history", "--status", "exploded"), 2),
    (("logs", "999"), 3),
    (("logs", "--job", "nosuchjob"), 3),
    (("cancel", "999"), 3),
    (("cancel", "--job", "nosuchjob"), 3),
    (("trigger", "nosuchjob"), 3),
    (("next", "nosuchjob"), 3),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v))
def test_not_found_and_usage_errors(run: Run, executed: Path, args: tuple[str, ...],
                                    rc: int) -> None:
    line = assert_one_error_line(run(*args, cwd=executed), rc)
    assert line.startswith("error:")


def test_logs(run: Run, executed: Path) -> None:
    result = run("logs", "1", cwd=executed)
    assert result.rc == 0, str(result)
    assert "hello" in result.out and "oops" in result.out
    last = run("logs", "--job", "ok", "-n", "1", cwd=executed)
    assert last.rc == 0 and "oops" in last.out and "hello" not in last.out
    doc = run("logs", "1", "--json", cwd=executed).json()
    assert [line["message"] for line in doc["lines"]] == ["hello", "oops"]
    # -f on an execution that already ended prints its lines and returns
    follow = run("logs", "1", "-f", cwd=executed, timeout=15)
    assert follow.rc == 0 and "hello" in follow.out and "oops" in follow.out


def test_cancel_of_a_finished_execution_fails_cleanly(run: Run, executed: Path) -> None:
    result = run("cancel", "1", cwd=executed)
    assert result.rc == 1 and "Traceback" not in result.err and result.out == ""


def test_trigger_here_json(run: Run, jobs: None) -> None:
    result = run("trigger", "ok", "--here", "--wait", "--json")
    assert result.rc == 0, str(result)
    doc = result.json()
    assert doc["job"] == "ok" and doc["status"] == "succeeded"
    failed = run("trigger", "bad", "--here", "--wait", "--json")
    assert failed.rc == 1 and failed.json()["status"] == "dead_letter"


@pytest.mark.parametrize("args", [
    ("validate", "--json"), ("list", "--json"), ("next", "ok", "--json"),
    ("history", "--json"), ("db", "current", "--json"), ("logs", "1", "--json"),
], ids=" ".join)
def test_json_is_one_document_even_when_verbose(run: Run, executed: Path,
                                                args: tuple[str, ...]) -> None:
    result = run("-v", "-v", *args, cwd=executed)
    assert result.rc == 0, str(result)
    assert isinstance(result.json(), dict)


# --- init, systemd-unit, run ------------------------------------------------------------------

def test_init_then_validate_then_run(run: Run, tmp_path: Path) -> None:
    result = run("init")
    assert result.rc == 0, str(result)
    assert (tmp_path / "cronctl.toml").is_file()
    assert (tmp_path / "jobs.d" / "example.toml").is_file()
    check = run("validate", "--json")
    assert check.rc == 0 and check.json()["ok"] is True and check.json()["warnings"] == []
    assert check.json()["jobs"] >= 1
    again = run("init")
    assert again.rc == 1 and "Traceback" not in again.err and "--force" in again.err
    assert run("init", "--force").rc == 0
    # cronctl run starts (READY), and SIGTERM stops it with exit 0
    with subprocess.Popen([str(CRONCTL), "run"], cwd=tmp_path, env=clean_env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            deadline = time.monotonic() + 20
            seen = []
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                seen.append(line)
                if "ready" in line.lower() or not line:
                    break
            assert any("ready" in line.lower() for line in seen), "".join(seen)
            proc.send_signal(signal.SIGTERM)
            # init's `slow` job (sleep 120, hourly) may be running at the top of an hour:
            # a stop lets it finish for shutdown_timeout (30 s), then cancels it
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert rc == 0
    assert (tmp_path / "cronctl.db").is_file()


def test_systemd_unit(run: Run) -> None:
    result = run("systemd-unit")
    assert result.rc == 0, str(result)
    assert "[Service]" in result.out and "Type=notify" in result.out
    exec_start = [line for line in result.out.splitlines() if line.startswith("ExecStart=")]
    assert len(exec_start) == 1 and exec_start[0].split()[-1] == "run"
    assert "ExecReload=" in result.out and "[Install]" in result.out


# --- replay, pause, resume, status ---------------------------------------------------------------

def test_replay_dry_run(run: Run, jobs: None) -> None:
    result = run("replay", "ok", "--since", "3d", "--dry-run")
    assert result.rc == 0, str(result)
    assert_user_error(run("replay", "nosuchjob", "--since", "3d"), 3)


def test_pause_and_resume_show_in_list(run: Run, jobs: None) -> None:
    assert run("pause", "ok").rc == 0
    listed = {j["id"]: j for j in run("list", "--json").json()["jobs"]}
    assert listed["ok"]["paused"] is True
    assert run("resume", "ok").rc == 0
    listed = {j["id"]: j for j in run("list", "--json").json()["jobs"]}
    assert listed["ok"]["paused"] is False
    assert_user_error(run("pause", "nosuchjob"), 3)


def test_status(run: Run, jobs: None) -> None:
    # issue 39: a database that does not exist is said so (it looked empty), not created
    missing = run("status")
    assert missing.rc == 3 and "cronctl.db does not exist" in missing.err, str(missing)
    assert run("db", "upgrade").rc == 0
    result = run("status")
    assert result.rc == 0, str(result)

