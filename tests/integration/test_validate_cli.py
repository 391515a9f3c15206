"""``cronctl validate``, ``list``, ``init`` and ``token add`` end to end: exit codes, JSON
shapes, the text formats, no traceback on bad input, and a start-up that stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cronctl.cli import app as app_module
from cronctl.cli import cmd_init, cmd_list, cmd_token, cmd_validate
from cronctl.errors import CronctlError

REPO = Path(__file__).resolve().parents[2]
CRONCTL = Path(sys.executable).parent / "cronctl"
GOOD = '[jobs.hello]\ncron = "0 * * * * *"\ncommand = ["echo", "hi"]\n'


def build_app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(app_module._globals)
    for module in (cmd_validate, cmd_list, cmd_init, cmd_token):
        module.register(app)
    return app


APP = build_app()


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CRONCTL_CONFIG", "CRONCTL_DATABASE_URL", "STATE_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "cronctl.toml").write_text('[scheduler]\ndatabase = "state.db"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str) -> Run:
    """Like ``cronctl.cli.app.main``: user errors become one line and an exit code."""
    result = CliRunner().invoke(APP, list(args))
    exc = result.exception
    if isinstance(exc, CronctlError):
        return Run(exc.exit_code, result.stdout, f"error: {exc}\n")
    if exc is not None and not isinstance(exc, SystemExit):
        raise exc
    return Run(result.exit_code, result.stdout, result.stderr)


def write(project: Path, name: str, text: str) -> Path:
    path = project / "jobs.d" / name
    path.write_text(text)
    return path


# --- validate -------------------------------------------------------------------------


def test_validate_clean(project: Path) -> None:
    write(project, "a.toml", GOOD)
    run = cli("validate")
    assert run.code == 0, run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("valid: ")
    doc = cli("validate", "--json").json()
    assert doc == {"ok": True, "jobs": doc["jobs"], "violations": [], "warnings": []}
    assert doc["jobs"] >= 1  # hello, plus decorated jobs of installed packages


def test_validate_reports_every_violation(project: Path) -> None:
    write(project, "a.toml", GOOD + '[jobs.bad]\ncron = "0 61 * * * *"\ncommand = ["true"]\n'
                                    'colour = 1\n')
    write(project, "b.toml", '[jobs.hello]\nevery = "1m"\ncommand = ["true"]\n')
    run = cli("validate")
    assert run.code == 1
    lines = run.stdout.strip().splitlines()
    assert "jobs.d/a.toml:5: job 'bad': key 'cron': minute field: 61 is out of range 0-59" in (
        lines)
    assert any(line.startswith("jobs.d/a.toml:7: job 'bad': key 'colour': unknown key")
               for line in lines)
    assert any(line.startswith("jobs.d/b.toml:1: job 'hello': duplicate id 'hello'")
               for line in lines)
    assert lines[-1].startswith("invalid: 3 violations in ")


def test_validate_json_shape(project: Path) -> None:
    write(project, "a.toml", '[jobs.bad]\ncron = "0 61 * * * *"\ncommand = ["true"]\n'
                             '[jobs.warn]\ncron = "0 0 0 1 * MON"\ncommand = ["true"]\n')
    run = cli("validate", "--json")
    assert run.code == 1
    doc = run.json()
    assert isinstance(doc, dict)
    assert set(doc) == {"ok", "jobs", "violations", "warnings"}
    assert doc["ok"] is False and isinstance(doc["jobs"], int)
    assert doc["violations"] == [{"source": "jobs.d/a.toml:2", "job": "bad", "key": "cron",
                                  "message": "minute field: 61 is out of range 0-59"}]
    (warning,) = doc["warnings"]
    assert set(warning) == {"source", "job", "key", "message"}
    assert warning["job"] == "warn" and warning["key"] == "cron"


def test_warnings_pass_unless_strict(project: Path) -> None:
    write(project, "a.toml", '[jobs.warn]\ncron = "0 0 0 1 * MON"\ncommand = ["true"]\n')
    run = cli("validate")
    assert run.code == 0
    assert "jobs.d/a.toml:2: warning: job 'warn': key 'cron': both day-of-month" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("valid: 1 warning in ")
    strict = cli("validate", "--strict", "--json")
    assert strict.code == 1
    doc = strict.json()
    assert isinstance(doc, dict) and doc["ok"] is False and doc["violations"] == []


def test_config_problems_are_violations(project: Path) -> None:
    (project / "cronctl.toml").write_text('[scheduler]\njobs_dri = "x"\n')
    write(project, "a.toml", GOOD)
    run = cli("validate")
    assert run.code == 1
    assert ("cronctl.toml:2: key 'scheduler.jobs_dri': unknown key (did you mean 'jobs_dir'?)"
            in run.stdout)


def test_database_none_rejects_single_instance(project: Path) -> None:
    write(project, "a.toml", GOOD.replace("[jobs.hello]", '[jobs.hello]\nmode = "single_instance"'))
    assert cli("validate").code == 0
    run = cli("--database", "none", "validate", "--json")
    assert run.code == 1
    doc = run.json()
    assert isinstance(doc, dict) and doc["violations"][0]["key"] == "mode"


def test_missing_jobs_dir_option(project: Path) -> None:
    run = cli("--jobs-dir", "nowhere", "validate")
    assert run.code == 1
    assert "nowhere: jobs directory does not exist" in run.stdout


def test_missing_config_file_is_one_line(project: Path) -> None:
    run = cli("--config", "missing.toml", "validate")
    assert run.code == 1
    assert run.stderr.startswith("error: config file 'missing.toml'")


# --- list -----------------------------------------------------------------------------


def test_list_json_shape(project: Path) -> None:
    write(project, "a.toml", GOOD + '[jobs.tick]\nevery = "90s"\ntarget = "python:os:getcwd"\n'
                                    'timezone = "Europe/Berlin"\nmode = "single_instance"\n'
                                    '[jobs.off]\ncron = "@daily"\ncommand = ["true"]\n'
                                    "enabled = false\n")
    run = cli("list", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert isinstance(doc, dict) and set(doc) == {"jobs"}
    rows = {row["id"]: row for row in doc["jobs"]}
    for row in rows.values():
        assert {"id", "cron", "timezone", "mode", "target", "enabled", "paused",
                "next_fire"} <= set(row)
    hello = rows["hello"]
    assert hello["cron"] == "0 * * * * *"
    assert hello["timezone"] == "UTC" and hello["mode"] == "every_instance"
    assert hello["target"] == "echo hi"
    assert hello["enabled"] is True and hello["paused"] is False
    assert hello["next_fire"].endswith(":00Z")
    assert rows["tick"]["cron"] == "@every 1m30s"
    assert rows["tick"]["target"] == "python:os:getcwd"
    assert rows["tick"]["mode"] == "single_instance"
    assert rows["off"]["enabled"] is False and rows["off"]["next_fire"] is None


def test_list_plain_text_when_piped(project: Path) -> None:
    write(project, "a.toml", GOOD)
    run = cli("list")
    assert run.code == 0
    header, *rows = run.stdout.splitlines()
    assert header.split()[:4] == ["ID", "SCHEDULE", "ZONE", "MODE"]
    line = next(r for r in rows if r.startswith("hello "))
    assert "0 * * * * *" in line and "UTC" in line and "echo hi" in line and "(in " in line


def test_list_with_violations_fails_but_lists_the_valid_jobs(project: Path) -> None:
    write(project, "a.toml", '[jobs.bad]\ncron = "nope"\ncommand = ["true"]\n')
    run = cli("list", "--json")
    assert run.code == 1
    assert run.stdout == ""  # nothing valid to list: the violation and the error say it
    assert "jobs.d/a.toml:2: job 'bad': key 'cron'" in run.stderr
    # one bad file does not hide the others (issue 39: "no jobs" was all it said)
    write(project, "b.toml", GOOD)
    run = cli("list", "--json")
    assert run.code == 1
    assert [row["id"] for row in run.json()["jobs"]] == ["hello"]
    assert "jobs.d/a.toml:2: job 'bad': key 'cron'" in run.stderr


def test_list_rows_takes_a_store(project: Path) -> None:
    from datetime import UTC, datetime

    from cronctl.cli.cmd_list import list_rows
    from cronctl.config import load_config
    from cronctl.jobs.loader import load_jobs
    from cronctl.options import GlobalOptions

    write(project, "a.toml", GOOD)
    config = load_config(GlobalOptions())
    now = datetime(2026, 5, 1, 10, 0, 30, tzinfo=UTC)
    jobs = [j for j in load_jobs(config.job_settings, now=now).jobs if j.id == "hello"]

    class Store:
        def last_status(self, job_id: str) -> str | None:
            return "succeeded"

        def is_paused(self, job_id: str) -> bool:
            return job_id == "hello"

    (row,) = list_rows(config, jobs, now)
    assert (row.next_fire, row.last_status, row.paused) == (
        datetime(2026, 5, 1, 10, 1, tzinfo=UTC), None, False)
    (row,) = list_rows(config, jobs, now, store=Store())
    assert (row.next_fire, row.last_status, row.paused) == (None, "succeeded", True)


# --- init -----------------------------------------------------------------------------


def test_init_writes_valid_files_and_refuses_to_overwrite(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "new"
    run = cli("init", "--dir", str(target))
    assert run.code == 0, run.stderr
    assert (target / "cronctl.toml").read_text().startswith("# cronctl configuration")
    assert "[jobs.hello]" in (target / "jobs.d" / "example.toml").read_text()
    check = cli("--config", str(target / "cronctl.toml"), "validate", "--json")
    assert check.code == 0, check.stdout
    again = cli("init", "--dir", str(target))
    assert again.code == 1
    assert "cronctl.toml already exists; use --force" in again.stderr
    assert cli("init", "--dir", str(target), "--force").code == 0


def test_init_writes_a_tokens_file_with_an_admin_token_shown_once(tmp_path: Path) -> None:
    # cronctl serve needs a token for every request: init gives the first one
    import hashlib
    import stat

    target = tmp_path / "new"
    run = cli("init", "--dir", str(target))
    assert run.code == 0, run.stderr
    [line] = [x for x in run.stdout.splitlines() if "shown this once" in x]
    token = line.rsplit(" ", 1)[1]
    assert len(token) >= 43
    tokens = target / "tokens"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    text = tokens.read_text()
    assert token not in text
    assert f"admin operate {hashlib.sha256(token.encode()).hexdigest()}" in text
    assert '[api]\ntokens_file = "tokens"' in (target / "cronctl.toml").read_text()
    # a second init refuses to replace it; --force writes a new token, still 0600
    (target / "cronctl.toml").unlink()
    (target / "jobs.d" / "example.toml").unlink()
    again = cli("init", "--dir", str(target))
    assert again.code == 1 and "tokens already exists" in again.stderr
    tokens.chmod(0o644)
    forced = cli("init", "--dir", str(target), "--force")
    assert forced.code == 0 and token not in forced.stdout
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600 and tokens.read_text() != text


def test_init_with_database_none_writes_a_starter_that_validates(tmp_path: Path) -> None:
    target = tmp_path / "none"
    assert cli("--database", "none", "init", "--dir", str(target)).code == 0
    assert 'database = "none"' in (target / "cronctl.toml").read_text()
    check = cli("--config", str(target / "cronctl.toml"), "validate", "--json")
    assert check.code == 0, check.stdout


# --- the real binary ------------------------------------------------------------------


def run_binary(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    return subprocess.run([str(CRONCTL), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "files", "code"),
    [
        (("validate",), {"a.toml": b"[jobs.x\n"}, 1),
        (("validate",), {"a.toml": b'[jobs.x]\ndescription = "\xff"\n'}, 1),
        (("list",), {"a.toml": b'[jobs.x]\ncron = 3\ncommand = "a \'b"\n'}, 1),
        (("--config", "nope.toml", "validate"), {}, 1),
        (("--jobs-dir", "nope", "list"), {}, 1),
        (("validate", "--json"), {"a.toml": b'[jobs.x]\nevery = "1m"\ntarget = '
                                             b'"python:no_such_mod_zz:f"\n'}, 1),
    ],
    ids=["malformed", "non-utf8", "bad-types", "missing-config", "missing-jobs-dir",
         "python-target"],
)
def test_binary_no_traceback(tmp_path: Path, args: tuple[str, ...], files: dict[str, bytes],
                             code: int) -> None:
    (tmp_path / "jobs.d").mkdir()
    for name, data in files.items():
        (tmp_path / "jobs.d" / name).write_bytes(data)
    proc = run_binary(*args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    if "--json" in args:
        assert json.loads(proc.stdout)["ok"] is False


@pytest.mark.slow
def test_binary_validates_the_repository_examples() -> None:
    proc = run_binary("validate", "--json", "--strict", cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["jobs"] >= 5


@pytest.mark.slow
@pytest.mark.parametrize("command", ["validate", "list", "next"])
def test_light_commands_do_not_import_the_database_stack(command: str) -> None:
    args = [command] if command != "next" else [command, "0 * * * * *"]
    probe = (
        "import sys\n"
        "from cronctl.cli.app import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'alembic', 'psycopg'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert "HEAVY []" in proc.stderr, proc.stderr


def test_rich_table_for_terminals(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import UTC, datetime

    from cronctl.cli.cmd_list import ListRow, table
    from cronctl.cli.tables import Output

    now = datetime(2026, 5, 1, tzinfo=UTC)
    row = ListRow(id="backup", schedule="0 30 2 * * *", timezone="Europe/Berlin",
                  mode="single_instance", target="backup --all", enabled=True, paused=False,
                  next_fire=datetime(2026, 5, 1, 0, 30, tzinfo=UTC), last_status="failed",
                  description=None)
    Output(color=False, terminal=True, width=160).table(table([row], now))
    out = capsys.readouterr().out
    assert "backup" in out and "2026-05-01T00:30:00Z (in 30m)" in out and "failed" in out
    Output(color=False, terminal=True, width=60).table(table([row], now))
    narrow = capsys.readouterr().out
    assert "in 30m" in narrow and "2026-05-01T00:30:00Z" not in narrow


def test_quiet_validate_prints_nothing_when_clean(project: Path) -> None:
    write(project, "a.toml", GOOD)
    run = cli("-q", "validate")
    assert (run.code, run.stdout) == (0, "")


def test_a_unicode_digit_in_a_path_is_a_violation_not_a_traceback(tmp_path: Path) -> None:
    # "²" is a digit to str.isdigit() but not to int(): it crashed the sorting of the
    # violations by line number (found by tests/fuzz).
    proc = subprocess.run([sys.executable, "-m", "cronctl", "--jobs-dir=²", "validate"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout


def test_token_add_appends_a_digest_and_prints_the_token_once(tmp_path: Path) -> None:
    import hashlib
    import stat

    config = tmp_path / "cronctl.toml"
    config.write_text('[scheduler]\ndatabase = "none"\n')
    run = cli("--config", str(config), "token", "add", "me")
    assert run.code == 1 and "no [api] tokens_file" in run.stderr
    config.write_text('[scheduler]\ndatabase = "none"\n[api]\ntokens_file = "tokens"\n')
    run = cli("--config", str(config), "token", "add", "me", "--role", "operate")
    assert run.code == 0, run.stderr
    token = run.stdout.strip()
    tokens = tmp_path / "tokens"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    text = tokens.read_text()
    assert token not in text and f"me operate {hashlib.sha256(token.encode()).hexdigest()}" in text
    second = cli("--config", str(config), "token", "add", "ci")
    assert second.code == 0 and second.stdout.strip() != token
    assert tokens.read_text().startswith(text) and "\nci read " in tokens.read_text()
    for args, says in ((("me",), "already has a token named 'me'"),
                       (("a/b",), "token name"), (("x", "--role", "admin"), "read or operate")):
        bad = cli("--config", str(config), "token", "add", *args)
        assert bad.code == 1 and says in bad.stderr and bad.stderr.count("\n") == 1
