"""``cronctl run``: the foreground scheduler (a systemd ``Type=notify`` service).

Validate (every violation printed, exit 1), open the store (migrating when
``auto_migrate``), register the node, start the :class:`~cronctl.runtime.Scheduler`,
then wait for signals: SIGTERM/SIGINT stop gracefully and exit 0; SIGHUP reloads the
jobs, keeping the old set (and logging every violation) when the new one is invalid
(:mod:`cronctl.runtime.service` does the running; this command validates and renders).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import check_all, complete_choices
from cronctl.errors import UsageError
from cronctl.options import GlobalOptions

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition

log = logging.getLogger("cronctl.runtime")


def _level(options: GlobalOptions) -> int:
    if options.quiet:
        return logging.WARNING
    return logging.DEBUG if options.verbose > 0 else logging.INFO


def run(
    ctx: typer.Context,
    log_format: Annotated[str, typer.Option(
        "--log-format", help="Log lines on stderr: 'text' or 'json' (one object per line).",
        autocompletion=complete_choices("text", "json"))
    ] = "text",
) -> None:
    """Run the scheduler in the foreground until SIGTERM or SIGINT."""
    from cronctl.runtime.logsetup import configure_logging

    if log_format not in ("text", "json"):
        raise UsageError(f"--log-format: {log_format!r} is not one of: text, json")
    options = global_options(ctx)
    configure_logging(_level(options), log_format)
    checked = check_all(options)
    for warning in checked.warnings:
        log.warning("%s", warning)
    if checked.violations:
        for violation in checked.violations:
            log.error("%s", violation)
        log.error("not started: %d violation%s", len(checked.violations),
                  "" if len(checked.violations) == 1 else "s")
        raise typer.Exit(1)
    config = _contained(checked.config)
    _refuse_untrusted_state(config.database)
    from cronctl.runtime.service import serve
    from cronctl.store import open_store

    store = open_store(config.database, node_id=config.node_id, auto_migrate=config.auto_migrate)
    try:
        serve(config, checked.result.jobs, store, reload=lambda: _reloaded(options))
    finally:
        store.close()


def _refuse_untrusted_state(database: str) -> None:
    """A SQLite state file another user can write is not used (docs/trust.md)."""
    from cronctl import trust
    from cronctl.store.urls import kind_of, sqlite_path

    path = sqlite_path(database) if kind_of(database) == "sqlite" else None
    problem = None if path is None else trust.untrusted_state(path)
    if problem is None:
        return
    if trust.permitted():
        log.warning("--allow-insecure: state database %s is used although %s", path, problem)
        return
    log.error("not started: state database %s is not used: %s; whoever can write it decides "
              "what the scheduler recovers and ends (chown, chmod go-w), or pass "
              "--allow-insecure", path, problem)
    raise typer.Exit(1)


def _contained(config: Config) -> Config:
    """``[scheduler] cgroup`` resolved before anything is started: the directory the
    command attempts get their cgroups in (the scheduler moved out of it when it was in
    it), or ``"off"`` (:mod:`cronctl.cgroups`). A configured directory that cannot be
    used refuses the start; ``auto`` falls back on the process group, saying so."""
    from dataclasses import replace

    from cronctl import cgroups

    found = cgroups.detect(config.cgroup)
    explicit = config.cgroup not in (cgroups.AUTO, cgroups.OFF)
    if found.cgroups:
        assert found.base is not None
        try:
            base = cgroups.Base(found.base)
            base.prepare()
            for path in base.leftovers():
                log.warning("cgroup %s of an earlier attempt still has processes (pid %s): "
                            "its scheduler was killed; 'echo 1 > %s/cgroup.kill' ends them",
                            path, ", ".join(map(str, cgroups.Attempt(path, None).pids())),
                            path)
        except OSError as exc:
            found = cgroups.Containment("process-group", None,
                                        f"cannot use cgroup {found.base}: {exc.strerror}")
    if explicit and not found.cgroups:
        log.error("not started: [scheduler] cgroup: %s", found.reason)
        raise typer.Exit(1)
    log.info("a command's processes end with its attempt: %s", found.describe())
    return replace(config, cgroup=found.base or cgroups.OFF)


def _reloaded(options: GlobalOptions) -> tuple[Sequence[JobDefinition], Config] | None:
    """SIGHUP: the job set to reload and the configuration read again, or None to keep
    the current ones (every violation logged)."""
    checked = check_all(options)
    if checked.violations:
        for violation in checked.violations:
            log.error("reload: %s", violation)
        log.error("reload rejected (%d violations); keeping the current jobs",
                  len(checked.violations))
        return None
    for warning in checked.warnings:
        log.warning("%s", warning)
    return checked.result.jobs, checked.config


def register(app: typer.Typer) -> None:
    app.command("run")(run)
