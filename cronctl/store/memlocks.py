"""Guard locks of the memory store: a dict under the store's lock (one process, so the
keys are process-local; the memory store has every_instance jobs only)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from cronctl.store.base import GuardLock


class LockTable:
    """Not thread-safe on its own: the memory store calls it under its lock."""

    def __init__(self) -> None:
        self._held: dict[str, GuardLock] = {}

    def held(self, keys: Iterable[str]) -> str | None:
        """The first of ``keys`` (in key order) that is held, if any."""
        return next((k for k in sorted(keys) if k in self._held), None)

    def take(self, keys: Sequence[str], execution_id: int, node_id: str, at: datetime
             ) -> None:
        for key in keys:
            self._held[key] = GuardLock(key, execution_id, node_id, at)

    def release_executions(self, execution_ids: Iterable[int]) -> None:
        ids = set(execution_ids)
        if ids and self._held:
            for key in [k for k, g in self._held.items() if g.execution_id in ids]:
                del self._held[key]

    def release_nodes(self, keep: Iterable[str] | None = None, *, drop: str | None = None
                      ) -> int:
        """Drop the locks of node ``drop``, or of every node not in ``keep``."""
        live = set(keep or ())
        gone = [k for k, g in self._held.items()
                if (g.node_id == drop if drop is not None else g.node_id not in live)]
        for key in gone:
            del self._held[key]
        return len(gone)

    def all(self) -> list[GuardLock]:
        return [self._held[k] for k in sorted(self._held)]
