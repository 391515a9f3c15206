"""SPEC section 5: where ``cronctl.toml`` is found, what it may say, and its problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acc_helpers import Run, Write, assert_user_error, clean_env

JOB = '[jobs.j]\ncron = "@hourly"\ncommand = "true"\n'


def job_ids(run: Run, *args: str, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> set[str]:
    result = run(*args, "list", "--json", cwd=cwd, env=env)
    assert result.rc == 0, str(result)
    return {job["id"] for job in result.json()["jobs"]}


def test_no_file_at_all_is_valid(run: Run) -> None:
    result = run("validate", "--json")
    assert result.rc == 0, str(result)
    assert result.json()["ok"] is True and result.json()["violations"] == []
    assert run("list", "--json").rc == 0
    assert run("validate").rc == 0


def test_discovery_order(run: Run, write: Write, tmp_path: Path) -> None:
    for name in ("cwd", "env", "flag"):
        write(f"{name}/cronctl.toml", '[scheduler]\njobs_dir = "jobs"\ndatabase = "none"\n')
        write(f"{name}/jobs/a.toml", f'[jobs.from-{name}]\ncron = "@hourly"\n'
                                    'command = "true"\n')
    cwd = tmp_path / "cwd"
    env = clean_env(CRONCTL_CONFIG=str(tmp_path / "env" / "cronctl.toml"))
    assert "from-cwd" in job_ids(run, cwd=cwd)
    assert "from-env" in job_ids(run, cwd=cwd, env=env)
    flag = str(tmp_path / "flag" / "cronctl.toml")
    assert "from-flag" in job_ids(run, "--config", flag, cwd=cwd, env=env)
    assert "from-flag" in job_ids(run, "-c", flag, cwd=cwd, env=env)


def test_system_config_is_the_last_fallback() -> None:
    """/etc/cronctl/cronctl.toml is not written by tests; check the documented path."""
    import cronctl.config as config

    assert str(config.SYSTEM_CONFIG) == "/etc/cronctl/cronctl.toml"


def test_named_config_that_does_not_exist(run: Run) -> None:
    assert_user_error(run("-c", "missing.toml", "validate"), 1)
    result = run("validate", env=clean_env(CRONCTL_CONFIG="missing.toml"))
    assert_user_error(result, 1)


def test_relative_paths_are_relative_to_the_file(run: Run, write: Write,
                                                 tmp_path: Path) -> None:
    write("etc/cronctl.toml", '[scheduler]\njobs_dir = "my-jobs"\ndatabase = "state/c.db"\n')
    write("etc/my-jobs/a.toml", JOB)
    (tmp_path / "etc" / "state").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "j" in job_ids(run, "-c", "../etc/cronctl.toml", cwd=elsewhere)
    result = run("-c", "../etc/cronctl.toml", "db", "current", "--json", cwd=elsewhere)
    assert result.rc == 0, str(result)
    assert str(tmp_path / "etc" / "state" / "c.db") in result.json()["database"]


def test_database_url_env_overrides_the_file(run: Run, write: Write, tmp_path: Path) -> None:
    write("cronctl.toml", '[scheduler]\ndatabase = "file.db"\n')
    result = run("db", "current", "--json",
                 env=clean_env(CRONCTL_DATABASE_URL=f"sqlite:///{tmp_path}/env.db"))
    assert result.rc == 0, str(result)
    assert result.json()["database"].endswith("/env.db")
    result = run("--database", f"sqlite:///{tmp_path}/flag.db", "db", "current", "--json",
                 env=clean_env(CRONCTL_DATABASE_URL=f"sqlite:///{tmp_path}/env.db"))
    assert result.json()["database"].endswith("/flag.db")


def test_default_database_is_state_directory_under_systemd(run: Run, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    result = run("db", "current", "--json", env=clean_env(STATE_DIRECTORY=str(state)))
    assert result.rc == 0, str(result)
    assert result.json()["database"] == f"sqlite:///{state}/cronctl.db"
    plain = run("db", "current", "--json")
    assert plain.json()["database"] == f"sqlite:///{tmp_path}/cronctl.db"


@pytest.mark.parametrize("value", ['"90s"', '"5m"', '"1h30m"', "45"])
def test_durations(run: Run, write: Write, value: str) -> None:
    write("cronctl.toml", f"[scheduler]\nshutdown_timeout = {value}\n"
                          f"heartbeat_interval = {value}\nclock_skew_limit = {value}\n"
                          f"progress_flush_interval = {value}\n")
    result = run("validate", "--json")
    assert result.rc == 0 and result.json()["violations"] == [], str(result)


def test_every_scheduler_key_is_known(run: Run, write: Write) -> None:
    write("cronctl.toml", """
        [scheduler]
        database = "c.db"
        jobs_dir = "jobs.d"
        node_id = "node-a"
        tracked = false
        max_concurrent_jobs = 3
        progress_flush_interval = "2s"
        shutdown_timeout = "10s"
        heartbeat_interval = 5
        clock_skew_limit = "1m"
        auto_migrate = false
        """)
    write("jobs.d/a.toml", JOB)
    result = run("validate", "--json")
    assert result.rc == 0 and result.json()["ok"] is True, str(result)


@pytest.mark.parametrize(("text", "needle"), [
    ('[scheduler]\ndatabse = "x.db"\n', "did you mean 'database'"),
    ('[scheduler]\nshutdown_timeout = "soon"\n', "soon"),
    ('[scheduler]\nmax_concurrent_jobs = 0\n', "max_concurrent_jobs"),
    ('[scheduler]\ntracked = "yes"\n', "tracked"),
    ('[schedular]\n', "did you mean 'scheduler'"),
    ("[scheduler\n", "TOML"),
    ('[scheduler]\njobs_dir = "nope"\n', "nope"),
])
def test_config_problems_are_violations(run: Run, write: Write, text: str,
                                        needle: str) -> None:
    (Path(write("cronctl.toml", "x").parent) / "cronctl.toml").write_text(text)
    result = run("validate", "--json")
    assert result.rc == 1, str(result)
    doc = result.json()
    assert doc["ok"] is False
    assert any(needle in v["message"] or needle in (v["key"] or "") or needle in v["source"]
               for v in doc["violations"]), str(result)
    assert all(v["source"].startswith(("cronctl.toml", "nope")) for v in doc["violations"])


def test_non_utf8_config(run: Run, tmp_path: Path) -> None:
    (tmp_path / "cronctl.toml").write_bytes(b"\xff\xfe[scheduler]\n")
    result = run("validate", "--json")
    assert result.rc == 1
    (violation,) = result.json()["violations"]
    assert violation["source"].startswith("cronctl.toml") and "UTF-8" in violation["message"]


def test_empty_config_means_defaults(run: Run, write: Write) -> None:
    write("cronctl.toml", "")
    write("jobs.d/a.toml", JOB)
    result = run("validate", "--json")
    assert result.rc == 0, str(result)


@pytest.mark.parametrize(("content", "needle"), [
    (b"\xff\xfe[jobs.x]\n", "UTF-8"),
    (b"[jobs.x\n", "TOML"),
    (b"[jobs]\nx = 1\n", "table"),
    (b'name = "x"\n', "name"),
])
def test_broken_job_files(run: Run, tmp_path: Path, content: bytes, needle: str) -> None:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "bad.toml").write_bytes(content)
    (tmp_path / "jobs.d" / "good.toml").write_text(JOB)
    result = run("validate", "--json")
    assert result.rc == 1, str(result)
    (violation,) = result.json()["violations"]
    assert violation["source"].startswith("jobs.d/bad.toml"), violation
    assert needle in violation["message"] + (violation["key"] or ""), violation


def test_symlink_loop_and_dangling_link(run: Run, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.d"
    jobs.mkdir()
    os.symlink("loop.toml", jobs / "loop.toml")
    os.symlink("gone", jobs / "dangling.toml")
    result = run("validate", "--json")
    assert result.rc == 1, str(result)
    sources = sorted(v["source"] for v in result.json()["violations"])
    assert sources == ["jobs.d/dangling.toml", "jobs.d/loop.toml"], str(result)


def test_missing_configured_jobs_dir(run: Run) -> None:
    result = run("--jobs-dir", "nowhere", "validate", "--json")
    assert result.rc == 1
    (violation,) = result.json()["violations"]
    assert "nowhere" in violation["source"] and "does not exist" in violation["message"]


USERINFO = "postgresql+psycopg://bob:hunter2@127.0.0.1:1/db"
QUERY = "postgresql+psycopg://bob@127.0.0.1:1/db?password=hunter2"


@pytest.mark.parametrize(("url", "args"), [
    (USERINFO, ("history", "--json")), (USERINFO, ("db", "upgrade")),
    (USERINFO, ("-v", "list")), (USERINFO, ("cancel", "1")),
    (QUERY, ("db", "current", "--json")),
])
def test_passwords_are_never_printed(run: Run, url: str, args: tuple[str, ...]) -> None:
    result = run("--database", url, *args)
    assert "hunter2" not in result.out + result.err, str(result)
    assert "Traceback" not in result.err, str(result)
    assert "127.0.0.1" in result.err  # it does say which database


def test_password_from_the_environment_is_not_printed(run: Run) -> None:
    result = run("history", env=clean_env(CRONCTL_DATABASE_URL=USERINFO))
    assert result.rc == 1 and "hunter2" not in result.err and "bob" in result.err
