"""Resolving a fire's target (docs/behaviour.md#running): a fire whose target cannot be resolved is
skipped; the first failure per job logs ERROR, repeats log DEBUG until it resolves again."""

from __future__ import annotations

import logging

from cronctl.dispatch.base import Dispatcher
from cronctl.errors import first_line
from cronctl.jobs.model import JobDefinition
from cronctl.runtime.logsetup import ids

log = logging.getLogger("cronctl.runtime")


class Targets:
    """Which jobs' targets failed to resolve, so that each failure is told once."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher
        self.unresolved: set[str] = set()

    def resolve(self, job: JobDefinition) -> str | None:
        """None when ``job``'s target resolves; else why not (one line)."""
        try:
            self._dispatcher.resolve(job)
        except Exception as exc:
            first = job.id not in self.unresolved
            self.unresolved.add(job.id)
            log.log(logging.ERROR if first else logging.DEBUG,
                    "skipped job=%s target=%s: target cannot be resolved: %s%s", job.id,
                    job.target, first_line(exc),
                    " (repeats are logged at DEBUG until it resolves)" if first else "",
                    extra=ids(job.id))
            return f"target cannot be resolved: {first_line(exc)}"
        if job.id in self.unresolved:
            self.unresolved.discard(job.id)
            log.info("target resolves again job=%s target=%s", job.id, job.target,
                     extra=ids(job.id))
        return None
