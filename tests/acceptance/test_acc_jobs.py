"""SPEC section 2 (jobs, sources, precedence, validation) through ``cronctl validate``,
``cronctl list`` and ``cronctl next JOB``."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from acc_helpers import Result, Run, Write, clean_env

OK = 'cron = "@hourly"\ncommand = "true"\n'


def one_job_file(write: Write, body: str, job: str = "j") -> None:
    write("jobs.d/a.toml", f"[jobs.{job}]\n" + textwrap.dedent(body).lstrip("\n"))


def validate(run: Run, *extra: str) -> Result:
    return run("--database", "sqlite:///state.db", "validate", "--json", *extra)


def only_violation(run: Run) -> dict[str, Any]:
    result = validate(run)
    assert result.rc == 1, str(result)
    doc = result.json()
    assert doc["ok"] is False
    mine = [v for v in doc["violations"] if v["job"] == "j"]
    assert len(mine) == 1, str(result)
    return mine[0]


@pytest.mark.parametrize(("body", "key", "needle"), [
    ('cron = "0 0 0 30 2 *"\ncommand = "true"', "cron", "30"),
    ('cron = "0 0 0 * 2 FRI#5"\ncommand = "true"', "cron", "never"),
    ('cron = "0 61 * * * *"\ncommand = "true"', "cron", "61"),
    ('cron = "@daily"\nevery = "5m"\ncommand = "true"', None, "every"),
    ('command = "true"', None, "cron"),
    ('cron = "@daily"\ntimezone = "Mars/Base"\ncommand = "true"', "timezone", "Mars/Base"),
    ('cron = "@daily"\nmode = "single-instanc"\ncommand = "true"', "mode", "single_instance"),
    ('cron = "@daily"\noverlap_policy = "qeue_one"\ncommand = "true"', "overlap_policy",
     "queue_one"),
    ('cron = "@daily"\ndst_gap = "jump"\ncommand = "true"', "dst_gap", "jump"),
    ('cron = "@daily"\ncommand = "true"\ntarget = "python:os:getcwd"', None, "target"),
    ('cron = "@daily"', None, "target"),
    ('cron = "@daily"\ntarget = "service:no.such.op"', "target", "no.such.op"),
    ('cron = "@daily"\ntarget = "python:no_such_module_xyz:f"', "target", "no_such_module_xyz"),
    ('cron = "@daily"\ntarget = "python:os:sep"', "target", "callable"),
    ('cron = "@daily"\ntarget = "shell:ls"', "target", "shell:ls"),
    ('cron = "@daily"\nmode = "single_instance"\noverlap_policy = "allow"\ncommand = "true"',
     "overlap_policy", "skip"),
    ('cron = "@daily"\nmode = "single_instance"\noverlap_policy = "queue_one"\ncommand = "true"',
     "overlap_policy", "queue_one"),
    ('cron = "@daily"\ntimeout = "5 minutes"\ncommand = "true"', "timeout", "5 minutes"),
    ('cron = "@daily"\nretry_backoff = "-1s"\ncommand = "true"', "retry_backoff", "-1s"),
    ('every = "0s"\ncommand = "true"', "every", "0s"),
    ('every = "500ms"\ncommand = "true"', "every", "500ms"),
    ('cron = "@daily"\ntimezon = "UTC"\ncommand = "true"', "timezon", "did you mean 'timezone'"),
    ('cron = "@daily"\ncommand = "true"\nmax_attempts = 0', "max_attempts", "0"),
])
def test_each_violation_names_file_line_job_key(
    run: Run, write: Write, body: str, key: str | None, needle: str
) -> None:
    one_job_file(write, body)
    violation = only_violation(run)
    assert violation["source"].startswith("jobs.d/a.toml:"), violation
    assert violation["source"].rsplit(":", 1)[1].isdigit(), violation
    if key is not None:
        assert violation["key"] == key, violation
    assert needle in violation["message"], violation
    assert "\n" not in violation["message"]


def test_every_violation_at_once_and_plain_output(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", """
        [jobs.one]
        cron = "0 61 * * * *"
        command = "true"

        [jobs.two]
        cron = "@daily"
        timezone = "Nowhere/Land"
        command = "true"
        """)
    write("jobs.d/b.toml", """
        [jobs.three]
        cron = "@daily"
        mode = "sometimes"
        command = "true"
        """)
    result = validate(run)
    doc = result.json()
    assert result.rc == 1 and doc["ok"] is False
    assert {(v["job"], v["key"]) for v in doc["violations"]} >= {
        ("one", "cron"), ("two", "timezone"), ("three", "mode")}
    plain = run("--database", "sqlite:///state.db", "validate")
    assert plain.rc == 1 and "Traceback" not in plain.out + plain.err
    for needle in ("jobs.d/a.toml:2", "jobs.d/a.toml:7", "jobs.d/b.toml:3"):
        assert needle in plain.out, str(plain)


def test_duplicate_ids_across_files(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", "[jobs.dup]\n" + OK)
    write("jobs.d/b.toml", "[jobs.dup]\n" + OK)
    result = validate(run)
    assert result.rc == 1
    (violation,) = [v for v in result.json()["violations"] if v["job"] == "dup"]
    assert "duplicate" in violation["message"] and "a.toml" in violation["message"]


@pytest.mark.parametrize("job_id", ["bad id", "x" * 201, "a/b", "ünï"])
def test_bad_ids(run: Run, write: Write, job_id: str) -> None:
    write("jobs.d/a.toml", f'[jobs."{job_id}"]\n' + OK)
    result = validate(run)
    assert result.rc == 1, str(result)
    assert any(v["job"] == job_id for v in result.json()["violations"]), str(result)


def test_blank_id(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", '[jobs.""]\n' + OK)
    result = validate(run)
    assert result.rc == 1 and result.json()["violations"], str(result)


def test_good_ids_and_every_key_accepted(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", """
        [jobs."Ab.c_d-9"]
        cron = "0 0 8 * * MON-FRI"
        timezone = "Europe/Berlin"
        command = ["echo", "hi"]
        env = { A = "1" }
        cwd = "/tmp"
        enabled = true
        mode = "SINGLE-INSTANCE"
        overlap_policy = "Skip"
        serial_group = "g"
        misfire_policy = "FIRE-ALL"
        misfire_threshold = "90s"
        catchup_limit = 5
        max_attempts = 4
        retry_backoff = "1h30m"
        timeout = 120
        kill_timeout = "5s"
        tracked = false
        jitter = "30s"
        parameters = { batches = 3 }
        payload = [1, 2]
        description = "all keys"
        dst_gap = "Skip"
        dst_fold = "BOTH"

        [jobs.interval]
        every = 90
        anchor = "2026-01-01T00:00:10Z"
        command = "echo tick"
        shell = true
        overlap_policy = "queue-one"
        """)
    result = validate(run)
    assert result.rc == 0 and result.json()["ok"] is True, str(result)
    listed = {j["id"]: j for j in run("--database", "sqlite:///state.db", "--jobs-dir", "jobs.d",
                                      "list", "--json").json()["jobs"]}
    assert listed["Ab.c_d-9"]["mode"] == "single_instance"
    assert listed["Ab.c_d-9"]["cron"] == "0 0 8 * * MON-FRI"
    assert listed["interval"]["mode"] == "every_instance"


def test_interval_job_fires_at_anchor_plus_k_every(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", """
        [jobs.quarter]
        every = "15m"
        command = "true"

        [jobs.anchored]
        every = 90
        anchor = "2026-01-01T00:00:10Z"
        command = "true"
        """)
    q = run("next", "quarter", "-n", "4", "--from", "2026-01-01T00:07:00Z", "--json")
    assert q.rc == 0, str(q)
    assert [f["utc"] for f in q.json()["fires"]] == [
        "2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z",
        "2026-01-01T01:00:00Z"]
    a = run("next", "anchored", "-n", "2", "--from", "2026-01-01T00:00:00Z", "--json")
    assert [f["utc"] for f in a.json()["fires"]] == [
        "2026-01-01T00:00:10Z", "2026-01-01T00:01:40Z"]


def test_next_job_uses_the_jobs_zone_and_dst_policies(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", """
        [jobs.nightly]
        cron = "0 30 2 * * *"
        timezone = "America/New_York"
        dst_gap = "skip"
        command = "true"
        """)
    result = run("next", "nightly", "-n", "1", "--from", "2026-03-07T12:00:00Z", "--json")
    doc = result.json()
    assert doc["job"] == "nightly" and doc["timezone"] == "America/New_York"
    assert [f["utc"] for f in doc["fires"]] == ["2026-03-09T06:30:00Z"]
    assert doc["fires"][0]["local"] == "2026-03-09T02:30:00-04:00"


def test_disabled_job_is_listed_as_disabled_and_valid(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", '[jobs.off]\nenabled = false\n' + OK)
    listed = run("--database", "none", "list", "--json").json()["jobs"]
    (off,) = [j for j in listed if j["id"] == "off"]
    assert off["enabled"] is False and off["next_fire"] is None


def test_single_instance_needs_a_database(run: Run, write: Write) -> None:
    write("jobs.d/a.toml", '[jobs.si]\nmode = "single_instance"\n' + OK)
    for args, env in ((("--database", "none"), clean_env()),
                      ((), clean_env(CRONCTL_DATABASE_URL="none"))):
        result = run(*args, "validate", "--json", env=env)
        assert result.rc == 1, str(result)
        (violation,) = result.json()["violations"]
        assert violation["job"] == "si" and violation["key"] == "mode"
    write("cronctl.toml", '[scheduler]\ndatabase = "none"\n')
    assert run("validate").rc == 1
    assert run("--database", "sqlite:///s.db", "validate").rc == 0


@pytest.mark.parametrize(("body", "key"), [
    ('cron = "0 0 0 */2 * 1"\ncommand = "true"', "cron"),
    ('cron = "* * * * *"\ncommand = "true"\ntimeout = "5m"', "timeout"),
    ('cron = "* * * * * *"\ncommand = "true"\nmisfire_policy = "fire_all"', "misfire_policy"),
])
def test_warnings_exit_zero_unless_strict(run: Run, write: Write, body: str, key: str) -> None:
    one_job_file(write, body)
    result = validate(run)
    doc = result.json()
    assert result.rc == 0 and doc["ok"] is True and doc["violations"] == [], str(result)
    (warning,) = [w for w in doc["warnings"] if w["job"] == "j"]
    assert warning["key"] == key and warning["source"].startswith("jobs.d/a.toml")
    assert set(warning) >= {"source", "job", "key", "message"}
    strict = validate(run, "--strict")
    assert strict.rc == 1 and strict.json()["ok"] is False


def test_no_warning_for_equal_sets(run: Run, write: Write) -> None:
    one_job_file(write, 'cron = "0 0 0 1 * */1"\ncommand = "true"')
    assert [w for w in validate(run).json()["warnings"] if w["job"] == "j"] == []


# --- decorated jobs ---------------------------------------------------------------------

SERVICE = '''
from cronctl import cron_job, operation, service


@service(namespace="acc", name="svc")
class Svc:
    @operation("work")
    @cron_job(id="acc.work", cron="0 0 3 * * *", description="decorated",
              max_attempts=5)
    def work(self) -> None:
        pass

    @operation("other")
    def other(self) -> None:
        pass
'''

BROKEN = "raise RuntimeError('boom at import')\n"


def make_site(root: Path, *, broken: bool = False) -> Path:
    """A fake installed distribution registering ``acc_svc:Svc`` (and a broken one)."""
    site = root / "site"
    (site / "acc_svc").mkdir(parents=True)
    (site / "acc_svc" / "__init__.py").write_text(SERVICE)
    dist = site / "acc_svc-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acc-svc\nVersion: 1.0\n")
    entries = "[cronctl.services]\nsvc = acc_svc:Svc\n"
    if broken:
        (site / "acc_broken.py").write_text(BROKEN)
        entries += "broken = acc_broken:Thing\n"
    (dist / "entry_points.txt").write_text(entries)
    return site


def site_env(site: Path) -> dict[str, str]:
    # Keep the caller's PYTHONPATH after the fake site: it is how a worktree's cronctl is
    # the one under test rather than the installed one.
    inherited = os.environ.get("PYTHONPATH", "")
    return clean_env(PYTHONPATH=os.pathsep.join(filter(None, [str(site), inherited])))


def test_decorated_job_and_toml_override(run: Run, write: Write, tmp_path: Path) -> None:
    env = site_env(make_site(tmp_path))
    write("jobs.d/a.toml", """
        [jobs."acc.work"]
        cron = "0 0 4 * * *"
        mode = "single_instance"

        [jobs.cfgonly]
        cron = "@daily"
        target = "service:acc.svc.other"
        """)
    result = run("--database", "sqlite:///s.db", "list", "--json", env=env)
    assert result.rc == 0, str(result)
    jobs = {j["id"]: j for j in result.json()["jobs"]}
    work = jobs["acc.work"]
    assert work["target"] == "service:acc.svc.work"
    assert work["cron"] == "0 0 4 * * *"            # TOML over the decorator
    assert work["mode"] == "single_instance"
    assert work["description"] == "decorated"       # decorator key kept
    assert jobs["cfgonly"]["target"] == "service:acc.svc.other"


def test_broken_entry_point_is_a_violation_and_others_still_load(
    run: Run, write: Write, tmp_path: Path
) -> None:
    env = site_env(make_site(tmp_path, broken=True))
    write("jobs.d/a.toml", '[jobs.x]\ncron = "0 61 * * * *"\ncommand = "true"\n')
    result = run("--database", "sqlite:///s.db", "validate", "--json", env=env)
    assert result.rc == 1, str(result)
    doc = result.json()
    messages = " ".join(v["message"] + " " + v["source"] for v in doc["violations"])
    assert "boom at import" in messages and "Traceback" not in result.err
    assert any(v["job"] == "x" for v in doc["violations"])


def test_explicit_fire_now_on_every_instance_is_honoured(tmp_path: Path, write: Write) -> None:
    """Not visible on the command line; checked through the jobs library."""
    import subprocess

    write("jobs.d/a.toml", """
        [jobs.explicit]
        cron = "@hourly"
        command = "true"
        misfire_policy = "fire_now"

        [jobs.default]
        cron = "@hourly"
        command = "true"

        [jobs.single]
        cron = "@hourly"
        command = "true"
        mode = "single_instance"
        """)
    code = textwrap.dedent("""
        from cronctl.options import GlobalOptions
        from cronctl.config import load_config
        from cronctl.jobs import load_jobs
        result = load_jobs(load_config(GlobalOptions()).job_settings)
        assert result.ok, result.violations
        for job in result.jobs:
            print(job.id, job.mode.value, job.misfire_policy.value)
        """)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=clean_env(),
                         capture_output=True, text=True, check=True).stdout
    got = dict((line.split()[0], line.split()[2]) for line in out.splitlines())
    assert got["explicit"] == "fire_now"
    assert got["default"] == "skip"
    assert got["single"] == "fire_now"


DECORATED_MISTAKES = '''
from cronctl import cron_job, operation, service


@service(namespace="acc", name="bad")
class Bad:
    @operation("a")
    @cron_job(cron="@daily")
    def no_id(self) -> None: ...

    @cron_job(id="not-an-operation", cron="@daily")
    def plain(self) -> None: ...

    @operation("d")
    @cron_job(id="both", cron="@daily", every="5m", mode="bogus")
    def both(self) -> None: ...
'''


def test_decorator_mistakes_are_violations(run: Run, tmp_path: Path) -> None:
    site = make_site(tmp_path)
    (site / "acc_bad.py").write_text(DECORATED_MISTAKES)
    entries = site / "acc_svc-1.0.dist-info" / "entry_points.txt"
    entries.write_text(entries.read_text() + "bad = acc_bad:Bad\n")
    (tmp_path / "jobs.d").mkdir()
    result = run("--database", "sqlite:///s.db", "validate", "--json", env=site_env(site))
    assert result.rc == 1, str(result)
    found = {(v["job"], v["key"]) for v in result.json()["violations"]}
    assert (None, None) in found or any(j is None for j, _ in found)   # missing id
    assert any(j == "not-an-operation" for j, _ in found)
    assert ("both", "mode") in found
    assert all("acc_bad" in v["source"] for v in result.json()["violations"])
