"""The imperative shell: threads, timers, signals and sd_notify around the core."""

from __future__ import annotations

from cronctl.runtime.scheduler import Scheduler

__all__ = ["Scheduler"]
