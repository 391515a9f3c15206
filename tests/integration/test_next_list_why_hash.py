"""``H`` through the real CLI: ``next --hash-id``, a job's own id in ``next JOB``,
``list --json``'s ``"resolved"`` and ``why``; bad input is one line, never a traceback."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cronctl.cli.app import main


def h(job_id: str, i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{job_id}\0{i}".encode()).digest()[:8], "big")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "a.toml").write_text(
        '[jobs.backup]\ncron = "H H(1-5) * * *"\ncommand = ["true"]\n\n'
        '[jobs.plain]\ncron = "0 5 * * *"\ncommand = ["true"]\n\n'
        '[jobs.tick]\nevery = "90s"\ncommand = ["true"]\n')
    (tmp_path / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "sqlite:///{tmp_path / "state.db"}"\n')
    return tmp_path


def test_next_json_shows_the_resolved_expression(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "next", "H H(1-5) * * *", "--hash-id", "backup",
                         "--from", "2026-01-01T00:00:00Z", "-n", "2", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["expression"] == "0 H H(1-5) * * *"
    assert doc["resolved"] == "0 34 1 * * *" and doc["hash_id"] == "backup"
    assert [f["utc"] for f in doc["fires"]] == ["2026-01-01T01:34:00Z", "2026-01-02T01:34:00Z"]


def test_next_without_h_has_resolved_equal_and_no_hash_id(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "next", "0 5 * * *", "--hash-id", "ignored", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["expression"] == doc["resolved"] == "0 0 5 * * *"
    assert doc["hash_id"] is None


def test_next_plain_text_names_both(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "next", "H/15 * * * * *", "--hash-id", "x.y", "-n", "1")
    start = h("x.y", 0) % 15
    assert code == 0
    assert "expression: H/15 * * * * *" in out
    assert f"resolved:   {start}-59/15 * * * * * (H for x.y)" in out


@pytest.mark.parametrize(("args", "needle"), [
    (["H * * * *"], "--hash-id"),
    (["0 H 3 * * *"], "--hash-id"),
    (["H(5-1) * * * *", "--hash-id", "a"], "minute field: H(5-1)"),
    (["H(0-99) * * * *", "--hash-id", "a"], "minute field: 99 in H(0-99) is out of range 0-59"),
    (["H/0 * * * *", "--hash-id", "a"], "minute field: step 0 in H/0"),
    (["* * H(1-31) * *", "--hash-id", "a"], "day-of-month field: 31 in H(1-31)"),
    (["H * * * *", "--hash-id", "no spaces"], "--hash-id"),
])
def test_bad_input_is_a_usage_error_on_one_line(
        capsys: pytest.CaptureFixture[str], args: list[str], needle: str) -> None:
    code, out, err = run(capsys, "next", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, err
    assert "Traceback" not in err


def test_a_job_resolves_h_with_its_own_id(project: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    config = str(project / "cronctl.toml")
    code, out, _ = run(capsys, "-c", config, "next", "backup", "--json", "-n", "1")
    doc = json.loads(out)
    assert code == 0 and doc["job"] == "backup" and doc["hash_id"] == "backup"
    assert doc["expression"] == "0 H H(1-5) * * *" and doc["resolved"] == "0 34 1 * * *"
    # the preview of an expression with --hash-id is exactly the job's
    code, out, _ = run(capsys, "next", "H H(1-5) * * *", "--hash-id", "backup", "--json",
                       "-n", "1")
    assert json.loads(out)["resolved"] == doc["resolved"]
    code, _, err = run(capsys, "-c", config, "next", "backup", "--hash-id", "other")
    assert code == 2 and "--hash-id" in err


def test_list_json_resolved(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-c", str(project / "cronctl.toml"), "list", "--json")
    assert code == 0
    jobs = {job["id"]: job for job in json.loads(out)["jobs"]}
    assert (jobs["backup"]["cron"], jobs["backup"]["resolved"]) == (
        "0 H H(1-5) * * *", "0 34 1 * * *")
    assert jobs["backup"]["next_fire"].endswith(":34:00Z")
    assert jobs["plain"]["cron"] == jobs["plain"]["resolved"] == "0 0 5 * * *"
    assert jobs["tick"]["cron"] == jobs["tick"]["resolved"] == "@every 1m30s"
    code, out, _ = run(capsys, "-c", str(project / "cronctl.toml"), "list")
    assert "0 H H(1-5) * * * = 0 34 1 * * *" in out


def test_why_shows_the_resolved_expression(project: Path) -> None:
    def why(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronctl", "-c",
                               str(project / "cronctl.toml"), "why", *args],
                              capture_output=True, text=True, timeout=60)

    # why reads an existing database (a missing one is an error, not an empty ledger)
    subprocess.run([sys.executable, "-m", "cronctl", "-c", str(project / "cronctl.toml"),
                    "db", "upgrade"], capture_output=True, check=True, timeout=60)
    done = why("backup", "2026-01-02T03:00:00Z", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["scheduled_at"] == "2026-01-02T01:34:00Z"
    assert (doc["expression"], doc["resolved"]) == ("0 H H(1-5) * * *", "0 34 1 * * *")
    done = why("backup", "2026-01-02T03:00:00Z")
    assert "schedule: 0 H H(1-5) * * * = 0 34 1 * * * (H for backup)" in done.stdout
