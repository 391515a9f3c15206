"""One writer at a time per process on SQLite.

SQLite allows one writer; a second connection that finds the file locked backs off in
SQLite's busy handler, which sleeps 1, 2, 5, 10... ms. Between the scheduler thread and
the I/O thread of one process that turned every collision into milliseconds of
lateness. A process-wide lock around writes makes them queue in microseconds instead.
Reads are not locked (WAL readers never block writers).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, cast

from cronctl.store.base import Store

WRITES = frozenset({
    "save_definitions", "advance_cursor", "advance_cursors", "set_paused",
    "next_fencing_token", "try_insert_execution", "insert_executions", "transition",
    "transitions", "claim_execution", "request_cancel", "append_logs",
    "record_progress", "enqueue_trigger", "take_triggers", "complete_trigger",
    "register_node", "heartbeat", "unregister_node", "insert_guarded", "claim_guarded",
    "release_locks", "release_stale_locks", "prune_step", "prune",
    "take_maintenance_lock", "release_maintenance_lock", "reclaim_space",
})


class _SerializedStore:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if name not in WRITES or not callable(value):
            return value
        lock = self._lock

        @functools.wraps(value)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return value(*args, **kwargs)

        # Cache the wrapper so later lookups skip __getattr__.
        object.__setattr__(self, name, locked)
        return locked


def serialized(store: Store) -> Store:
    """``store`` with its writes serialized (SQLite only; other stores as they are)."""
    if getattr(store, "kind", "") != "sqlite":
        return store
    return cast(Store, _SerializedStore(store))
