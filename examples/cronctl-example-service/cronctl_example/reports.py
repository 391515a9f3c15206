"""A service whose operations cronctl can run.

``ReportService`` is registered in ``pyproject.toml`` under ``cronctl.services``; its
operations get the stable ids ``examples.reports.<operation>``, which is what a
``target = "service:examples.reports.compact"`` job names.
"""

from __future__ import annotations

import time

from cronctl import JobContext, cron_job, operation, service


@service(namespace="examples", name="reports")
class ReportService:
    """cronctl creates one instance (no arguments) and calls its methods on each fire."""

    def __init__(self) -> None:
        self.runs = 0

    @operation("compact")
    @cron_job(
        id="reports.compact",
        every="30s",
        description="Compact yesterday's report rows (decorated; jobs.d may override)",
        max_attempts=2,
        timeout="20s",
    )
    def compact(self, ctx: JobContext) -> int:
        """A handler taking a JobContext: it logs, reports progress and honours cancel."""
        batches = int(ctx.parameters.get("batches", 5))
        ctx.log.info("compacting %d batches for %s", batches, ctx.scheduled_at.isoformat())
        for done in range(1, batches + 1):
            if ctx.is_cancelled():
                ctx.log.warning("cancelled after %d of %d batches", done - 1, batches)
                return done - 1
            time.sleep(0.05)  # stands in for real work
            ctx.progress(done, batches, f"batch {done}/{batches}")
        self.runs += 1
        ctx.log.info("compaction done (run %d of this process)", self.runs)
        return batches

    @operation("summary")
    def summary(self) -> str:
        """A handler taking nothing; scheduled only by a jobs.d table naming it."""
        return "all reports up to date"
