"""Stable identifiers of occurrences and their UTC keys: a leaf module (stdlib only) that
the core, the runtime and the store all key occurrences with."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

# The mark of an occurrence two of whose attempts ran at the same time (a node that went on
# running after it was taken over): on the lost row's error, the anomaly event's reason
# and the kind of cronctl_anomalies_total (docs/liveness.md).
CONCURRENT_AFTER_PARTITION = "concurrent_after_partition"


def anomaly_of(error: str | None) -> str | None:
    """The anomaly an execution's error marks, if any."""
    if error is not None and CONCURRENT_AFTER_PARTITION + ":" in error:
        return CONCURRENT_AFTER_PARTITION
    return None


def utc_iso(instant: datetime) -> str:
    """Fixed-width UTC ISO 8601 with microseconds and ``Z``: ``2026-03-08T07:00:00.000000Z``.

    Fixed width matters: strings of this form sort and compare like the instants."""
    if instant.tzinfo is not UTC:
        if instant.tzinfo is None or instant.utcoffset() is None:
            raise ValueError(f"instant must be timezone-aware, got naive {instant.isoformat()}")
        instant = instant.astimezone(UTC)
    # (isoformat pads the year to 4 digits; with UTC it always ends in "+00:00". Under half
    # the cost of strftime: every SQLite row written or read has a few of these.)
    return instant.isoformat(timespec="microseconds")[:-6] + "Z"


def occurrence_id(job_id: str, planned_at: datetime) -> str:
    """The stable id of occurrence (job, planned UTC instant): 32 hex digits.

    The same on every node and after every restart, whatever zone ``planned_at`` is
    expressed in (it is keyed in UTC, so the two instants of a DST fold differ).
    Handlers use it as an idempotency key."""
    digest = hashlib.sha256(f"{job_id}\n{utc_iso(planned_at)}".encode()).hexdigest()
    return digest[:32]


__all__ = ["CONCURRENT_AFTER_PARTITION", "anomaly_of", "occurrence_id", "utc_iso"]
