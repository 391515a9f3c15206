"""``cronctl next``: output shapes, DST notes, errors, and its light start-up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.cli.app import main
from cronctl.cli.cmd_next import parse_from, resolve_next_target
from cronctl.errors import NotFoundError, UsageError


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["next", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "0 30 2 * * *", "--tz", "America/New_York",
                         "--from", "2026-03-07T12:00", "-n", "3", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)  # exactly one document, nothing else on stdout
    assert doc["job"] is None
    assert doc["expression"] == "0 30 2 * * *"
    assert doc["timezone"] == "America/New_York"
    assert doc["description"] == "At 02:30:00, every day"
    assert doc["fires"] == [
        {"local": "2026-03-08T03:00:00-04:00", "utc": "2026-03-08T07:00:00Z",
         "note": "shifted: 02:30 does not exist"},
        {"local": "2026-03-09T02:30:00-04:00", "utc": "2026-03-09T06:30:00Z", "note": None},
        {"local": "2026-03-10T02:30:00-04:00", "utc": "2026-03-10T06:30:00Z", "note": None},
    ]


def test_plain_text_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "0 30 1 * * *", "--tz", "America/New_York", "--from",
                       "2026-10-31T12:00:00-04:00", "-n", "2")
    assert code == 0
    assert "expression: 0 30 1 * * *" in out
    assert "reading:    At 01:30:00, every day" in out
    assert "dst_fold=first" in out
    lines = out.splitlines()
    # "in …"/"… ago" counts from now, not from --from (2026-11-01 is in the past here)
    assert "2026-11-01 01:30:00-04:00  2026-11-01T05:30:00Z  " in lines[-2]
    assert " ago " in lines[-2] or " in " in lines[-2]
    assert lines[-2].endswith("repeated hour, first pass")
    assert "\x1b[" not in out  # no escape codes in a pipe


def test_default_count_is_five(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "@hourly", "--from", "2026-01-01T00:00Z", "--json")
    assert len(json.loads(out)["fires"]) == 5


def test_every_interval(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "@every 90s", "--from", "2026-01-01T00:00Z", "-n", "2",
                       "--json")
    doc = json.loads(out)
    assert code == 0 and doc["expression"] == "@every 1m30s"
    assert [f["utc"] for f in doc["fires"]] == ["2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z"]


def test_never_fires_within_the_horizon(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "0 0 0 29 2 *", "--from", "2096-03-01T00:00Z", "--json")
    assert code == 0 and json.loads(out)["fires"] == []
    _, out, _ = run(capsys, "0 0 0 29 2 *", "--from", "2096-03-01T00:00Z")
    assert "no fire within 4 years" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["61 * * * *"], 2, "error: minute field: 61 is out of range 0-59"),
        (["0 0 0 30 2 *"], 2, "error: day-of-month field: 30 never exists in FEB"),
        (["@daily", "--tz", "Foo/Bar"], 2, "error: --tz: unknown time zone 'Foo/Bar'"),
        (["@daily", "--from", "soon"], 2, "error: --from: 'soon' is neither"),
        (["@every 0s"], 2, "error: interval 0s is shorter than the minimum 1s"),
        (["no-such-job"], 3, "error: no job 'no-such-job'"),
    ],
)
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], args: list[str], code: int,
                             message: str) -> None:
    got, out, err = run(capsys, *args)
    assert got == code
    assert out == ""
    assert err.startswith(message) and err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "@daily", "-n", "0")
    assert code == 2


def test_resolve_next_target() -> None:
    target = resolve_next_target("0 8 * * MON-FRI", "Europe/Helsinki")
    assert target.job_id is None and target.timezone == "Europe/Helsinki"
    assert target.schedule.text == "0 0 8 * * MON-FRI"
    assert resolve_next_target("@daily").timezone == "UTC"
    with pytest.raises(UsageError):
        resolve_next_target("* * *")
    with pytest.raises(NotFoundError):
        resolve_next_target("backup")
    found = resolve_next_target("backup", jobs=lambda job_id: target)
    assert found is target


def test_parse_from() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert parse_from(None, now, "UTC") == now
    assert parse_from("now", now, "UTC") == now
    assert parse_from("2h", now, "UTC") == now + timedelta(hours=2)
    assert parse_from("+1d", now, "UTC") == now + timedelta(days=1)
    assert parse_from("-30m", now, "UTC") == now - timedelta(minutes=30)
    assert parse_from("2026-03-08T01:00", now, "America/New_York") == datetime(
        2026, 3, 8, 6, tzinfo=UTC)
    assert parse_from("2026-03-08T01:00Z", now, "America/New_York") == datetime(
        2026, 3, 8, 1, tzinfo=UTC)


@pytest.mark.slow
def test_next_as_a_process_stays_light() -> None:
    """``next`` must not import the database stack (start-up budget: 150 ms)."""
    script = textwrap.dedent("""
        import sys
        from cronctl.cli.app import main
        try:
            main(["next", "0 0 8 * * *", "--json"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("sqlalchemy", "alembic", "psycopg"))
        assert not heavy, heavy
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["expression"] == "0 0 8 * * *"


@pytest.mark.slow
def test_python_m_cronctl_next() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cronctl", "next", "0 30 2 * * *", "--tz", "America/New_York",
         "--from", "2026-03-07T12:00", "-n", "1"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "shifted: 02:30 does not exist" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "cronctl", "next", "61 * * * *"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr == "error: minute field: 61 is out of range 0-59\n"


def _jobs_dir(tmp_path: Path) -> Path:
    jobs = tmp_path / "jobs.d"
    jobs.mkdir()
    (jobs / "a.toml").write_text(textwrap.dedent("""\
        [jobs.backup]
        cron = "0 30 1 * * *"
        timezone = "America/New_York"
        dst_fold = "both"
        command = ["true"]
        """))
    return jobs


def test_job_id_uses_the_jobs_zone_and_dst_policy(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    jobs = _jobs_dir(tmp_path)
    try:
        main(["--jobs-dir", str(jobs), "--database", "none", "next", "backup",
              "--from", "2026-10-31T12:00:00Z", "-n", "3", "--json"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert doc["job"] == "backup"
    assert doc["timezone"] == "America/New_York"
    # dst_fold = "both": 01:30 on 11-01 fires in both passes of the repeated hour.
    assert [f["utc"] for f in doc["fires"]] == [
        "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z",
    ]


def test_unknown_job_id_exits_3_with_did_you_mean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    jobs = _jobs_dir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["--jobs-dir", str(jobs), "--database", "none", "next", "backp"])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert err.strip() == "error: no job 'backp' (did you mean 'backup'?)"


def test_a_job_with_jitter_says_its_fires_come_up_to_that_much_later(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 39: `next` showed a jittered job's planned times as if it started on them."""
    jobs = tmp_path / "jobs.d"
    jobs.mkdir()
    (jobs / "a.toml").write_text('[jobs.spread]\ncron = "0 * * * *"\njitter = "90s"\n'
                                 'command = ["true"]\n')
    for args, needle in (([], "each fire starts up to 1m 30s after the time shown"),
                         (["--json"], '"jitter_seconds": 90.0')):
        try:
            main(["--jobs-dir", str(jobs), "--database", "none", "next", "spread", "-n", "1",
                  *args])
        except SystemExit as exc:
            assert not exc.code
        assert needle in capsys.readouterr().out
