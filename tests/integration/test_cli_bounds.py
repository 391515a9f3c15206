"""Values out of range through the real entry point (``cronctl.cli.app.main``, and a
subprocess for ``run``): each is one ``error:`` line (or the violations) and exit 1 or 2,
never a traceback (issue 12, "Tracebacks"; SPEC section 5: durations at most 100 years,
counts bounded)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cronctl.cli.app import main
from cronctl.store import open_store

HUGE = "99999999999999999999"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def one_error_line(self) -> str:
        assert "Traceback" not in self.out + self.err
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("error: "), lines[0]
        return lines[0]


Cli = Callable[..., Result]


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CRONCTL_CONFIG", raising=False)
    monkeypatch.delenv("CRONCTL_DATABASE_URL", raising=False)
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "a.toml").write_text(
        '[jobs.hello]\ncron = "0 * * * * *"\ncommand = ["true"]\n')
    db = tmp_path / "state.db"
    (tmp_path / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "sqlite:///{db}"\njobs_dir = "jobs.d"\n')
    open_store(f"sqlite:///{db}", node_id="t").close()  # an existing, migrated database

    def run(*args: str) -> Result:
        capsys.readouterr()
        try:
            main(["-c", str(tmp_path / "cronctl.toml"), *args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.mark.parametrize("args", [
    ("next", "hello", "--from", "99999999999d"),
    ("next", "@every 99999999999d"),
    ("history", "--since", "99999999999d"),
    ("history", "--since", "1000000d"),
    ("replay", "hello", "--since", "99999999999d", "--dry-run"),
])
def test_durations_longer_than_100_years(cli: Cli, args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.code == 2
    assert "longer than 100 years" in result.one_error_line()


@pytest.mark.parametrize("args, what", [
    (("history", "-n", HUGE), "--limit"),
    (("logs", HUGE), "EXECUTION_ID"),
    (("cancel", HUGE), "EXECUTION_ID"),
    (("logs", "1", "--lines", HUGE), "--lines"),
    (("next", "hello", "-n", HUGE), "--count"),
    (("replay", "hello", "--since", "1d", "--max", HUGE, "--dry-run"), "--max"),
    (("logs", "9223372036854775808"), "EXECUTION_ID"),  # BIGINT maximum + 1
])
def test_integers_out_of_range(cli: Cli, args: tuple[str, ...], what: str) -> None:
    result = cli(*args)
    assert result.code == 2
    assert result.one_error_line().startswith(f"error: {what}: ")
    assert "out of range" in result.err


def test_the_largest_execution_id_is_simply_not_found(cli: Cli) -> None:
    result = cli("logs", "9223372036854775807")
    assert result.code == 3
    assert result.one_error_line() == "error: no execution 9223372036854775807"


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
                                   "9999-01-01"])
def test_absolute_times_at_the_ends_of_the_calendar(cli: Cli, value: str) -> None:
    for args in (("history", "--since", value), ("history", "--until", value),
                 ("next", "@every 1d", "--from", value)):
        result = cli(*args)
        assert result.code == 2, args
        result.one_error_line()


def test_a_directory_as_config_says_so(cli: Cli, tmp_path: Path) -> None:
    result = cli("-c", str(tmp_path), "validate")
    assert result.code == 1
    line = result.one_error_line()
    assert "is a directory" in line and "does not exist" not in line


JOB_VALUES = [
    'timeout = "99999999999d"',
    'jitter = "99999999999d"',
    'retry_backoff = "99999999999d"',
    'misfire_threshold = "99999999999d"',
    'kill_timeout = "99999999999d"',
    "timeout = 99999999999999",
    "timeout = inf",
    "timeout = nan",
    "max_attempts = 99999999999999999999",
    "catchup_limit = 99999999999999999999",
    'retry_backoff = "36525d"\nmax_attempts = 3',  # the last retry would wait 200 years
]


def _bad_job(tmp_path: Path, value: str) -> None:
    schedule = "" if value.startswith("every") else 'cron = "0 * * * * *"\n'
    (tmp_path / "jobs.d" / "a.toml").write_text(
        f'[jobs.hello]\n{schedule}command = ["true"]\n{value}\n')


@pytest.mark.parametrize("value", [*JOB_VALUES, 'every = "1000000000d"'])
def test_job_values_out_of_range_are_violations(cli: Cli, tmp_path: Path, value: str) -> None:
    _bad_job(tmp_path, value)
    checked = cli("validate")
    assert checked.code == 1
    assert "Traceback" not in checked.out + checked.err
    assert "a.toml:" in checked.out and "job 'hello'" in checked.out
    listed = cli("list")
    assert listed.code == 1
    assert "Traceback" not in listed.out + listed.err


@pytest.mark.parametrize("toml", ['shutdown_timeout = "99999999999d"',
                                  "max_concurrent_jobs = 99999999999999999999"])
def test_config_values_out_of_range(cli: Cli, tmp_path: Path, toml: str) -> None:
    config = tmp_path / "cronctl.toml"
    config.write_text(config.read_text() + toml + "\n")
    checked = cli("validate")
    assert checked.code == 1
    assert "cronctl.toml:" in checked.out and "Traceback" not in checked.out + checked.err
    assert cli("list").code == 1


@pytest.mark.slow
@pytest.mark.parametrize("value", ['timeout = "99999999999d"', 'every = "1000000000d"'])
def test_run_refuses_to_start_without_a_traceback(tmp_path: Path, value: str) -> None:
    (tmp_path / "jobs.d").mkdir()
    _bad_job(tmp_path, value)
    (tmp_path / "cronctl.toml").write_text(
        '[scheduler]\ndatabase = "none"\njobs_dir = "jobs.d"\nshutdown_timeout = "1s"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "cronctl", "-c", str(tmp_path / "cronctl.toml"), "run"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "longer than 100 years" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.postgres
def test_ids_at_the_bigint_edge_on_postgresql(postgres_url: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL said a raw "bigint out of range" for a 20-digit id."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cronctl.toml").write_text(f'[scheduler]\ndatabase = "{postgres_url}"\n')
    open_store(postgres_url, node_id="t").close()

    def run(*args: str) -> Result:
        try:
            main(["-c", str(tmp_path / "cronctl.toml"), *args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        out, err = capsys.readouterr()
        return Result(code, out, err)

    assert run("logs", "9223372036854775807").code == 3
    assert run("cancel", "9223372036854775807").code == 3
    for args in (("logs", "9223372036854775808"), ("cancel", HUGE), ("history", "-n", HUGE)):
        result = run(*args)
        assert result.code == 2, args
        assert "out of range" in result.one_error_line()
    assert run("history", "-n", "1000000", "--json").code == 0
