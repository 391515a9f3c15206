"""A file with many problems: every one is reported in one run, each with its line."""

from __future__ import annotations

from jobs_helpers import Load, WriteJob

BROKEN = """\
[jobs.ok]
cron = "0 * * * * *"
command = ["true"]

[jobs.bad-cron]
cron = "0 61 * * * *"
command = ["true"]

[jobs.two-schedules]
cron = "0 * * * * *"
every = "1m"
command = ["true"]

[jobs.bad-zone]
every = "5m"
timezone = "Mars/Olympus"
command = ["true"]

[jobs."bad id!"]
every = "5m"
command = ["true"]

[jobs.many]
every = "5m"
target = "python:no_such_module_abc:f"
command = "echo hi"
max_attempts = 0
mode = "single_instance"
overlap_policy = "queue_one"
colour = "blue"

[jobs.bad-shell]
every = "5m"
command = ["a", "b"]
shell = true
"""


def test_every_violation_reported_with_its_line(write: WriteJob, load: Load) -> None:
    write("broken.toml", BROKEN)
    write("other.toml", '[jobs.late]\ncron = "bad"\ncommand = ["x"]\n')
    write("zz-malformed.toml", "[jobs.x\n")
    result = load()
    assert result.jobs == ()  # nothing is registered when anything is wrong
    got = {(v.source.split("/")[-1], v.job, v.key) for v in result.violations}
    assert got == {
        ("broken.toml:6", "bad-cron", "cron"),
        ("broken.toml:11", "two-schedules", "every"),
        ("broken.toml:16", "bad-zone", "timezone"),
        ("broken.toml:19", "bad id!", None),
        ("broken.toml:26", "many", "command"),
        ("broken.toml:27", "many", "max_attempts"),
        ("broken.toml:29", "many", "overlap_policy"),
        ("broken.toml:30", "many", "colour"),
        ("broken.toml:34", "bad-shell", "command"),
        ("other.toml:2", "late", "cron"),
        ("zz-malformed.toml:1", None, None),
    }
    assert len(result.violations) == len(got)
    assert result.defined == 8


def test_violation_text_format(write: WriteJob, load: Load) -> None:
    path = write("a.toml", '[jobs.x]\ncron = "0 61 * * * *"\ncommand = ["true"]\n')
    (violation,) = load().violations
    assert str(violation) == (
        f"{path}:2: job 'x': key 'cron': minute field: 61 is out of range 0-59"
    )
    assert violation.to_json() == {
        "source": f"{path}:2",
        "job": "x",
        "key": "cron",
        "message": "minute field: 61 is out of range 0-59",
    }
