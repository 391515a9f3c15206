"""Interceptors: objects that see every dispatch and every outcome.

Installed packages register them under the entry-point group ``cronctl.interceptors``;
an entry point may name a class (instantiated once, without arguments) or an object.
An interceptor defines ``on_dispatch(ctx)`` and/or ``on_complete(ctx, outcome)``; both
receive the attempt's :class:`~cronctl.context.JobContext` (commands get one too, built
for the interceptors), and ``outcome`` is the :class:`~cronctl.dispatch.base.Outcome`.

Every exception an interceptor raises is caught and logged; it never changes an outcome
and never strands a job.

Pairing is NOT guaranteed: ``on_dispatch`` may have run for an attempt whose dispatch
then failed before it produced an outcome (the store refused the row update, the
scheduler stopped, the process was killed), and then ``on_complete`` is never called for
it. An interceptor that counts in-flight work must treat a missing ``on_complete`` as
possible (for example by expiring entries older than the job's timeout). Conversely,
``on_complete`` is called at most once per attempt, and only after ``on_dispatch``.
``on_dispatch`` runs on the thread about to run the attempt; ``on_complete`` on the
thread that saw it end: keep both quick.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from cronctl.context import JobContext
from cronctl.dispatch.base import Outcome
from cronctl.trust import untrusted_entry_point

GROUP = "cronctl.interceptors"

log = logging.getLogger("cronctl.dispatch")


class Interceptors:
    """An ordered set of interceptors; falsy when empty (callers skip building contexts)."""

    __slots__ = ("_dispatch", "_complete", "objects")

    def __init__(self, objects: Iterable[object]) -> None:
        self.objects: tuple[object, ...] = tuple(objects)
        self._dispatch = [
            (obj, fn) for obj in self.objects if callable(fn := getattr(obj, "on_dispatch", None))
        ]
        self._complete = [
            (obj, fn) for obj in self.objects if callable(fn := getattr(obj, "on_complete", None))
        ]

    def __bool__(self) -> bool:
        return bool(self.objects)

    def __len__(self) -> int:
        return len(self.objects)

    @classmethod
    def load(cls, group: str = GROUP) -> Interceptors:
        """Every interceptor installed under ``group``; one that fails to load is logged
        at ERROR and left out (the others still load)."""
        from importlib.metadata import entry_points

        objects: list[object] = []
        for ep in entry_points(group=group):
            distrust = untrusted_entry_point(ep)  # (its modules: the import guard's)
            if distrust is not None:
                log.error("interceptor %s (%s) is not loaded: %s", ep.name, ep.value, distrust)
                continue
            try:
                obj: Any = ep.load()
                if isinstance(obj, type):
                    obj = obj()
            except Exception as exc:
                log.error("interceptor %s (%s) failed to load: %s: %s",
                          ep.name, ep.value, type(exc).__name__, exc)
                continue
            if not (hasattr(obj, "on_dispatch") or hasattr(obj, "on_complete")):
                log.error("interceptor %s (%s) has neither on_dispatch nor on_complete; ignored",
                          ep.name, ep.value)
                continue
            objects.append(obj)
        return cls(objects)

    def on_dispatch(self, ctx: JobContext | None) -> None:
        if ctx is None:
            return
        for obj, fn in self._dispatch:
            try:
                fn(ctx)
            except Exception:
                log.exception("interceptor %r raised in on_dispatch (job %s, execution %s)",
                              obj, ctx.job_id, ctx.execution_id)

    def on_complete(self, ctx: JobContext | None, outcome: Outcome) -> None:
        if ctx is None:
            return
        for obj, fn in self._complete:
            try:
                fn(ctx, outcome)
            except Exception:
                log.exception("interceptor %r raised in on_complete (job %s, execution %s)",
                              obj, ctx.job_id, ctx.execution_id)
