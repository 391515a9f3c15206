"""cronctl.toml: discovery order, [scheduler] keys, database resolution, redaction."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cronctl.config import find_config_file, load_config, read_config, redact_url
from cronctl.errors import ConfigError
from cronctl.jobs.settings import JobSettings
from cronctl.options import GlobalOptions


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("CRONCTL_CONFIG", "CRONCTL_DATABASE_URL", "STATE_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


def test_no_file_means_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", Path("/nonexistent/cronctl.toml"))
    config = load_config(GlobalOptions())
    cwd = Path.cwd()
    assert config.path is None
    assert config.jobs_dir == cwd / "jobs.d"
    assert config.database == f"sqlite:///{cwd / 'cronctl.db'}"
    assert config.node_id
    assert (config.tracked, config.max_concurrent_jobs, config.auto_migrate) == (True, 10, True)
    assert config.progress_flush_interval == timedelta(seconds=10)
    assert config.shutdown_timeout == timedelta(seconds=30)
    assert config.heartbeat_interval == timedelta(seconds=5)
    assert config.clock_skew_limit == timedelta(minutes=5)


def test_state_directory_under_systemd(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", Path("/nonexistent/cronctl.toml"))
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}/state:{tmp_path}/other")
    assert load_config(GlobalOptions()).database == f"sqlite:///{tmp_path}/state/cronctl.db"


def test_lookup_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    system = tmp_path / "etc.toml"
    system.write_text("")
    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", system)
    assert find_config_file(None) == system
    Path("cronctl.toml").write_text("")
    assert find_config_file(None) == Path.cwd() / "cronctl.toml"
    env = tmp_path / "env.toml"
    env.write_text("")
    monkeypatch.setenv("CRONCTL_CONFIG", str(env))
    assert find_config_file(None) == env
    explicit = tmp_path / "explicit.toml"
    explicit.write_text("")
    assert find_config_file(explicit) == explicit


@pytest.mark.parametrize("how", ["option", "env"])
def test_named_file_must_exist(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "env":
        monkeypatch.setenv("CRONCTL_CONFIG", "missing.toml")
    options = GlobalOptions(config=Path("missing.toml") if how == "option" else None)
    with pytest.raises(ConfigError, match="missing.toml.*does not exist"):
        load_config(options)


def test_all_keys_relative_paths_and_durations(tmp_path: Path) -> None:
    conf = tmp_path / "etc" / "cronctl.toml"
    conf.parent.mkdir()
    conf.write_text("""
[scheduler]
database = "state/cron.db"
jobs_dir = "my-jobs"
node_id = "node-7"
tracked = false
max_concurrent_jobs = 3
progress_flush_interval = 2
shutdown_timeout = "1m30s"
heartbeat_interval = "2s"
clock_skew_limit = "10m"
auto_migrate = false
""")
    config = load_config(GlobalOptions(config=conf))
    assert config.path == conf
    assert config.database == f"sqlite:///{conf.parent / 'state' / 'cron.db'}"
    assert config.jobs_dir == conf.parent / "my-jobs"
    assert (config.node_id, config.tracked, config.max_concurrent_jobs) == ("node-7", False, 3)
    assert config.progress_flush_interval == timedelta(seconds=2)
    assert config.shutdown_timeout == timedelta(seconds=90)
    assert config.clock_skew_limit == timedelta(minutes=10)
    assert config.auto_migrate is False


def test_database_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    Path("cronctl.toml").write_text('[scheduler]\ndatabase = "postgresql+psycopg://a@h/db"\n')
    assert load_config(GlobalOptions()).database == "postgresql+psycopg://a@h/db"
    monkeypatch.setenv("CRONCTL_DATABASE_URL", "sqlite:////tmp/env.db")
    assert load_config(GlobalOptions()).database == "sqlite:////tmp/env.db"
    config = load_config(GlobalOptions(database="NONE"))
    assert config.database == "none" and config.in_memory
    assert load_config(GlobalOptions(database="rel.db")).database == (
        f"sqlite:///{Path.cwd() / 'rel.db'}")


def test_job_settings_carry_what_the_loader_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", Path("/nonexistent/cronctl.toml"))
    default = load_config(GlobalOptions()).job_settings
    assert default == JobSettings(jobs_dir=Path.cwd() / "jobs.d", base_dir=Path.cwd(),
                                  jobs_dir_required=False, memory_database=False,
                                  tracked_default=True)
    Path("cronctl.toml").write_text('[scheduler]\njobs_dir = "j"\ntracked = false\n')
    chosen = load_config(GlobalOptions(database="none")).job_settings
    assert chosen == JobSettings(jobs_dir=Path.cwd() / "j", base_dir=Path.cwd(),
                                 jobs_dir_required=True, memory_database=True,
                                 tracked_default=False)


def test_jobs_dir_option_wins() -> None:
    Path("cronctl.toml").write_text('[scheduler]\njobs_dir = "a"\n')
    assert load_config(GlobalOptions(jobs_dir=Path("b"))).jobs_dir == Path.cwd() / "b"


def test_every_problem_of_the_file_is_reported() -> None:
    Path("cronctl.toml").write_text("""[scheduler]
databse = "x.db"
max_concurrent_jobs = 0
shutdown_timeout = "soon"
tracked = "yes"

[schedular]
""")
    result = read_config(GlobalOptions())
    found = {(v.key, v.source.rsplit(":", 1)[-1]): v.message for v in result.violations}
    assert found.keys() == {("scheduler.databse", "2"), ("scheduler.max_concurrent_jobs", "3"),
                            ("scheduler.shutdown_timeout", "4"), ("scheduler.tracked", "5"),
                            ("schedular", "cronctl.toml")}
    assert "did you mean 'database'" in found[("scheduler.databse", "2")]
    assert "did you mean 'scheduler'" in found[("schedular", "cronctl.toml")]
    with pytest.raises(ConfigError, match="databse"):
        load_config(GlobalOptions())


def test_malformed_config_names_the_line() -> None:
    Path("cronctl.toml").write_text("[scheduler]\ntracked = \n")
    (violation,) = read_config(GlobalOptions()).violations
    assert violation.source == "cronctl.toml:2"
    assert violation.message.startswith("malformed TOML")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://user:s3cret@db.example.com:5432/cron",
         "postgresql+psycopg://user:***@db.example.com:5432/cron"),
        ("postgresql://user:p@ss/w@host/db", "postgresql://user:***@host/db"),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("postgresql://host/db?user=u&password=pw&x=1",
         "postgresql://host/db?user=u&password=***&x=1"),
        ("sqlite:////var/lib/cronctl/cronctl.db", "sqlite:////var/lib/cronctl/cronctl.db"),
        ("none", "none"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_python_path_is_relative_to_the_file_and_reaches_the_job_settings() -> None:
    Path("cronctl.toml").write_text('[scheduler]\npython_path = ["lib", "/opt/tasks"]\n')
    config = load_config(GlobalOptions())
    assert config.python_path == (Path.cwd() / "lib", Path("/opt/tasks"))
    assert config.job_settings.python_path == config.python_path
    Path("cronctl.toml").write_text('[scheduler]\npython_path = "lib"\n')
    [bad] = read_config(GlobalOptions()).violations
    assert bad.key == "scheduler.python_path" and "list of directories" in bad.message


def test_python_path_loads_modules_from_there(tmp_path: Path) -> None:
    from cronctl.jobs.loader import load_jobs

    lib = Path("lib")
    lib.mkdir()
    (lib / "elsewhere_tasks_pp.py").write_text("def run():\n    pass\n")
    Path("jobs.d").mkdir()
    Path("jobs.d/a.toml").write_text(
        '[jobs.pp]\nevery = "1h"\ntarget = "python:elsewhere_tasks_pp:run"\n')
    Path("cronctl.toml").write_text('[scheduler]\npython_path = ["lib"]\ndatabase = "none"\n')
    result = load_jobs(load_config(GlobalOptions()).job_settings)
    assert result.violations == () and [j.id for j in result.jobs if j.id == "pp"] == ["pp"]


def test_retention_defaults_and_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from cronctl.config import RetentionSettings

    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", Path("/nonexistent/cronctl.toml"))
    assert load_config(GlobalOptions()).retention == RetentionSettings(
        executions=timedelta(days=30), keep_last=20, skipped=timedelta(days=7),
        interval=timedelta(hours=1), max_log_lines=10_000)
    Path("cronctl.toml").write_text("""[retention]
executions = "90d"
keep_last = 0
skipped = "1d12h"
interval = 0
max_log_lines = 500
""")
    assert load_config(GlobalOptions()).retention == RetentionSettings(
        executions=timedelta(days=90), keep_last=0, skipped=timedelta(days=1, hours=12),
        interval=timedelta(0), max_log_lines=500)


def test_every_problem_of_retention_is_one_line_with_its_line_number() -> None:
    Path("cronctl.toml").write_text("""[scheduler]
max_log_lines = 100

[retention]
executons = "30d"
executions = "0"
keep_last = true
skipped = "40000d"
interval = "often"
max_log_lines = 0
heartbeat_interval = "5s"
""")
    result = read_config(GlobalOptions())
    found = {(v.key, v.source.rsplit(":", 1)[-1]): v.message for v in result.violations}
    assert found == {
        ("scheduler.max_log_lines", "2"): "unknown key (it belongs in [retention])",
        ("retention.executons", "5"): "unknown key (did you mean 'executions'?)",
        ("retention.executions", "6"): "'0' is zero; a duration must be > 0",
        ("retention.keep_last", "7"): "must be a whole number from 0 to 1,000,000, not True",
        ("retention.skipped", "8"):
            "'40000d' is longer than 100 years (36525d), the longest duration allowed",
        ("retention.interval", "9"):
            "'often' is not a duration; write e.g. \"90s\", \"5m\" or \"1h30m\"",
        ("retention.max_log_lines", "10"):
            "must be a whole number from 1 to 10,000,000, not 0",
        ("retention.heartbeat_interval", "11"): "unknown key (it belongs in [scheduler])",
    }
    # The values that were fine are used, the others keep their defaults.
    assert read_config(GlobalOptions()).config.retention.keep_last == 20
    with pytest.raises(ConfigError, match="retention.executons"):
        load_config(GlobalOptions())


def test_retention_must_be_a_table() -> None:
    Path("cronctl.toml").write_text('retention = "30d"\n')
    (violation,) = read_config(GlobalOptions()).violations
    assert (violation.key, violation.message) == ("retention", "must be a table ([retention])")


def test_output_limit_in_the_scheduler_table() -> None:
    Path("cronctl.toml").write_text('[scheduler]\noutput_limit = "2M"\n')
    config = load_config(GlobalOptions())
    assert config.output_limit == 2 * 1024**2
    assert config.job_settings.output_limit_default == 2 * 1024**2
    Path("cronctl.toml").write_text('[scheduler]\noutput_limit = "lots"\n')
    (violation,) = read_config(GlobalOptions()).violations
    assert (violation.key, violation.source.rsplit(":", 1)[-1]) == ("scheduler.output_limit", "2")
    assert "not a size" in violation.message


def test_cgroup_in_the_scheduler_table() -> None:
    """Issue 38: where each command attempt's cgroup is made (cronctl/cgroups.py)."""
    assert load_config(GlobalOptions()).cgroup == "auto"
    for value, expected in (("off", "off"), ("auto", "auto"),
                            ("/sys/fs/cgroup/cronctl/", "/sys/fs/cgroup/cronctl")):
        Path("cronctl.toml").write_text(f'[scheduler]\ncgroup = "{value}"\n')
        assert load_config(GlobalOptions()).cgroup == expected
    Path("cronctl.toml").write_text('[scheduler]\ncgroup = "cgroups/mine"\n')
    (violation,) = read_config(GlobalOptions()).violations
    assert violation.key == "scheduler.cgroup"
    assert violation.message == ('must be "auto", "off" or the absolute path of a cgroup v2 '
                                 "directory, not 'cgroups/mine'")
