"""``cronctl init``: a starter ``cronctl.toml``, ``jobs.d/example.toml`` and ``tokens``
(the API's tokens file, mode 0600, with one ``operate`` token shown once: ``cronctl
serve`` needs a token for every request)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cronctl.errors import CronctlError

CONFIG_HEADER = """\
# cronctl configuration; see cronctl.toml(5). Relative paths are relative to this file.
# Durations are strings like "90s", "5m", "1h30m", or integer seconds.
#
# database: a SQLite file (the default, zero set-up), a URL such as
#   "postgresql+psycopg://cronctl:secret@db.example.com/cronctl" when several nodes share
#   the work, or "none" to keep state in memory (every_instance jobs only).
#   $CRONCTL_DATABASE_URL and --database override it.
# node_id: defaults to the host name; must differ between live schedulers.
# isolation: "process" runs each attempt of a python:/service: job in a child process of
#   its own (a handler that exits, changes the environment or spins cannot touch the
#   scheduler); "thread" (the default without this key) runs it on the scheduler's threads.
# [api] tokens_file: the tokens `cronctl serve` accepts, one "name role sha256" a line;
#   keep the file out of version control.

"""

CONFIG: dict[str, Any] = {
    "scheduler": {
        "database": "cronctl.db",
        "jobs_dir": "jobs.d",
        "tracked": True,
        "max_concurrent_jobs": 10,
        "progress_flush_interval": "10s",
        "shutdown_timeout": "30s",
        "heartbeat_interval": "5s",
        "clock_skew_limit": "5m",
        "auto_migrate": True,
        "isolation": "process",
    },
    "api": {
        "tokens_file": "tokens",
    },
}
TOKENS_FILE = "tokens"
ADMIN = "admin"

JOBS_HEADER = """\
# Jobs: one [jobs.<id>] table each; every *.toml file in this directory is read, in name
# order. Check them with `cronctl validate`, see the next fires with `cronctl list`.
#
# Schedules: cron = "sec min hour day-of-month month day-of-week" (5 fields also work),
#   or every = "90s". timezone = "Europe/Berlin" (default "UTC").
# What runs: command = [...] (argv, no shell; shell = true takes one string), or
#   target = "python:module:function" / "service:<namespace>.<service>.<operation>".
# Policies: mode = "every_instance" | "single_instance", overlap_policy, misfire_policy,
#   max_attempts, retry_backoff, timeout, jitter, ... (see cronctl(1)).

"""

JOBS: dict[str, Any] = {
    "jobs": {
        "hello": {
            "description": "Say hello every minute",
            "cron": "0 * * * * *",
            "command": ["echo", "hello from cronctl"],
            "timeout": "30s",
        },
        "slow": {
            "description": "Runs for two minutes each hour: long enough to watch and cancel",
            "cron": "0 0 * * * *",
            "command": ["sleep", "120"],
            "timeout": "5m",
        },
        "nightly-report": {
            "description": "A daily job in a time zone; one node runs it per night",
            "cron": "0 30 2 * * *",
            "timezone": "Europe/Berlin",
            "mode": "single_instance",
            "command": "echo report for $(date -u +%F)",
            "shell": True,
            "enabled": False,
        },
    }
}


def starter(database: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config and jobs to write. With ``--database none`` the config says so and the
    nightly job is every_instance: single_instance needs a database, and a starter must
    validate as written."""
    import copy

    config, jobs = copy.deepcopy(CONFIG), copy.deepcopy(JOBS)
    if database is not None and database.strip().lower() == "none":
        config["scheduler"]["database"] = "none"
        nightly = jobs["jobs"]["nightly-report"]
        del nightly["mode"]
        nightly["description"] = ("A daily job in a time zone (with a database, "
                                  "mode = \"single_instance\" runs it on one node only)")
    elif database is not None:
        config["scheduler"]["database"] = database
    return config, jobs


def write_starter(directory: Path, force: bool, database: str | None = None
                  ) -> tuple[list[Path], str]:
    """Write the three files under ``directory``; refuse to overwrite unless ``force``.
    The admin token, to be shown once."""
    import tomli_w

    from cronctl.apitokens import create_tokens_file

    config, jobs = starter(database)
    files = [
        (directory / "cronctl.toml", CONFIG_HEADER + tomli_w.dumps(config)),
        (directory / "jobs.d" / "example.toml", JOBS_HEADER + tomli_w.dumps(jobs)),
    ]
    tokens = directory / TOKENS_FILE
    if not force:
        for path in [*(p for p, _ in files), tokens]:
            try:
                taken = path.exists() or path.is_symlink()
            except OSError as exc:  # found by fuzzing: a --dir too long to stat
                raise CronctlError(f"cannot write {_shown(path)}: {exc.strerror or exc}"
                                   ) from None
            if taken:
                raise CronctlError(f"{_shown(path)} already exists; use --force to overwrite it")
    written: list[Path] = []
    for path, text in files:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CronctlError(f"cannot write {_shown(path)}: {exc.strerror or exc}") from None
        written.append(path)
    try:
        token = create_tokens_file(tokens, ADMIN, "operate", force=force)
    except OSError as exc:
        raise CronctlError(f"cannot write {_shown(tokens)}: {exc.strerror or exc}") from None
    written.append(tokens)
    return written, token


def _shown(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 200 else text[:200] + "..."


def init(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Option("--dir", help="Where to write the files.", file_okay=False)
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter cronctl.toml, jobs.d/example.toml and an API tokens file."""
    from cronctl.cli.options import global_options
    from cronctl.escaping import printable

    written, token = write_starter(directory, force, global_options(ctx).database)
    for path in written:
        typer.echo(printable(f"wrote {path}"))
    typer.echo(f"API token {ADMIN!r} (operate), shown this once; {TOKENS_FILE} keeps only its "
               f"sha256: {token}")
    typer.echo("next: edit them, then run 'cronctl validate' and 'cronctl list'")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
