"""``cronctl run``: the foreground scheduler (a systemd ``Type=notify`` service).

Validate (every violation printed, exit 1), open the store (migrating when
``auto_migrate``), register the node, start the :class:`~cronctl.runtime.Scheduler`,
then wait for signals: SIGTERM/SIGINT stop gracefully and exit 0; SIGHUP reloads the
jobs, keeping the old set (and logging every violation) when the new one is invalid.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import check_all
from cronctl.errors import UsageError
from cronctl.options import GlobalOptions

if TYPE_CHECKING:
    from cronctl.runtime import Scheduler

log = logging.getLogger("cronctl.runtime")


def _level(options: GlobalOptions) -> int:
    if options.quiet:
        return logging.WARNING
    return logging.DEBUG if options.verbose > 0 else logging.INFO


def run(
    ctx: typer.Context,
    log_format: Annotated[str, typer.Option(
        "--log-format", help="Log lines on stderr: 'text' or 'json' (one object per line).")
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
    config = checked.config
    from cronctl.runtime import Scheduler
    from cronctl.runtime.watch import serving
    from cronctl.store import open_store

    store = open_store(config.database, node_id=config.node_id, auto_migrate=config.auto_migrate)
    try:
        scheduler = Scheduler(config, checked.result.jobs, store)
        with serving(scheduler):  # /metrics and /healthz when [metrics] listen is set
            _serve(scheduler, options)
    finally:
        store.close()


def _serve(scheduler: Scheduler, options: GlobalOptions) -> None:
    wake = threading.Event()
    stop_requested: list[int] = []
    reload_requested: list[int] = []

    def on_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.append(signum)
        wake.set()

    def on_reload(signum: int, frame: FrameType | None) -> None:
        reload_requested.append(signum)
        wake.set()

    # Installed before start() so a signal during recovery is not lost (it is acted on
    # once the scheduler is up).
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_reload)
    scheduler.start()
    settle_heap()
    try:
        while not stop_requested:
            wake.wait(1.0)
            wake.clear()
            while reload_requested and not stop_requested:
                reload_requested.clear()
                _reload(scheduler, options)
        log.info("received %s; stopping", signal.Signals(stop_requested[0]).name)
    finally:
        scheduler.stop()


def _reload(scheduler: Scheduler, options: GlobalOptions) -> None:
    log.info("SIGHUP: reloading jobs")
    try:
        checked = check_all(options)
    except Exception as exc:
        log.error("reload failed, keeping the current jobs: %s", exc)
        return
    if checked.violations:
        for violation in checked.violations:
            log.error("reload: %s", violation)
        log.error("reload rejected (%d violations); keeping the current jobs",
                  len(checked.violations))
        return
    for warning in checked.warnings:
        log.warning("%s", warning)
    scheduler.reload(checked.result.jobs)
    settle_heap(again=True)


def settle_heap(*, again: bool = False) -> None:
    """Collect what start-up (or a reload) left behind, then move everything still alive
    to the collector's permanent generation (``gc.freeze``).

    What is alive once the scheduler runs (modules, job definitions, schedules, the core's
    heap) lives as long as the process; without this every full collection walks it all
    again: with 20,000 jobs one took ~130 ms of the scheduler thread, inside a burst
    (bench/PROFILE.md). Frozen objects are still freed when nothing refers to them; a
    reload first thaws the old set so that its garbage cycles can go."""
    if again:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def register(app: typer.Typer) -> None:
    app.command("run")(run)
