"""The composition root of ``cronctl run``: builds the scheduler over an open store, serves
its metrics, and runs it until a signal says stop.

SIGTERM/SIGINT stop gracefully; SIGHUP asks ``reload`` for a new job set and the
configuration read again (None: keep the current ones; the caller has logged why): the
jobs and ``[notify]`` apply at once, a change that needs a restart is logged as such. An
application embedding cronctl can use :func:`serve` as it is, or build a
:class:`~cronctl.runtime.Scheduler` itself.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import FrameType

from cronctl.config import Config
from cronctl.errors import StoreError
from cronctl.heap import collector_paused
from cronctl.jobs.model import JobDefinition
from cronctl.runtime.observers import serving
from cronctl.runtime.scheduler import Scheduler
from cronctl.store.base import Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")
Reloader = Callable[[], tuple[Sequence[JobDefinition], Config] | None]
# What SIGHUP cannot change in a running scheduler: (Config field, the key as written).
RESTART_KEYS = (("database", "database"), ("node_id", "node_id"),
                ("max_concurrent_jobs", "max_concurrent_jobs"),
                ("heartbeat_interval", "heartbeat_interval"),
                ("shutdown_timeout", "shutdown_timeout"),
                ("progress_flush_interval", "progress_flush_interval"),
                ("clock_skew_limit", "clock_skew_limit"), ("retention", "[retention]"),
                ("metrics_listen", "[metrics] listen"))


def serve(config: Config, jobs: Sequence[JobDefinition], store: Store, *,
          reload: Reloader) -> None:
    """Run a scheduler of ``jobs`` until SIGTERM or SIGINT (on the main thread: it installs
    the signal handlers)."""
    with collector_paused():  # a big job set's scheduler: see cronctl.heap
        scheduler = Scheduler(config, jobs, store)
    with serving(config, scheduler.watch):  # /metrics and /healthz when [metrics] listen
        run_until_signalled(scheduler, reload)


def run_until_signalled(scheduler: Scheduler, reload: Reloader) -> None:
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
    with collector_paused():  # recovery, cursors and the core's heap: settled just after
        scheduler.start()
    settle_heap()
    try:
        while not stop_requested and scheduler.halted is None:
            wake.wait(1.0)
            wake.clear()
            while reload_requested and not stop_requested:
                reload_requested.clear()
                log.info("SIGHUP: reloading jobs")
                with contextlib.suppress(StoreUnavailable):  # (the outage's probe checks)
                    if not scheduler.polls.check_schema():
                        break
                try:
                    got = reload()
                except Exception as exc:  # (a bug in loading must not stop the service)
                    log.error("reload failed, keeping the current jobs: %s", exc)
                    continue
                if got is not None:
                    scheduler.reload(got[0])
                    apply_settings(scheduler, got[1])
                    settle_heap(again=True)
        if scheduler.halted is None:
            log.info("received %s; stopping", signal.Signals(stop_requested[0]).name)
    finally:
        scheduler.stop()
    if scheduler.halted is not None:
        raise StoreError(f"stopped: {scheduler.halted}")


def apply_settings(scheduler: Scheduler, config: Config) -> None:
    """SIGHUP: a changed ``[notify]`` (webhook, command, mail, on, headers...) applies to
    every event from now on; what only a restart can apply is said, once per reload."""
    from cronctl.runtime.fire.watch import find_watch
    from cronctl.runtime.notify.events import Notifications

    running = scheduler.config
    notes = find_watch(scheduler.watch, Notifications)
    if config.notify != running.notify and notes is not None:
        notes.rebase(config.notify)
        scheduler.config = replace(running, notify=config.notify)
        log.info("SIGHUP: [notify] reloaded")
    stale = [key for name, key in RESTART_KEYS
             if getattr(config, name) != getattr(running, name)]
    if stale:
        log.warning("SIGHUP: %s changed; a restart applies %s (the running scheduler keeps "
                    "the old value)", ", ".join(stale), "it" if len(stale) == 1 else "them")


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
