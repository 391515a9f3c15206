"""``find_job`` (for ``cronctl next JOB`` and friends) and the ``cronctl.jobs`` exports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from jobs_helpers import NOW, WriteJob, make_settings

import cronctl.jobs
from cronctl.errors import ConfigError, NotFoundError
from cronctl.jobs import find_job, job_schedule, load_jobs
from cronctl.jobs.registry import ServiceRegistry


def test_find_job_returns_the_definition(tmp_path: Path, write: WriteJob) -> None:
    write("a.toml", '[jobs.backup]\ncron = "0 30 2 * * *"\ntimezone = "Europe/Berlin"\n'
                    'command = ["true"]\n')
    job = find_job(make_settings(tmp_path), "backup", now=NOW)
    assert job.id == "backup" and job.timezone == "Europe/Berlin"
    fire = job_schedule(job).next_after(NOW)
    assert fire == datetime(2026, 1, 2, 1, 30, tzinfo=UTC)


def test_find_job_not_found_has_did_you_mean(tmp_path: Path, write: WriteJob) -> None:
    write("a.toml", '[jobs.backup]\ncron = "0 30 2 * * *"\ncommand = ["true"]\n')
    with pytest.raises(NotFoundError, match=r"no job 'backpu' \(did you mean 'backup'\?\)"
                       ) as info:
        find_job(make_settings(tmp_path), "backpu", now=NOW)
    assert info.value.exit_code == 3


def test_find_job_ignores_other_jobs_problems(tmp_path: Path, write: WriteJob) -> None:
    write("a.toml", '[jobs.good]\nevery = "1m"\ncommand = ["true"]\n'
                    '[jobs.bad]\ncron = "0 61 * * * *"\ncommand = ["true"]\n')
    assert find_job(make_settings(tmp_path), "good", now=NOW).id == "good"
    with pytest.raises(ConfigError, match=r"job 'bad' is invalid: .*minute field"):
        find_job(make_settings(tmp_path), "bad", now=NOW)


def test_interval_schedule_uses_the_anchor(tmp_path: Path, write: WriteJob) -> None:
    write("a.toml", '[jobs.i]\nevery = "1h"\nanchor = 2020-01-01T00:15:00Z\n'
                    'command = ["true"]\n')
    (job,) = load_jobs(make_settings(tmp_path), now=NOW, registry=ServiceRegistry()).jobs
    assert job_schedule(job).next_after(NOW) == datetime(2026, 1, 1, 12, 15, tzinfo=UTC)


def test_lazy_exports() -> None:
    for name in cronctl.jobs.__all__:
        assert getattr(cronctl.jobs, name) is not None
    with pytest.raises(AttributeError):
        _ = cronctl.jobs.nope  # type: ignore[attr-defined]


def _parsed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from cronctl.jobs import toml_source

    parsed: list[str] = []
    real = toml_source.read_job_document

    def recording(path: Path) -> object:
        parsed.append(path.name)
        return real(path)

    monkeypatch.setattr(toml_source, "read_job_document", recording)
    return parsed


def test_find_job_parses_only_the_files_that_can_define_it(
        tmp_path: Path, write: WriteJob, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        write(f"f{n}.toml", "".join(f'[jobs.job-{n}{k}]\nevery = "1m"\ncommand = ["true"]\n'
                                    for k in range(3)))
    write("zz-broken.toml", "[jobs.x\n")
    parsed = _parsed_files(monkeypatch)
    assert find_job(make_settings(tmp_path), "job-31", now=NOW).id == "job-31"
    assert parsed == ["f3.toml"]


def test_find_job_sees_an_id_spelled_with_escapes_and_duplicates(
        tmp_path: Path, write: WriteJob, monkeypatch: pytest.MonkeyPatch) -> None:
    write("a.toml", '[jobs."b\\u0061ckup"]\nevery = "1m"\ncommand = ["true"]\n')
    write("b.toml", '[jobs.other]\nevery = "1m"\ncommand = ["true"]\n')
    parsed = _parsed_files(monkeypatch)
    assert find_job(make_settings(tmp_path), "backup", now=NOW).id == "backup"
    assert parsed == ["a.toml"]
    write("c.toml", '[jobs.backup]\nevery = "2m"\ncommand = ["true"]\n')
    # the same id in two files: both are read, and the answer is the one reading every
    # file gives (the first file's table; validate reports the duplicate)
    job = find_job(make_settings(tmp_path), "backup", now=NOW)
    assert parsed[-2:] == ["a.toml", "c.toml"] and job.source.endswith("a.toml:1")


def test_find_job_reads_the_calendars_of_other_files(
        tmp_path: Path, write: WriteJob, monkeypatch: pytest.MonkeyPatch) -> None:
    write("a.toml", '[jobs.backup]\nevery = "1h"\ncommand = ["true"]\ncalendar = "off"\n')
    write("b.toml", '[calendars.off]\nweekdays = ["SAT", "SUN"]\n')
    write("c.toml", '[jobs.other]\nevery = "1m"\ncommand = ["true"]\n')
    parsed = _parsed_files(monkeypatch)
    assert find_job(make_settings(tmp_path), "backup", now=NOW).id == "backup"
    assert parsed == ["a.toml", "b.toml"]


def test_find_job_of_a_dependent_reads_its_parents(tmp_path: Path, write: WriteJob) -> None:
    write("a.toml", '[jobs.extract]\ncron = "0 0 2 * * *"\ncommand = ["true"]\n')
    write("b.toml", '[jobs.load]\nafter = ["extract"]\ncommand = ["true"]\n')
    job = find_job(make_settings(tmp_path), "load", now=NOW)
    assert job.after and job_schedule(job).next_after(NOW) == datetime(2026, 1, 2, 2, 0,
                                                                       tzinfo=UTC)
