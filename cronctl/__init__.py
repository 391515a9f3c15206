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
"""

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
