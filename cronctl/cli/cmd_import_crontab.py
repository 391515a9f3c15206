"""``cronctl import-crontab FILE [--out PATH] [--dry-run]``: convert a crontab into a job
file. The conversion itself is :mod:`cronctl.jobs.crontab` (pure); this module reads the
file, picks the zone and the destination, writes, and reports.

Without ``--out`` the jobs go to ``<jobs_dir>/<FILE's name>.toml``, where ``cronctl
validate`` and ``cronctl run`` pick them up; an existing file is never overwritten
without ``--force``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import complete_zones
from cronctl.errors import CronctlError, UsageError
from cronctl.escaping import printable

if TYPE_CHECKING:
    from cronctl.jobs.crontab import Conversion

STDIN = "-"


def known_zone(name: str) -> bool:
    from cronctl.jobs.crontab import known_zone as known

    return known(name)


def local_zone() -> str:
    """The zone cron ran in on this machine: ``$TZ``, ``/etc/timezone``, the target of
    ``/etc/localtime``; UTC when none names an IANA zone."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    target = os.path.realpath("/etc/localtime")
    if "/zoneinfo/" in target:
        candidates.append(target.split("/zoneinfo/", 1)[1])
    for name in candidates:
        if name and known_zone(name):
            return name
    return "UTC"


def _read(file: str) -> str:
    """The crontab's text, or one line saying why it cannot be read (exit 1)."""
    try:
        raw = sys.stdin.buffer.read() if file == STDIN else Path(file).read_bytes()
    except IsADirectoryError:
        raise CronctlError(f"cannot read {file}: it is a directory, not a crontab") from None
    except OSError as exc:
        raise CronctlError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CronctlError(f"cannot read {file}: not UTF-8 text (line {line}, byte "
                           f"{exc.start})") from None


def _is_system_crontab(file: str) -> bool:
    """/etc/crontab and /etc/cron.d/* have a user column."""
    if file == STDIN:
        return False
    path = Path(file).absolute()
    return path == Path("/etc/crontab") or path.parent.name == "cron.d"


def _default_out(jobs_dir: Path, file: str) -> Path:
    stem = "crontab" if file == STDIN else Path(file).name
    stem = re.sub(r"\.(txt|cron|crontab)$", "", stem)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.") or "crontab"
    return jobs_dir / f"{stem}.toml"


def _taken_ids(jobs_dir: Path, replaced: Path) -> set[str]:
    """Job ids already defined in ``jobs_dir`` (but not in the file being replaced)."""
    taken: set[str] = set()
    try:
        paths = sorted(jobs_dir.glob("*.toml"))
    except OSError:
        return taken
    for path in paths:
        if path.absolute() == replaced.absolute():
            continue
        try:
            jobs = tomllib.loads(path.read_text(encoding="utf-8")).get("jobs", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(jobs, dict):
            taken.update(str(key) for key in jobs)
    return taken


def _check_writable(path: Path, *, force: bool) -> None:
    if path.is_dir():
        raise CronctlError(f"cannot write {path}: it is a directory")
    if path.exists() and not force:
        raise CronctlError(f"{path} already exists; --force overwrites it, --out PATH "
                           "writes elsewhere, --dry-run only prints")


def _write(path: Path, document: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    try:
        temp.write_text(document, encoding="utf-8")
        temp.replace(path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CronctlError(f"cannot write {path}: {exc.strerror or exc}") from None


def to_json(conversion: Conversion, written: Path | None, dry_run: bool,
            document: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "written": str(written) if written is not None else None,
        "dry_run": dry_run,
        "jobs": [{"id": job.id, "line": job.line, "cron": job.cron, "timezone": job.timezone,
                  "command": job.command, "user": job.user} for job in conversion.jobs],
        "not_converted": [{"line": p.line, "text": p.text, "reason": p.reason}
                          for p in conversion.not_converted],
        # converted, but worth a second look (a command cron cut at '%')
        "warnings": [{"line": w.line, "text": w.text, "warning": w.reason}
                     for w in conversion.warnings],
    }
    if written is None:
        doc["toml"] = document
    return doc


def import_crontab(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(
        metavar="FILE", show_default=False,
        help="The crontab: a file (/etc/crontab, a copy of 'crontab -l') or '-' for "
             "standard input.")],
    out: Annotated[str | None, typer.Option(
        "--out", "-o", metavar="PATH",
        help="Write the job file here ('-': standard output). Default: "
             "<jobs_dir>/<FILE's name>.toml.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the job file; write nothing.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite the job file if it exists.")] = False,
    tz: Annotated[str | None, typer.Option(
        "--tz", metavar="ZONE", autocompletion=complete_zones,
        help="Zone of the lines before any CRON_TZ/TZ (cron used local time). Default: "
             "this machine's zone ($TZ, /etc/localtime), else UTC.")] = None,
    system: Annotated[bool | None, typer.Option(
        "--system/--user", show_default=False,
        help="Lines have a user column (/etc/crontab, /etc/cron.d/*) or not. Default: "
             "from FILE's path.")] = None,
    spread: Annotated[bool, typer.Option(
        "--spread", help="Write @hourly as 'H * * * *' and @daily/@midnight as 'H H * * *': "
                         "each job at a minute of its own instead of all at :00 (this "
                         "changes their fire times).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Convert a crontab into a job file that keeps cron's fire times."""
    from cronctl.config import load_config
    from cronctl.jobs.crontab import convert_crontab, render_toml

    options = global_options(ctx)
    if tz is not None and not known_zone(tz):
        raise UsageError(f"--tz: unknown time zone {tz!r}; use an IANA name like "
                         "'Europe/Berlin'")
    zone = tz or local_zone()
    text = _read(file)
    config = load_config(options)
    to_stdout = dry_run or out == STDIN
    destination = Path(out) if out not in (None, STDIN) else _default_out(config.jobs_dir, file)
    if not to_stdout:
        _check_writable(destination, force=force)
    conversion = convert_crontab(
        text, default_zone=zone, system=_is_system_crontab(file) if system is None else system,
        # The file being replaced does not count: its ids are free again.
        taken_ids=_taken_ids(config.jobs_dir, destination), now=datetime.now(UTC),
        spread=spread)
    source = "standard input" if file == STDIN else file
    document = render_toml(conversion, source=source) if conversion.jobs else None
    written = None
    if not to_stdout and document is not None:
        if out is None:
            destination.parent.mkdir(parents=True, exist_ok=True)
        _write(destination, document)
        written = destination
    if as_json:
        typer.echo(json.dumps(to_json(conversion, written, dry_run, document), indent=2))
    else:
        if to_stdout and document is not None:
            typer.echo(document, nl=False)
        _report(conversion, source, zone, written, quiet=options.quiet)
    # A dry run's answer is its report: the lines it could not convert are in it (exit 0).
    if conversion.not_converted and not dry_run:
        raise typer.Exit(1)


def _report(conversion: Conversion, source: str, zone: str, written: Path | None,
            *, quiet: bool) -> None:
    """Problems on stderr, one line each; the summary on stdout (stderr when the TOML
    itself went to stdout), unless --quiet."""
    # A crontab's text and its file name reach the terminal escaped: one line each.
    for problem in conversion.not_converted:
        typer.echo(printable(f"{source}:{problem.line}: not converted: {problem.reason}"),
                   err=True)
    for warning in conversion.warnings:
        typer.echo(printable(f"{source}:{warning.line}: warning: {warning.reason}"), err=True)
    users = sorted({job.user for job in conversion.jobs if job.user and job.user != "root"})
    if users:
        typer.echo(printable(f"{source}: lines of {', '.join(users)} run as that user "
                             "(user = \"...\"), as under cron: the scheduler must run as "
                             "root to switch"), err=True)
    if quiet:
        return
    count = len(conversion.jobs)
    summary = f"{count} job{'s' if count != 1 else ''} converted"
    if written is not None:
        summary += f", written to {written}; check them with 'cronctl validate'"
    elif not count:
        summary += "; nothing written"
    if any(job.default_zone for job in conversion.jobs):
        summary += f" (lines without CRON_TZ/TZ fire in {zone})"
    typer.echo(printable(summary), err=written is None)


HELP = ("Convert a crontab into a job file that keeps cron's fire times.\n\n"
        "The file goes to <jobs_dir>/<FILE's name>.toml (or --out); an existing one is not "
        "overwritten without --force. Lines that cannot be converted are reported with "
        "their number and reason, and the exit status is then 1 (0 with --dry-run, which only "
        "reports).")


def register(app: typer.Typer) -> None:
    app.command("import-crontab", help=HELP,
                short_help="Convert a crontab into a job file that keeps cron's fire "
                           "times.")(import_crontab)
