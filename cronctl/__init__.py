"""cronctl: a cron scheduler you run as a service.

The public Python API: decorate a service class and its operations, and schedule them::

    from cronctl import JobContext, cron_job, operation, service

    @service(namespace="billing", name="invoices")
    class Invoices:
        @operation("send-reminders")
        @cron_job(id="invoices.reminders", cron="0 0 9 * * MON-FRI", timezone="Europe/Berlin")
        def send_reminders(self, ctx: JobContext) -> None:
            ctx.log.info("sending reminders")

and register the class under the ``cronctl.services`` entry-point group of your package.

The names load on first use (PEP 562): every ``cronctl.*`` import runs this module first,
and ``cronctl next`` must not pay for the job model, logging and threading it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronctl import lazy

if TYPE_CHECKING:
    from cronctl.context import JobContext
    from cronctl.jobs.decorators import cron_job, operation, service
    from cronctl.jobs.model import (
        DstFold,
        DstGap,
        ExecutionStatus,
        MisfirePolicy,
        Mode,
        Origin,
        OverlapPolicy,
    )

__version__ = "0.1.0"

__all__ = [
    "DstFold",
    "DstGap",
    "ExecutionStatus",
    "JobContext",
    "MisfirePolicy",
    "Mode",
    "Origin",
    "OverlapPolicy",
    "__version__",
    "cron_job",
    "operation",
    "service",
]

# Each public name and the module that defines it.
_HOMES = {
    "JobContext": "cronctl.context",
    "cron_job": "cronctl.jobs.decorators",
    "operation": "cronctl.jobs.decorators",
    "service": "cronctl.jobs.decorators",
    "DstFold": "cronctl.jobs.model",
    "DstGap": "cronctl.jobs.model",
    "ExecutionStatus": "cronctl.jobs.model",
    "MisfirePolicy": "cronctl.jobs.model",
    "Mode": "cronctl.jobs.model",
    "Origin": "cronctl.jobs.model",
    "OverlapPolicy": "cronctl.jobs.model",
}


__getattr__, __dir__ = lazy.exports(__name__, _HOMES, __all__)
