"""``cronctl import-crontab``'s converter: a crontab's text in, cronctl jobs (and the
lines it could not convert, each with its reason) out. Pure: no files, no clock.

Each job keeps cron's behaviour: the command runs with ``/bin/sh`` (``shell = true``), an
unescaped ``%`` starts its standard input, it is not retried (``max_attempts = 1``) and
runs may overlap (``overlap_policy = "allow"``); its fire times are exactly cron's
(:mod:`cronctl.jobs.crontab_fields` for the day rule; ``dst_gap``/``dst_fold`` follow
Debian cron: jobs with a fixed minute and hour run once after a DST gap and once in a
fold, the others skip the gap and run in both passes of a fold).
"""

from __future__ import annotations

import re
import shlex
import tomllib
import zoneinfo
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import tomli_w

from cronctl.cron import CronExpression, CronSyntaxError, Schedule
from cronctl.jobs.crontab_fields import (
    DOM,
    DOW,
    HOUR,
    MINUTE,
    MONTH,
    FieldError,
    cronctl_text,
    parse_cron_field,
    translate_days,
)
from cronctl.jobs.crontab_ids import derive_id, unique_id
from cronctl.jobs.notify import mail_addresses
from cronctl.jobs.toml_source import DAYS_OR
from cronctl.jobs.tomlfile import MAX_STRING, MAX_STRING_TEXT

_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# ``--spread``: the hash-spread form (docs/behaviour.md#spread-calendars-and-dependencies) offered
# for these macros, as Jenkins reads them: hourly at a minute of the job's own, daily at a minute
# and hour of its own.
SPREAD_MACROS = {"@hourly": "H * * * *", "@daily": "H H * * *", "@midnight": "H H * * *"}
_ENV = re.compile(r"\s*([^\s=]+)\s*=(.*)")
_MAX_DELAY_MINUTES = 36525 * 1440


@dataclass(frozen=True)
class CrontabJob:
    """One converted line. ``table`` is its ``[jobs.<id>]`` table."""

    id: str
    line: int
    text: str  # the source line as written
    cron: str
    timezone: str
    command: str
    user: str | None = None  # the user column of a system crontab
    env: Mapping[str, str] = field(default_factory=dict)
    dst: tuple[str, str] | None = None  # (dst_gap, dst_fold) where auto would differ
    jitter: str | None = None
    spread_from: str | None = None  # the macro this line had, when --spread replaced it
    mail: tuple[str, ...] = ()  # MAILTO: notify.mail
    default_zone: bool = False  # no CRON_TZ/TZ before it: the zone cron ran in

    @property
    def table(self) -> dict[str, Any]:
        table: dict[str, Any] = {"cron": self.cron, "timezone": self.timezone,
                                 "command": self.command, "shell": True, "max_attempts": 1,
                                 "overlap_policy": "allow"}
        if self.dst is not None:
            table["dst_gap"], table["dst_fold"] = self.dst
        if self.jitter is not None:
            table["jitter"] = self.jitter
        if self.env:
            table["env"] = dict(self.env)
        if self.mail:
            table["notify"] = {"mail": self.mail[0] if len(self.mail) == 1 else list(self.mail)}
        if self.user and self.user != "root":
            # cron ran it as this user: so does cronctl (docs/behaviour.md#sandbox-and-output),
            # never as root
            table["user"] = self.user
        return table


@dataclass(frozen=True)
class NotConverted:
    line: int
    text: str
    reason: str


@dataclass(frozen=True)
class Conversion:
    jobs: tuple[CrontabJob, ...]
    not_converted: tuple[NotConverted, ...]
    system: bool
    warnings: tuple[NotConverted, ...] = ()  # converted lines worth a second look


@dataclass
class _State:
    default_zone: str
    env: dict[str, str] = field(default_factory=dict)
    cron_tz: str | None = None
    jitter: str | None = None
    spread: bool = False
    mail: tuple[str, ...] = ()

    @property
    def zone(self) -> str:
        """CRON_TZ, else TZ, else the zone cron ran in (``:Zone`` is POSIX for Zone)."""
        return (self.cron_tz or self.env.get("TZ") or self.default_zone).lstrip(":")


def convert_crontab(text: str, *, default_zone: str = "UTC", system: bool = False,
                    taken_ids: Collection[str] = (), now: datetime | None = None,
                    spread: bool = False) -> Conversion:
    """Convert a crontab. ``system``: lines have a user column (/etc/crontab, cron.d).
    ``default_zone``: the zone of lines before any CRON_TZ/TZ (cron's local time).
    ``taken_ids``: ids the new jobs must not reuse. With ``now``, a job that would not
    fire within cronctl's 4-year horizon from then is reported instead. ``spread``:
    ``@hourly`` and ``@daily``/``@midnight`` lines become ``H`` expressions
    (:data:`SPREAD_MACROS`), so that they no longer all fire at :00 (opt-in: it changes
    their fire times, which the conversion otherwise keeps exactly)."""
    state = _State(default_zone, spread=spread)
    jobs: list[CrontabJob] = []
    problems: list[NotConverted] = []
    warnings: list[NotConverted] = []
    used = set(taken_ids)
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if len(line) > MAX_STRING:  # (splitting it would take minutes)
            problems.append(NotConverted(number, line[:200] + "...",
                                         f"the line is {len(line):,} characters long; at "
                                         f"most {MAX_STRING_TEXT}"))
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            env = _ENV.fullmatch(line)
            if env is not None and not stripped.startswith("@"):
                _set_env(state, env.group(1), _env_value(env.group(2)))
                continue
            job = _entry(line, number, state, system, used, now)
        except _Skip as exc:
            problems.append(NotConverted(number, line, str(exc)))
            continue
        used.add(job.id)
        jobs.append(job)
        cut = _percent_cut(line, job)
        if cut is not None:
            warnings.append(NotConverted(number, line, cut))
    return Conversion(tuple(jobs), tuple(problems), system, tuple(warnings))


def _percent_cut(line: str, job: CrontabJob) -> str | None:
    """A warning when cron cut the line's command at an unescaped ``%``: converted as cron
    ran it (the rest is standard input), which is seldom what was meant (``date +%F``)."""
    rest = _split(line, job.user is not None)[2]
    command, stdin = split_percent(rest)
    if stdin is None:
        return None
    return (f"cron cut this command at its first unescaped '%' (it ran {command.strip()!r}, "
            "the rest as its standard input), and so does the converted job; if the '%' "
            "was meant literally (date +%F), write it '\\%' in the crontab and convert "
            "again")


class _Skip(Exception):
    """This line is not converted; the message says why."""


def _env_value(raw: str) -> str:
    """Vixie cron: trailing blanks go; one pair of matching outer quotes goes."""
    value = raw.strip()
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        return value[1:-1]
    return value


def _set_env(state: _State, name: str, value: str) -> None:
    if name in ("CRON_TZ", "TZ"):
        if value and not known_zone(value.lstrip(":")):
            raise _Skip(f"unknown time zone {value!r} in {name}; the lines after it keep "
                        f"{state.zone}")
        if name == "CRON_TZ":
            state.cron_tz = value or None
        else:
            state.env["TZ"] = value
    elif name == "MAILTO":
        # cron mails a job's output; cronctl mails its failure events (notify.mail, the
        # default events: dead_letter, abandoned, missed, recovered) to the same people.
        state.mail = ()
        if value:
            try:
                state.mail = mail_addresses([a.strip() for a in value.split(",")])
            except ValueError as exc:
                raise _Skip(f"MAILTO {value!r}: {exc}; the lines after it mail nobody"
                            ) from None
    elif name == "RANDOM_DELAY":  # cronie: a random delay of up to N minutes
        if not (value.isascii() and value.isdigit()) or int(value) > _MAX_DELAY_MINUTES:
            raise _Skip(f"RANDOM_DELAY must be a number of minutes up to "
                        f"{_MAX_DELAY_MINUTES} (100 years), not {value!r}")
        state.jitter = f"{int(value)}m" if int(value) else None
    else:
        state.env[name] = value


def known_zone(name: str) -> bool:
    """Whether ``name`` is an IANA zone this machine knows."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def _entry(line: str, number: int, state: _State, system: bool, used: set[str],
           now: datetime | None) -> CrontabJob:
    if "\x00" in line:
        raise _Skip("the line holds a NUL character, which no command can carry")
    fields, user, rest = _split(line, system)
    if fields[0].startswith("@"):
        macro = fields[0].lower()
        if macro == "@reboot":
            raise _Skip("@reboot runs once when cron starts; this cronctl does not run "
                        "jobs at its start yet (run it from a systemd unit meanwhile)")
        if macro not in _MACROS:
            raise _Skip(f"{fields[0]} is not a cron macro")
        expression, cron_fixed = macro, macro != "@hourly"
        hour_text = "*" if macro == "@hourly" else "0"
        if state.spread and macro in SPREAD_MACROS:
            expression = SPREAD_MACROS[macro]
            hour_text = expression.split()[1]
    else:
        expression, cron_fixed = _expression(fields)
        hour_text = expression.split()[2]
    command, stdin = split_percent(rest)
    if not command.strip():
        raise _Skip("no command")
    zone = state.zone
    # cronctl's auto policy looks at the hour field alone; Debian cron at minute and hour.
    dst = None
    if cron_fixed == hour_text.startswith("*"):
        dst = ("shift", "first") if cron_fixed else ("skip", "both")
    job_id = unique_id(derive_id(command), used)
    try:
        schedule = Schedule(expression, zone, *(dst or ("auto", "auto")), hash_id=job_id)
    except CronSyntaxError as exc:
        raise _Skip(str(exc)) from None
    if now is not None and schedule.next_after(now) is None:
        raise _Skip("does not fire within 4 years (cronctl's search horizon)")
    return CrontabJob(
        id=job_id, line=number, text=line, cron=expression,
        timezone=zone, command=shell_command(command, stdin, state.env.get("SHELL")),
        user=user, env=dict(state.env), dst=dst, jitter=state.jitter, mail=state.mail,
        default_zone=state.cron_tz is None and not state.env.get("TZ"),
        spread_from=fields[0].lower() if expression != fields[0].lower()
        and fields[0].startswith("@") else None)


def _split(line: str, system: bool) -> tuple[list[str], str | None, str]:
    """(time fields, user, the rest of the line as written)."""
    count = 1 if line.lstrip().startswith("@") else 5
    count += 1 if system else 0
    parts = line.lstrip().split(None, count)
    if len(parts) <= count:
        what = "a user and a command" if system else "a command"
        raise _Skip(f"expected {'a macro' if count <= 2 else '5 time fields'} and {what}")
    rest = parts[count]
    user = parts[count - 1] if system else None
    return parts[:count - (1 if system else 0)], user, rest


def _expression(fields: list[str]) -> tuple[str, bool]:
    """The cronctl expression (second 0) and whether Debian cron treats the line as
    fixed-time (neither minute nor hour starts with ``*``) for DST."""
    try:
        parsed = [parse_cron_field(i, text) for i, text in enumerate(fields)]
    except FieldError as exc:
        raise _Skip(str(exc)) from None
    minute, hour = (cronctl_text(i, fields[i], parsed[i]) for i in (MINUTE, HOUR))
    month = cronctl_text(MONTH, fields[MONTH], parsed[MONTH])
    days = translate_days(fields[DOM].upper(), fields[DOW].upper(), parsed[DOM], parsed[DOW],
                          parsed[MONTH].values)
    if days.problem is not None:
        raise _Skip(days.problem)
    fixed = not fields[MINUTE].startswith("*") and not fields[HOUR].startswith("*")
    return f"0 {minute} {hour} {days.dom} {month} {days.dow}", fixed


def split_percent(rest: str) -> tuple[str, str | None]:
    """Vixie cron's ``%``: the first unescaped ``%`` ends the command and starts its
    standard input, where each further ``%`` is a newline; ``\\%`` is a literal ``%`` in
    both (the backslash goes); other backslashes stay."""
    command: list[str] = []
    escaped = False
    for i, ch in enumerate(rest):
        if escaped:
            escaped = False
            if ch == "%":
                command[-1] = "%"  # the backslash is replaced
                continue
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            return "".join(command), _stdin(rest[i + 1:])
        command.append(ch)
    return "".join(command), None


def _stdin(text: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            if ch != "%":
                out.append("\\")
        elif ch == "%":
            ch = "\n"
        escaped = ch == "\\"
        if not escaped:
            out.append(ch)
    if escaped:
        out.append("\\")
    return "".join(out)


def shell_command(command: str, stdin: str | None, shell: str | None) -> str:
    """One ``/bin/sh`` command line that does what cron did: ``$SHELL -c command`` with
    ``stdin`` (when given) on its standard input."""
    if shell and shell != "/bin/sh":
        body = f"{shlex.quote(shell)} -c {shlex.quote(command)}"
        return f"exec {body}" if stdin is None else f"printf '%s' {shlex.quote(stdin)} | {body}"
    if stdin is None:
        return command
    # A subshell reads the text, as cron's shell did; a newline before ")" keeps a
    # trailing comment or backslash of the command from swallowing it.
    closing = "\n)" if "#" in command or command.endswith("\\") else " )"
    return f"printf '%s' {shlex.quote(stdin)} | ( {command}{closing}"


# --- TOML ----------------------------------------------------------------------------------


def _comment(text: str) -> str:
    """TOML comments may not hold control characters (except tab)."""
    return "".join(ch if ch == "\t" or (ord(ch) >= 32 and ord(ch) != 127)
                   else f"\\x{ord(ch):02x}" for ch in text)


def _days_or(table: str, cron: str) -> str:
    """Mark the ``cron =`` line of an expression whose day fields are both restricted: cron
    read that line as day-of-month OR day-of-week too (the importer rewrote every line it
    read otherwise), so validate need not warn about the OR rule."""
    try:
        expr = CronExpression(cron)
    except ValueError:
        return table
    if not (expr.dom_restricted and expr.dow_restricted):
        return table
    return "\n".join(f"{line}  {DAYS_OR} (as cron read this line)"
                     if line.startswith("cron = ") else line for line in table.split("\n"))


def render_toml(conversion: Conversion, *, source: str) -> str:
    """The job file: a header, then per job a comment naming its source line and its
    ``[jobs.<id>]`` table (tomli-w writes the tables; it cannot write comments)."""
    out = [f"# Converted from {_comment(source)} by `cronctl import-crontab`.",
           "# Each job keeps cron's behaviour: its command runs with /bin/sh (shell = true), "
           "a failure",
           "# is not retried (max_attempts = 1) and runs may overlap (overlap_policy = "
           "\"allow\").",
           "# cron's default environment (PATH=/usr/bin:/bin, HOME, LOGNAME) and working "
           "directory",
           "# ($HOME) are not reproduced: the job inherits cronctl's, plus its env.",
           "# MAILTO became notify.mail: cronctl mails failure events (dead_letter, ...),",
           "# not a job's output (that is in its log: cronctl logs --job ID)."]
    if conversion.not_converted:
        out.append("#")
        out.append("# Not converted:")
        for problem in conversion.not_converted:
            out.append(f"#   line {problem.line}: {_comment(problem.text.strip())}")
            out.append(f"#     {_comment(problem.reason)}")
    tables: dict[str, Any] = {}
    warned = {warning.line: warning.reason for warning in conversion.warnings}
    for job in conversion.jobs:
        who = f" (user {_comment(job.user)})" if job.user else ""
        out.append("")
        out.append(f"# {_comment(source)} line {job.line}{who}: {_comment(job.text.strip())}")
        if job.line in warned:
            out.append(f"# warning: {_comment(warned[job.line])}")
        if job.spread_from is not None:
            out.append(f"# --spread: {job.spread_from} became {job.cron!r}, at a time of "
                       "this job's own (see 'cronctl next " + job.id + "')")
        out.append(_days_or(tomli_w.dumps({"jobs": {job.id: job.table}}).rstrip("\n"),
                            job.cron))
        tables[job.id] = job.table
    document = "\n".join(out) + "\n"
    assert tomllib.loads(document).get("jobs", {}) == tables  # the comments broke nothing
    return document
