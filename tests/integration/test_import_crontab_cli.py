"""``cronctl import-crontab`` through the real CLI (``python -m cronctl``): the file it
writes (and that ``validate`` accepts), ``--dry-run``, ``--json``, exit codes, refusing to
overwrite, bad files, and that a converted ``%`` command gets cron's standard input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CLEAN = """\
# m h dom mon dow command
PATH=/usr/local/bin:/usr/bin:/bin
CRON_TZ=Europe/Berlin
0 4 1-31 * 1 /usr/local/bin/backup.sh --inc
*/15 9-17 * * mon-fri /opt/poll
@daily date +\\%F > /tmp/today
"""

WITH_PROBLEMS = CLEAN + """\
0 4 */2 * 1 /usr/local/bin/backup.sh --full
@reboot /opt/start
MAILTO=ops@example.com
99 * * * * bad
"""


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, object]:
        doc = json.loads(self.out)
        assert isinstance(doc, dict)
        return doc


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n')
    return tmp_path


def cronctl(cwd: Path, *args: str, stdin: str | None = None) -> Run:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "TZ": "UTC"}
    proc = subprocess.run([sys.executable, "-m", "cronctl", *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return Run(proc.returncode, proc.stdout, proc.stderr)


def test_writes_the_job_file_into_jobs_dir_and_validate_accepts_it(workdir: Path) -> None:
    (workdir / "mycron").write_text(CLEAN)
    run = cronctl(workdir, "import-crontab", "mycron")
    assert run.code == 0, run.err
    written = workdir / "jobs.d" / "mycron.toml"
    assert f"3 jobs converted, written to {written}" in run.out
    jobs = tomllib.loads(written.read_text())["jobs"]
    assert jobs["backup"]["cron"] == "0 0 4 * * *"  # cron's OR with 1-31: every day
    assert jobs["backup"]["timezone"] == "Europe/Berlin"
    assert jobs["poll"]["dst_gap"] == "skip"
    assert jobs["date"]["command"] == "date +%F > /tmp/today"
    assert "# mycron line 4: 0 4 1-31 * 1 /usr/local/bin/backup.sh --inc" in written.read_text()
    checked = cronctl(workdir, "validate", "--json")
    assert checked.code == 0, checked.out
    assert checked.json()["ok"] is True


def test_what_the_importer_wrote_on_purpose_draws_no_day_warning(workdir: Path) -> None:
    """Issue 24: `0 9 1-7 * MON` (cron: the 1st-7th OR Mondays, since neither field starts
    with '*') drew the "both day fields restricted" warning right after the import."""
    (workdir / "mycron").write_text("0 9 1-7 * MON /bin/true\n")
    assert cronctl(workdir, "import-crontab", "mycron").code == 0
    written = (workdir / "jobs.d" / "mycron.toml").read_text()
    assert 'cron = "0 0 9 1-7 * MON"  # cronctl: days-or' in written
    checked = cronctl(workdir, "validate", "--strict", "--json")
    assert checked.code == 0 and checked.json()["warnings"] == [], checked.out
    # without the mark (written by hand), the OR rule is still pointed out
    (workdir / "jobs.d" / "mycron.toml").write_text(written.replace("# cronctl: days-or", "#"))
    warned = cronctl(workdir, "validate", "--json").json()["warnings"]
    assert [(w["key"], "days-or" in w["message"]) for w in warned] == [("cron", True)]


def test_mailto_becomes_notify_mail(workdir: Path) -> None:
    """Issue 24: import-crontab suggested a sendmail command for MAILTO; it now writes
    notify.mail for the jobs after it (cron mails output; cronctl mails failure events)."""
    (workdir / "mycron").write_text('MAILTO="ops@example.com, root"\n0 9 * * * /bin/true\n'
                                    'MAILTO=""\n0 10 * * * /bin/false\n')
    run = cronctl(workdir, "import-crontab", "mycron")
    assert run.code == 0, run.err
    text = (workdir / "jobs.d" / "mycron.toml").read_text()
    jobs = tomllib.loads(text)["jobs"]
    assert jobs["true"]["notify"] == {"mail": ["ops@example.com", "root"]}
    assert "notify" not in jobs["false"]
    assert "# MAILTO became notify.mail" in text
    assert cronctl(workdir, "validate", "--json").json()["ok"] is True


def test_not_converted_lines_give_exit_1_and_one_line_each(workdir: Path) -> None:
    (workdir / "mycron").write_text(WITH_PROBLEMS)
    run = cronctl(workdir, "import-crontab", "mycron")
    assert run.code == 1
    problems = [line for line in run.err.splitlines() if "not converted" in line]
    assert [p.split(":")[1] for p in problems] == ["7", "8", "10"]  # MAILTO (9) converts
    assert "both */2 (day of month) and 1 (day of week)" in problems[0]
    text = (workdir / "jobs.d" / "mycron.toml").read_text()  # the rest is still written
    assert len(tomllib.loads(text)["jobs"]) == 3
    assert "#   line 8: @reboot /opt/start" in text


def test_dry_run_prints_and_writes_nothing(workdir: Path) -> None:
    (workdir / "mycron").write_text(CLEAN)
    run = cronctl(workdir, "import-crontab", "mycron", "--dry-run")
    assert run.code == 0
    assert len(tomllib.loads(run.out)["jobs"]) == 3  # stdout is the TOML alone
    assert "3 jobs converted" in run.err
    assert not (workdir / "jobs.d").exists()


def test_json_shape(workdir: Path) -> None:
    (workdir / "mycron").write_text(WITH_PROBLEMS)
    run = cronctl(workdir, "import-crontab", "mycron", "--json")
    assert run.code == 1
    doc = run.json()
    assert doc["written"] == str(workdir / "jobs.d" / "mycron.toml")
    jobs = doc["jobs"]
    assert isinstance(jobs, list)
    assert jobs[0] == {"id": "backup", "line": 4, "cron": "0 0 4 * * *",
                       "timezone": "Europe/Berlin", "command": "/usr/local/bin/backup.sh --inc",
                       "user": None}
    problems = doc["not_converted"]
    assert isinstance(problems, list)
    assert problems[1] == {"line": 8, "text": "@reboot /opt/start",
                           "reason": problems[1]["reason"]}
    assert set(problems[2]) == {"line", "text", "reason"}
    assert run.err == "" or "not converted" not in run.err
    dry = cronctl(workdir, "import-crontab", "mycron", "--json", "--dry-run", "--force")
    assert dry.json()["written"] is None
    assert "[jobs.backup]" in str(dry.json()["toml"])


def test_never_overwrites_without_force(workdir: Path) -> None:
    (workdir / "mycron").write_text(CLEAN)
    assert cronctl(workdir, "import-crontab", "mycron").code == 0
    target = workdir / "jobs.d" / "mycron.toml"
    target.write_text("# edited by hand\n")
    again = cronctl(workdir, "import-crontab", "mycron")
    assert again.code == 1
    assert again.err.strip() == (f"error: {target} already exists; --force overwrites it, "
                                 "--out PATH writes elsewhere, --dry-run only prints")
    assert target.read_text() == "# edited by hand\n"
    forced = cronctl(workdir, "import-crontab", "mycron", "--force")
    assert forced.code == 0
    # Its own old ids do not count as taken: the same ids again, not backup-2.
    assert "backup" in tomllib.loads(target.read_text())["jobs"]


def test_out_stdin_and_system_format(workdir: Path) -> None:
    crontab = "17 * * * * root cd / && run-parts --report /etc/cron.hourly\n"
    run = cronctl(workdir, "import-crontab", "-", "--system", "--out", "-", stdin=crontab)
    assert run.code == 0
    jobs = tomllib.loads(run.out)["jobs"]
    assert jobs["cron.hourly"]["command"] == "cd / && run-parts --report /etc/cron.hourly"
    assert jobs["cron.hourly"]["timezone"] == "UTC"  # $TZ: the machine's zone
    assert "user" not in jobs["cron.hourly"]  # root's line: the scheduler's own user
    assert "run as that user" not in run.err
    out = workdir / "elsewhere.toml"
    written = cronctl(workdir, "import-crontab", "-", "--system", "--out", str(out), "--tz",
                      "Asia/Tokyo", stdin=crontab)
    assert written.code == 0
    assert tomllib.loads(out.read_text())["jobs"]["cron.hourly"]["timezone"] == "Asia/Tokyo"


@pytest.mark.parametrize("setup, args, code, message", [
    (None, ("missing",), 1, "error: cannot read missing: No such file or directory"),
    ("dir", ("adir",), 1, "error: cannot read adir: it is a directory, not a crontab"),
    ("binary", ("bin.cron",), 1, "error: cannot read bin.cron: not UTF-8 text (line 2, byte 12)"),
    (None, ("-", "--tz", "Mars/Base"), 2, "error: --tz: unknown time zone 'Mars/Base'; use an "
     "IANA name like 'Europe/Berlin'"),
])
def test_bad_input_is_one_line(workdir: Path, setup: str | None, args: tuple[str, ...],
                               code: int, message: str) -> None:
    if setup == "dir":
        (workdir / "adir").mkdir()
    elif setup == "binary":
        (workdir / "bin.cron").write_bytes(b"0 0 * *\n * x\xff\xfe\n")
    run = cronctl(workdir, "import-crontab", *args, stdin="")
    assert run.code == code
    assert run.err.strip() == message
    assert run.out == ""


@pytest.mark.parametrize("shell", ["", "SHELL=/bin/bash\n"])
def test_a_converted_percent_command_gets_crons_standard_input(workdir: Path,
                                                               shell: str) -> None:
    sink = workdir / "got"
    # What cron feeds: after the first unescaped %, each % is a newline; \% is a %.
    line = f"0 0 * * * cat > {sink}; echo \\%done >> {sink}%it's 100\\% %  two\\x\n"
    run = cronctl(workdir, "import-crontab", "-", "--out", "-", stdin=shell + line)
    assert run.code == 0, run.err
    (job,) = tomllib.loads(run.out)["jobs"].values()
    assert job["shell"] is True
    subprocess.run(["/bin/sh", "-c", job["command"]], check=True, timeout=30,
                   env={"PATH": "/usr/bin:/bin"})
    assert sink.read_text() == "it's 100% \n  two\\x%done\n"


def test_spread_writes_h_for_hourly_and_daily_only_when_asked(workdir: Path) -> None:
    (workdir / "mycron").write_text("@hourly /opt/a\n@daily /opt/b\n@weekly /opt/c\n")
    plain = tomllib.loads(cronctl(workdir, "import-crontab", "mycron", "--dry-run").out)
    assert [j["cron"] for j in plain["jobs"].values()] == ["@hourly", "@daily", "@weekly"]
    run = cronctl(workdir, "import-crontab", "mycron", "--spread")
    assert run.code == 0, run.err
    text = (workdir / "jobs.d" / "mycron.toml").read_text()
    jobs = tomllib.loads(text)["jobs"]
    assert [j["cron"] for j in jobs.values()] == ["H * * * *", "H H * * *", "@weekly"]
    assert "# --spread: @hourly became 'H * * * *'" in text
    # the written file validates, and each H resolves with the job's own id
    checked = cronctl(workdir, "list", "--json")
    assert checked.code == 0, checked.err
    rows = {row["id"]: row for row in json.loads(checked.out)["jobs"]}
    assert "H" not in rows["a"]["resolved"] and "H" not in rows["b"]["resolved"]


def test_system_crontab_lines_of_other_users_keep_their_user(workdir: Path) -> None:
    """A system crontab's ``nobody`` line ran as nobody under cron: the job says
    ``user = "nobody"`` and never runs as root; the file validates as written."""
    crontab = ("*/5 * * * * nobody /usr/bin/env true\n"
               "0 3 * * * root /usr/bin/env true\n"
               "0 4 * * * nobody echo a\x00b\n")
    (workdir / "jobs.d").mkdir()
    run = cronctl(workdir, "import-crontab", "-", "--system", "--out", "jobs.d/sys.toml",
                  stdin=crontab)
    assert run.code == 1, run.err  # one line was not converted
    jobs = tomllib.loads((workdir / "jobs.d" / "sys.toml").read_text())["jobs"]
    users = sorted((job["cron"], job.get("user", "-")) for job in jobs.values())
    assert users == [("0 */5 * * * *", "nobody"), ("0 0 3 * * *", "-")], jobs
    assert "lines of nobody run as that user" in run.err
    assert "standard input:3: not converted: the line holds a NUL character" in run.err
    checked = cronctl(workdir, "validate")
    assert checked.code == 0, checked.err


def test_a_command_cron_cut_at_percent_is_converted_with_a_warning(workdir: Path) -> None:
    """Issue 39: `date +%F` (unescaped) was converted faithfully, cut as cron cut it,
    without a word that it was broken under cron too."""
    (workdir / "mycron").write_text("0 4 * * * date +%F > /tmp/today\n"
                                    "0 5 * * * date +\\%F > /tmp/fine\n")
    run = cronctl(workdir, "import-crontab", "mycron", "--dry-run")
    assert run.code == 0
    warned = [line for line in run.err.splitlines() if ": warning: " in line]
    assert len(warned) == 1 and warned[0].startswith("mycron:1: warning: cron cut this "
                                                     "command at its first unescaped '%'")
    assert "# warning: cron cut this command" in run.out
    doc = cronctl(workdir, "import-crontab", "mycron", "--dry-run", "--json").json()
    assert [w["line"] for w in doc["warnings"]] == [1]  # type: ignore[index, union-attr]


def test_ids_say_what_a_common_tool_works_on(workdir: Path) -> None:
    """Issue 39: ids came from the first word (`echo`, `echo-2`, `find`)."""
    (workdir / "mycron").write_text("0 1 * * * echo hello > /tmp/a\n"
                                    "0 2 * * * echo bye > /tmp/b\n"
                                    "0 3 * * * find /var/log -mtime +7 -delete\n"
                                    "0 4 * * * /usr/local/bin/backup.sh --full\n")
    doc = cronctl(workdir, "import-crontab", "mycron", "--dry-run", "--json").json()
    assert [j["id"] for j in doc["jobs"]] == [  # type: ignore[union-attr]
        "echo-hello", "echo-bye", "find-log", "backup"]


def test_the_zone_note_only_when_a_line_has_no_cron_tz(workdir: Path) -> None:
    """Issue 39: "(lines without CRON_TZ/TZ fire in Etc/UTC)" though CRON_TZ was set."""
    (workdir / "mycron").write_text("CRON_TZ=Europe/Berlin\n0 1 * * * /opt/a\n")
    assert "lines without CRON_TZ/TZ" not in cronctl(workdir, "import-crontab", "mycron",
                                                     "--dry-run").err
    (workdir / "mycron").write_text("0 1 * * * /opt/a\nCRON_TZ=Europe/Berlin\n0 2 * * * /opt/b\n")
    assert "(lines without CRON_TZ/TZ fire in UTC)" in cronctl(workdir, "import-crontab",
                                                               "mycron", "--dry-run").err


def test_a_dry_run_that_reports_unconverted_lines_exits_0(workdir: Path) -> None:
    """Issue 39: `--dry-run` exited 1 for an @reboot line: it only reports. Writing still
    exits 1 when a line was not converted."""
    (workdir / "mycron").write_text("@reboot /opt/start\n0 1 * * * /opt/a\n")
    dry = cronctl(workdir, "import-crontab", "mycron", "--dry-run")
    assert dry.code == 0 and "mycron:1: not converted: @reboot" in dry.err
    assert cronctl(workdir, "import-crontab", "mycron", "--dry-run", "--json").code == 0
    assert cronctl(workdir, "import-crontab", "mycron").code == 1
