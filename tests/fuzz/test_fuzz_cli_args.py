"""Command-line arguments through the real entry point (``cronctl.cli.app.main``).

Cron expressions, durations, time arguments (``--since``, ``--until``, ``--from``, ``AT``)
and integer arguments (``-n``, execution ids, ``--limit``, ``--max``) as a user may type
them. Every input either works or exits 1/2/3 with one line on stderr: never a
traceback, never a hang (see ``fuzz_support.assert_clean``).

The commands run in one prepared directory: a ``cronctl.toml`` with a SQLite database
that exists and is migrated, and two jobs (``a``: cron in New York; ``b``: an interval).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_strategies import (
    cron_expressions,
    durations,
    integers_text,
    relative_times,
    times,
    zones,
)
from fuzz_support import assert_clean, cli, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

CONFIG = """\
[scheduler]
database = "sqlite:///state.db"
jobs_dir = "jobs.d"
"""
JOBS = """\
[jobs.a]
cron = "0 30 1 * * *"
timezone = "America/New_York"
command = ["true"]

[jobs.b]
every = "90s"
command = ["true"]
"""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-args")
    (root / "cronctl.toml").write_text(CONFIG, encoding="utf-8")
    (root / "jobs.d").mkdir()
    (root / "jobs.d" / "jobs.toml").write_text(JOBS, encoding="utf-8")
    outcome = cli(["db", "upgrade"], root)
    assert outcome.code == 0, str(outcome)
    return root


_json = st.sampled_from(([], ["--json"]))
_status = st.one_of(
    st.sampled_from(("succeeded", "FAILED", "skipped", "dead-letter", "bogus", "")),
    st.text(max_size=10),
)
_job = st.one_of(st.sampled_from(("a", "b", "zz", "A", "a ", "")), st.text(max_size=10))


@fuzz_settings(150)
@given(expr=cron_expressions, extra=_json)
def test_next_with_any_expression(workdir: Path, expr: str, extra: list[str]) -> None:
    assert_clean(cli(["next", expr, *extra], workdir))


@fuzz_settings(60)
@given(duration=durations, extra=_json)
def test_next_with_any_interval(workdir: Path, duration: str, extra: list[str]) -> None:
    assert_clean(cli(["next", f"@every {duration}", *extra], workdir))


@fuzz_settings(100)
@given(
    target=st.sampled_from(("a", "b", "0 0 * * *", "@every 90s", "0 30 2 * * *")),
    count=st.one_of(st.none(), integers_text),
    start=st.one_of(st.none(), times),
    tz=st.one_of(st.none(), zones),
    extra=_json,
)
def test_next_options(workdir: Path, target: str, count: str | None, start: str | None,
                      tz: str | None, extra: list[str]) -> None:
    argv = ["next", target, *extra]
    if count is not None:
        argv += ["-n", count]
    if start is not None:
        argv += [f"--from={start}"]  # `=` so that "-2h" is a value, not an option
    if tz is not None:
        argv += ["--tz", tz]
    assert_clean(cli(argv, workdir))


@fuzz_settings(80)
@given(
    job=st.one_of(st.none(), _job),
    since=st.one_of(st.none(), times),
    until=st.one_of(st.none(), times),
    limit=st.one_of(st.none(), integers_text),
    status=st.one_of(st.none(), _status),
    extra=_json,
)
def test_history_options(workdir: Path, job: str | None, since: str | None,
                         until: str | None, limit: str | None, status: str | None,
                         extra: list[str]) -> None:
    argv = ["history", *extra]
    if since is not None:
        argv.append(f"--since={since}")
    if until is not None:
        argv.append(f"--until={until}")
    if limit is not None:
        argv.append(f"--limit={limit}")
    if status is not None:
        argv.append(f"--status={status}")
    if job is not None:
        argv += ["--", job]
    assert_clean(cli(argv, workdir))


@fuzz_settings(80)
@given(
    command=st.sampled_from(("logs", "cancel")),
    execution=integers_text,
    lines=st.one_of(st.none(), integers_text),
    timeout=st.one_of(st.none(), durations),
    extra=_json,
)
def test_execution_ids(workdir: Path, command: str, execution: str, lines: str | None,
                       timeout: str | None, extra: list[str]) -> None:
    argv = [command, *extra]
    if command == "logs" and lines is not None:
        argv.append(f"--lines={lines}")
    if command == "cancel" and timeout is not None:
        argv.append(f"--timeout={timeout}")  # without --wait: read, never waited for
    argv += ["--", execution]
    assert_clean(cli(argv, workdir))


@fuzz_settings(80)
@given(
    job=_job,
    since=times,
    until=st.one_of(st.none(), times),
    max_count=st.one_of(st.none(), integers_text),
    extra=_json,
)
def test_replay_dry_run(workdir: Path, job: str, since: str, until: str | None,
                        max_count: str | None, extra: list[str]) -> None:
    argv = ["replay", "--dry-run", f"--since={since}", *extra]
    if until is not None:
        argv.append(f"--until={until}")
    if max_count is not None:
        argv.append(f"--max={max_count}")
    argv += ["--", job]
    assert_clean(cli(argv, workdir))


@fuzz_settings(80)
@given(job=_job, at=st.one_of(times, relative_times), extra=_json)
def test_why(workdir: Path, job: str, at: str, extra: list[str]) -> None:
    assert_clean(cli(["why", *extra, "--", job, at], workdir))


@fuzz_settings(40)
@given(
    command=st.sampled_from(("pause", "resume", "trigger")),
    job=_job,
    extra=_json,
)
def test_job_ids(workdir: Path, command: str, job: str, extra: list[str]) -> None:
    # trigger only for jobs that do not exist: an existing one would queue a run.
    if command == "trigger" and job.strip() in ("a", "b"):
        job = f"{job}-missing"
    assert_clean(cli([command, *extra, "--", job], workdir))


_paths = st.one_of(
    st.sampled_from(("cronctl.toml", "jobs.d", "jobs.d/jobs.toml", ".", "/", "", " ",
                     "/nonexistent/cronctl.toml", "~nosuchuser_cronctl/x", "a\x00b",
                     "state.db", "/dev/null", "a" * 5000, "\udcff.toml")),
    st.text(max_size=20),
)
# No network: SQLite, "none" or no URL at all.
_databases = st.one_of(
    st.sampled_from(("none", "sqlite:///state.db", "sqlite:///other.db", "sqlite://",
                     "sqlite:////nonexistent/x.db", "x.db", "", "mysql://", "foo://x",
                     "sqlite:///a\x00b", "~nosuchuser_cronctl/x.db", "sqlite:///%zz",
                     "sqlite:///\udcff")),
    st.text(max_size=20).filter(lambda t: "://" not in t),
)


@fuzz_settings(80)
@given(
    config=st.one_of(st.none(), _paths),
    jobs_dir=st.one_of(st.none(), _paths),
    database=st.one_of(st.none(), _databases),
    command=st.sampled_from((["validate"], ["list"], ["next", "a"], ["history"], ["status"],
                             ["list", "--json"], ["validate", "--json"])),
    after=st.booleans(),
)
def test_global_options(workdir: Path, config: str | None, jobs_dir: str | None,
                        database: str | None, command: list[str], after: bool) -> None:
    options: list[str] = []
    if config is not None:
        options.append(f"--config={config}")
    if jobs_dir is not None:
        options.append(f"--jobs-dir={jobs_dir}")
    if database is not None:
        options.append(f"--database={database}")
    argv = [*command, *options] if after else [*options, *command]
    assert_clean(cli(argv, workdir))
