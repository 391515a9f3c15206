"""The crontab converter (pure): day rule, fields, macros, environment lines, system
format, ``%`` and standard input, job ids, and the TOML it writes."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.jobs.build import ID_PATTERN
from cronctl.jobs.crontab import (
    Conversion,
    CrontabJob,
    convert_crontab,
    derive_id,
    render_toml,
    split_percent,
    unique_id,
)
from cronctl.jobs.crontab_fields import parse_cron_field, translate_days


def one(line: str, **kw: object) -> CrontabJob:
    result = convert_crontab(line + "\n", **kw)  # type: ignore[arg-type]
    assert not result.not_converted, result.not_converted
    (job,) = result.jobs
    return job


def refused(line: str, **kw: object) -> str:
    result = convert_crontab(line + "\n", **kw)  # type: ignore[arg-type]
    assert not result.jobs, result.jobs
    (problem,) = result.not_converted
    assert problem.line == 1 and problem.text == line
    return problem.reason


# --- the day rule ---------------------------------------------------------------------------

@pytest.mark.parametrize("line, cron", [
    # OR in cron (neither field starts with '*'), and both restricted: cronctl agrees.
    ("0 4 1,15 * 1 x", "0 0 4 1,15 * 1"),
    # OR with one side that allows every day: cron fires every day; cronctl would read
    # Mondays only, so both day fields become '*'.
    ("0 4 1-31 * 1 x", "0 0 4 * * *"),
    ("0 4 1-15 * 0-6 x", "0 0 4 * * *"),
    ("0 4 1-15 * 0-7 x", "0 0 4 * * *"),
    ("0 4 1-31,L * 1 x", "0 0 4 1-31,L * 1"),  # L restricts in cronctl: OR, every day
    # AND with an always-true side: the other field decides, in both.
    ("0 4 * * 1 x", "0 0 4 * * 1"),
    ("0 4 1 * * x", "0 0 4 1 * *"),
    ("0 4 */2 * * x", "0 0 4 */2 * *"),
    ("0 4 * * */1 x", "0 0 4 * * */1"),
    ("0 4 */1 * 1-5 x", "0 0 4 */1 * 1-5"),
    # AND of two restricted sets that cronctl can still say.
    ("0 9 1-7 * */7 x", "0 0 9 * * SUN#1"),  # the first Sunday
    ("0 9 8-14 * */2 x", "0 0 9 * * SUN#2,TUE#2,THU#2,SAT#2"),
    ("0 9 29-31 * */7 x", "0 0 9 * * SUN#5"),
    ("0 9 */40,2-7 * 1 x", "0 0 9 * * MON#1"),  # */40 is day 1
    ("0 9 1-29 2 */2 x", "0 0 9 * 2 */2"),  # 1-29 is every day of February
    ("0 9 */1,L * */2 x", "0 0 9 * * */2"),
    # Days 1-7 on any weekday, and Sundays of days 15-21: an OR cronctl can say.
    ("0 9 */40,2-7,15-21 * */7,1#1,2#1,3#1,4#1,5#1,6#1 x", "0 0 9 1-7 * SUN#3"),
])
def test_day_fields_read_as_cron_reads_them(line: str, cron: str) -> None:
    assert one(line).cron == cron


@pytest.mark.parametrize("line", [
    "0 4 */2 * 1 x",  # odd days that are Mondays
    "0 4 */3 * MON-FRI x",
    "0 4 1-10 * */2 x",
    "0 4 L * */7 x",  # the last day, when it is a Sunday
    "0 4 */7 * 5L x",
])
def test_an_and_of_two_restricted_day_sets_is_reported(line: str) -> None:
    reason = refused(line)
    assert "both" in reason and "either/or" in reason


def test_an_and_that_never_matches_is_reported() -> None:
    assert "never fire" in refused("0 4 31 2 */7 x")  # no February 31st, whatever its day
    # */40 is day 1 (it starts with '*': AND), MON#2 is in days 8-14
    assert refused("0 4 */40 * MON#2 x") == "never fires: no day matches both day fields"


def test_translate_days_directly() -> None:
    def days(dom: str, dow: str, months: str = "*") -> tuple[str, str, str | None]:
        result = translate_days(dom, dow, parse_cron_field(2, dom), parse_cron_field(4, dow),
                                parse_cron_field(3, months).values)
        return result.dom, result.dow, result.problem

    assert days("1-31", "MON") == ("*", "*", None)
    assert days("*", "MON") == ("*", "MON", None)
    assert days("1-7", "*/7") == ("*", "SUN#1", None)
    assert days("*/2", "MON")[2] is not None


# --- fields ------------------------------------------------------------------------------

@pytest.mark.parametrize("line, cron", [
    ("*/15 9-17 * * mon-fri x", "0 */15 9-17 * * MON-FRI"),
    ("0 0 * jan,jul sun x", "0 0 0 * JAN,JUL SUN"),
    ("0 0 * * 7 x", "0 0 0 * * 7"),
    ("0 0 * * 5-7 x", "0 0 0 * * 5-7"),
    ("0 0 * * 1/2 x", "0 0 0 * * 0,1,3,5"),  # cron's 1/2 runs to 7 = Sunday
    ("0 0 * * 3/2 x", "0 0 0 * * 0,3,5"),  # 3, 5 and 7
    ("0 0 * * 2/2 x", "0 0 0 * * 2/2"),  # 2, 4, 6 in both
    ("0 0 L/2 * * x", "0 0 0 L * *"),  # cron reads L/N as L
    ("5/20 0 * * * x", "0 5/20 0 * * *"),
    ("0 0 * * 5L x", "0 0 0 * * 5L"),
    ("0 0 * * MON#2 x", "0 0 0 * * MON#2"),
])
def test_fields_are_kept_or_respelled(line: str, cron: str) -> None:
    assert one(line).cron == cron


@pytest.mark.parametrize("line, message", [
    ("61 * * * * x", "minute field: 61 is out of range 0-59"),
    ("0 0 ? * * x", "? is not cron syntax"),
    ("0 0 LW * * x", "no cronctl equivalent"),
    ("0 0 * * FRI-MON x", "descending range"),
    ("0 0 * * */0 x", "step"),
    ("0 0 * * * ", "expected 5 time fields and a command"),
    ("0 0 * *", "expected 5 time fields"),
    ("0 0 31 2 * x", "never exists"),
    ("0 0 * * * %input only", "no command"),
    ("@every 5m x", "not a cron macro"),
])
def test_syntax_errors_are_reported_with_their_reason(line: str, message: str) -> None:
    assert message in refused(line)


# --- macros, DST ----------------------------------------------------------------------------

def test_macros() -> None:
    assert one("@daily x").cron == "@daily"
    assert one("@ANNUALLY x").cron == "@annually"
    assert one("@hourly x").dst is None
    assert "@reboot" in refused("@reboot /opt/start")


@pytest.mark.parametrize("line, dst", [
    ("30 2 * * * x", None),  # fixed in both: shift/first
    ("0 */2 * * * x", None),  # periodic in both: skip/both
    ("30 * * * * x", None),
    ("*/15 1-3 * * * x", ("skip", "both")),  # Debian: the minute's '*' makes it periodic
    ("*/15 * * * * x", None),
])
def test_dst_policy_follows_debian_where_cronctl_auto_differs(
        line: str, dst: tuple[str, str] | None) -> None:
    assert one(line, default_zone="America/New_York").dst == dst


# --- environment, zones, system format ---------------------------------------------------

def test_environment_lines_apply_to_the_jobs_after_them() -> None:
    text = ("0 1 * * * first\n"
            "PATH = /usr/bin:/bin  \n"
            "GREETING=\"hello world\"\n"
            "QUOTED='x'\n"
            "EMPTY=\n"
            "0 2 * * * second\n"
            "PATH=/opt/bin\n"
            "0 3 * * * third\n")
    first, second, third = convert_crontab(text).jobs
    assert first.env == {}
    assert second.env == {"PATH": "/usr/bin:/bin", "GREETING": "hello world", "QUOTED": "x",
                          "EMPTY": ""}
    assert third.env["PATH"] == "/opt/bin"


def test_cron_tz_and_tz_set_the_zone() -> None:
    text = ("0 1 * * * a\nCRON_TZ=Europe/Berlin\n0 2 * * * b\nTZ=Asia/Tokyo\n0 3 * * * c\n"
            "CRON_TZ=\n0 4 * * * d\nCRON_TZ=Mars/Base\n0 5 * * * e\n")
    result = convert_crontab(text, default_zone="America/New_York")
    zones = [(job.id, job.timezone) for job in result.jobs]
    # CRON_TZ wins over TZ; TZ is also in the job's environment.
    assert zones == [("a", "America/New_York"), ("b", "Europe/Berlin"), ("c", "Europe/Berlin"),
                     ("d", "Asia/Tokyo"), ("e", "Asia/Tokyo")]
    assert result.jobs[2].env == {"TZ": "Asia/Tokyo"}
    (problem,) = result.not_converted
    assert problem.line == 8 and "unknown time zone 'Mars/Base'" in problem.reason


def test_mailto() -> None:
    result = convert_crontab('MAILTO=""\n0 1 * * * a\nMAILTO=ops@example.com\n0 2 * * * b\n'
                             'MAILTO="not an address"\n0 3 * * * c\n')
    assert [job.id for job in result.jobs] == ["a", "b", "c"]
    assert [job.mail for job in result.jobs] == [(), ("ops@example.com",), ()]
    assert result.jobs[1].table["notify"] == {"mail": "ops@example.com"}
    (problem,) = result.not_converted  # a MAILTO that is no address is reported
    assert problem.line == 5 and "not a mail address" in problem.reason
    assert "MAILTO" not in result.jobs[1].env


def test_system_format_reports_the_user() -> None:
    text = "17 * * * * root cd / && run-parts --report /etc/cron.hourly\n@daily www-data x\n"
    hourly, daily = convert_crontab(text, system=True).jobs
    assert (hourly.id, hourly.user, hourly.command) == (
        "cron.hourly", "root", "cd / && run-parts --report /etc/cron.hourly")
    assert (daily.user, daily.command) == ("www-data", "x")
    assert "a user and a command" in refused("0 0 * * * root", system=True)


def test_random_delay_becomes_jitter() -> None:
    job = convert_crontab("RANDOM_DELAY=15\n0 1 * * * a\n").jobs[0]
    assert job.jitter == "15m" and "RANDOM_DELAY" not in job.env


def test_lines_that_do_not_fire_within_the_horizon() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert "within 4 years" in refused("0 0 30 2 FRI#5 x", now=now)


# --- commands and % -------------------------------------------------------------------------

@pytest.mark.parametrize("rest, command, stdin", [
    ("echo hi", "echo hi", None),
    ("mail -s x bob%Hello%World%", "mail -s x bob", "Hello\nWorld\n"),
    ("date +\\%F", "date +%F", None),  # \% is a literal %, the backslash goes
    ("cat%100\\% sure", "cat", "100% sure"),
    ("echo a\\\\%in", "echo a\\\\", "in"),  # \\ is no escape of the %
    ("cat%a\\b\\", "cat", "a\\b\\"),  # other backslashes stay
    ("cat%", "cat", ""),
])
def test_percent_starts_standard_input(rest: str, command: str, stdin: str | None) -> None:
    assert split_percent(rest) == (command, stdin)


def test_commands_run_with_shell_semantics() -> None:
    assert one("0 0 * * * echo a | tr a b").command == "echo a | tr a b"
    assert one("0 0 * * * cat%it's").command == "printf '%s' 'it'\"'\"'s' | ( cat )"
    assert one("0 0 * * * cat # c%x").command == "printf '%s' x | ( cat # c\n)"
    job = convert_crontab("SHELL=/bin/bash\n0 0 * * * echo 'a b'\n").jobs[0]
    assert job.command == "exec /bin/bash -c 'echo '\"'\"'a b'\"'\"''"
    assert job.table["shell"] is True and job.table["max_attempts"] == 1
    assert job.table["overlap_policy"] == "allow"


# --- ids -------------------------------------------------------------------------------

@pytest.mark.parametrize("command, job_id", [
    ("/usr/local/bin/backup.sh --full", "backup"),
    ("cd /srv/app && php artisan schedule:run >> /dev/null 2>&1", "artisan"),
    ("test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )",
     "cron.daily"),
    ("FOO=1 nice -n 10 /opt/bin/report", "report"),
    ("[ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd ]; then "
     "/usr/lib/php/sessionclean; fi", "sessionclean"),
    ("python3 /opt/app/manage.py clearsessions", "manage"),
    ("echo 'unbalanced", "echo-unbalanced"),
    # issue 39: a common tool's id says what it works on (ids were echo, echo-2, find)
    ("echo hello > /tmp/x", "echo-hello"),
    ("find /var/log -mtime +7 -delete", "find-log"),
    ("rm -rf /tmp/cache/*", "rm-cache"),
    ("curl -fsS https://hc-ping.example/abc >/dev/null", "curl-hc-ping.example"),
    ("systemctl restart nginx", "systemctl-restart-nginx"),
    ("/usr/bin/du -sh /srv", "du-srv"),
    ("'/opt/my tools/run me.sh' --now", "run-me"),
    ("!!! ???", "job"),
    ("/" + "a" * 300, "a" * 60),
])
def test_ids_come_from_the_command(command: str, job_id: str) -> None:
    assert derive_id(command) == job_id


def test_ids_are_unique_and_avoid_taken_ones() -> None:
    assert unique_id("x", {"x", "x-2"}) == "x-3"
    result = convert_crontab("0 1 * * * backup\n0 2 * * * backup\n0 3 * * * backup\n",
                             taken_ids={"backup"})
    assert [job.id for job in result.jobs] == ["backup-2", "backup-3", "backup-4"]


# --- TOML ---------------------------------------------------------------------------------

def test_the_toml_names_each_source_line() -> None:
    text = ("CRON_TZ=Europe/Berlin\nPATH=/bin\n0 4 1-31 * 1 root /opt/backup --inc\x07\n"
            "@reboot root x\n0 4 */2 * 1 root /opt/backup --full\n")
    conversion = convert_crontab(text, system=True)
    document = render_toml(conversion, source="/etc/crontab")
    data = tomllib.loads(document)
    assert data["jobs"]["backup"] == {
        "cron": "0 0 4 * * *", "timezone": "Europe/Berlin", "command": "/opt/backup --inc\x07",
        "shell": True, "max_attempts": 1, "overlap_policy": "allow", "env": {"PATH": "/bin"}}
    assert ("# /etc/crontab line 3 (user root): 0 4 1-31 * 1 root /opt/backup --inc\\x07"
            in document)
    assert "#   line 4: @reboot root x" in document
    assert "#   line 5: 0 4 */2 * 1 root /opt/backup --full" in document


def test_no_jobs_no_document_needed() -> None:
    conversion = convert_crontab("# only a comment\n\n")
    assert conversion == Conversion((), (), False)


# --- any input ------------------------------------------------------------------------------

_PIECES = ["*", "*/2", "1-5", "MON", "L", "7", "?", "%", "\\%", "=", "@daily", "@reboot",
           "CRON_TZ=", "TZ=:Europe/Paris", "MAILTO=", "SHELL=/bin/bash", "'", '"', "#", " ",
           "\t", "0", "31", "2", "root", "echo", "\x00", "\x1b", "é", "\r"]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=9).map("".join),
    st.lists(st.sampled_from(_PIECES), max_size=9).map(" ".join),
    st.text(max_size=40)), max_size=8), system=st.booleans())
def test_any_text_converts_or_is_reported_line_by_line(lines: list[str], system: bool) -> None:
    text = "\n".join(lines)
    conversion = convert_crontab(text, system=system, default_zone="Europe/Berlin",
                                 now=datetime(2026, 1, 1, tzinfo=UTC))
    for problem in conversion.not_converted:
        assert "\n" not in problem.reason and problem.reason
    ids = [job.id for job in conversion.jobs]
    assert len(set(ids)) == len(ids)
    assert all(ID_PATTERN.fullmatch(job_id) for job_id in ids)
    if conversion.jobs:
        data = tomllib.loads(render_toml(conversion, source="fuzz\n\x00"))
        assert set(data["jobs"]) == set(ids)


def test_a_control_character_in_a_system_crontabs_user_column_stays_in_the_comment() -> None:
    # Found by the test above: the user column went into a comment unescaped, and the
    # rendered file (a backspace in a TOML comment) failed its own read-back check.
    conversion = convert_crontab("@daily \x08 0\n", system=True, default_zone="UTC")
    (job,) = conversion.jobs
    assert job.user == "\x08"
    document = render_toml(conversion, source="crontab")
    assert "(user \\x08)" in document
    assert tomllib.loads(document)["jobs"][job.id]["command"] == "0"
