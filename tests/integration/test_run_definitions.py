"""The definitions' snapshot (``job_schedules.definition``) is written off the fire path
(the I/O thread's background worker) once the scheduler is READY, and again after a
reload."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from cronctl.config import Config
from cronctl.jobs.model import CommandTarget, JobDefinition
from cronctl.runtime import Scheduler
from cronctl.store import Store, open_store


def _definition(store: Store, job_id: str, key: str, want: object) -> dict[str, Any]:
    """The job's snapshot once ``key`` has ``want`` (polled: the I/O thread writes it)."""
    deadline = time.monotonic() + 10
    while True:
        got = store.get_schedule(job_id)
        if got is not None and got.definition.get(key) == want:
            return got.definition
        if time.monotonic() > deadline:
            raise AssertionError(f"no snapshot of {job_id} with {key}={want!r}: {got}")
        time.sleep(0.02)


def test_snapshots_after_ready_and_after_a_reload(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = open_store(url, node_id="n1")
    job = JobDefinition(id="nightly", target=CommandTarget(("true",)), cron="0 0 3 * * *",
                        tracked=True)
    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id="n1", tracked=True, shutdown_timeout=timedelta(seconds=5))
    sched = Scheduler(config, [job], store)
    sched.start()
    try:
        first = _definition(store, "nightly", "cron", "0 0 3 * * *")
        assert first["command"]["argv"] == ["true"] and first["schedule"] == "0 0 3 * * *"
        sched.reload([JobDefinition(id="nightly", target=CommandTarget(("true",)),
                                    cron="0 30 4 * * *", tracked=True)])
        _definition(store, "nightly", "cron", "0 30 4 * * *")
    finally:
        sched.stop()
        store.close()
