"""The sandbox keys of SPEC section 9 as a job file writes them: ``user``, ``group``,
``limits``, ``output_limit`` and ``long_running_after``; each bad value is one violation
naming file:line, job and key."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from jobs_helpers import NOW, Load, WriteJob

from cronctl.config import Config
from cronctl.jobs.loader import load_jobs
from cronctl.jobs.model import CommandTarget, Limits
from cronctl.jobs.registry import ServiceRegistry
from cronctl.jobs.sandbox import check_identity
from cronctl.sizes import SizeError, format_size, parse_size

OK = 'cron = "0 * * * * *"\ncommand = ["true"]\n'
PY_OK = 'cron = "0 * * * * *"\ntarget = "python:os:getcwd"\n'

RULES = [
    ("unknown-user", OK + 'user = "no-such-user-cronctl"\n', "user", "unknown user"),
    ("unknown-group", OK + 'group = "no-such-group-cronctl"\n', "group", "unknown group"),
    ("blank-user", OK + 'user = " "\n', "user", "blank"),
    ("user-with-a-nul", OK + 'user = "a\\u0000b"\n', "user", "NUL character"),  # not a traceback
    ("user-on-python-job", PY_OK + 'user = "root"\n', "user", "only applies to command"),
    ("limits-on-python-job", PY_OK + 'limits = { memory = "1G" }\n', "limits",
     "only applies to command"),
    ("unknown-limit", OK + 'limits = { memroy = "1G" }\n', "limits.memroy",
     "did you mean 'memory'"),
    ("bad-size", OK + 'limits = { memory = "lots" }\n', "limits.memory", "not a size"),
    ("zero-size", OK + 'limits = { file_size = 0 }\n', "limits.file_size", "at least 1 byte"),
    ("huge-size", OK + 'limits = { memory = "99999999T" }\n', "limits.memory", "maximum"),
    ("bad-cpu-time", OK + 'limits = { cpu_time = "soon" }\n', "limits.cpu_time",
     "not a duration"),
    ("bad-open-files", OK + 'limits = { open_files = -1 }\n', "limits.open_files", ">= 1"),
    ("processes-not-int", OK + 'limits = { processes = "many" }\n', "limits.processes",
     "whole number"),
    ("limits-not-a-table", OK + 'limits = 5\n', "limits", "must be a table"),
    ("bad-output-limit", OK + 'output_limit = "big"\n', "output_limit", "not a size"),
    ("tiny-output-limit", OK + 'output_limit = 10\n', "output_limit", "minimum of 1K"),
    ("bad-long-running", OK + 'long_running_after = "later"\n', "long_running_after",
     'or "auto"'),
    ("zero-long-running", OK + 'long_running_after = 0\n', "long_running_after", ""),
]


@pytest.mark.parametrize(("body", "key", "text"), [r[1:] for r in RULES],
                         ids=[r[0] for r in RULES])
def test_rule(write: WriteJob, load: Load, body: str, key: str, text: str) -> None:
    write("a.toml", "[jobs.job1]\n" + body)
    result = load()
    assert result.jobs == ()
    assert len(result.violations) == 1, result.violations
    violation = result.violations[0]
    assert (violation.job, violation.key) == ("job1", key)
    assert text in violation.message
    assert ":" in violation.source  # path:line
    assert "\n" not in violation.message


def test_every_bad_limit_is_reported_at_once(write: WriteJob, load: Load) -> None:
    write("a.toml", "[jobs.job1]\n" + OK + 'limits = { memory = "x", procs = 1, '
                                           'cpu_time = "y" }\n')
    keys = sorted(v.key or "" for v in load().violations)
    assert keys == ["limits.cpu_time", "limits.memory", "limits.procs"]


def test_good_values_reach_the_definition(write: WriteJob, load: Load) -> None:
    write("a.toml", "[jobs.job1]\n" + OK + 'user = "root"\ngroup = "0"\n'
          'limits = { memory = "512M", cpu_time = "10m", open_files = 1024, '
          'processes = 256, file_size = "1G" }\noutput_limit = "64K"\n'
          'long_running_after = "90s"\n'
          "[jobs.job2]\n" + OK + 'long_running_after = "AUTO"\n')
    result = load()
    assert result.violations == ()
    one, two = sorted(result.jobs, key=lambda j: j.id)
    assert isinstance(one.target, CommandTarget)
    assert (one.target.user, one.target.group) == ("root", "0")
    assert one.target.limits == Limits(memory=512 * 1024**2, cpu_time=600, open_files=1024,
                                       processes=256, file_size=1024**3)
    assert one.output_limit == 64 * 1024
    assert one.long_running_after == timedelta(seconds=90)
    assert two.long_running_after == "auto"
    assert two.output_limit == 1024 * 1024  # the default
    assert two.target.limits == Limits() and not two.target.limits  # type: ignore[union-attr]


def test_output_limit_default_comes_from_the_scheduler_table(write: WriteJob,
                                                             tmp_path: Path) -> None:
    write("a.toml", "[jobs.job1]\n" + OK + "[jobs.job2]\n" + OK + 'output_limit = "2M"\n')
    config = Config(path=None, base_dir=tmp_path, database="sqlite:///s.db",
                    jobs_dir=tmp_path / "jobs.d", node_id="n", output_limit=4096)
    result = load_jobs(config.job_settings, now=NOW, registry=ServiceRegistry())
    limits = {j.id: j.output_limit for j in result.jobs}
    assert limits == {"job1": 4096, "job2": 2 * 1024**2}


def test_not_root_is_a_warning() -> None:
    assert check_identity("root", None, euid=1000) == [
        ("warning", "user", "cronctl run needs to be root to run a command as another user "
                            "or group; as this user its attempts will fail")]
    assert check_identity("root", "root", euid=0) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="the warning is for a scheduler that is not root")
def test_validate_warns_when_not_root(write: WriteJob, load: Load) -> None:  # pragma: no cover
    write("a.toml", "[jobs.job1]\n" + OK + 'user = "root"\n')
    result = load()
    assert result.violations == () and [w.key for w in result.warnings] == ["user"]


@pytest.mark.parametrize(("text", "size"), [
    ("512M", 512 * 1024**2), ("1G", 1024**3), ("64k", 65536), ("1MiB", 1024**2),
    ("10 MB", 10 * 1024**2), (4096, 4096), ("4096", 4096)])
def test_sizes(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "1.5G", "-1", True, 1.5, "1P", "1 G B"])
def test_bad_sizes(text: object) -> None:
    with pytest.raises(SizeError):
        parse_size(text)


def test_format_size() -> None:
    sizes = (1024**2, 1536, 1000, 3 * 1024**3)
    assert [format_size(n) for n in sizes] == ["1M", "1536", "1000", "3G"]
