"""Plain functions for ``target = "python:cronctl_example.tasks:<function>"`` jobs."""

from __future__ import annotations

import platform

from cronctl import JobContext


def heartbeat(ctx: JobContext) -> None:
    """Log who ran and when; the job's ``parameters`` arrive in ``ctx.parameters``."""
    greeting = ctx.parameters.get("greeting", "alive")
    ctx.log.info("%s: %s on %s (attempt %d, %s)", ctx.job_id, greeting, platform.node(),
                 ctx.attempt, ctx.origin)
    ctx.progress(1, 1, "done")
