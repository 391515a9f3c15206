"""What every request of ``cronctl serve`` shares: the configuration, the jobs (re-read
every few seconds, so an edited job file shows without a restart), one store (a
connection pool; the server is stateless, the database is the state), the tokens (read
again when their file changes), the Host names it answers, the limit on failed
authentication, the tally of refused requests written to the audit log, and the deadline
on reads.

Reads run on a small pool of threads and are waited for at most ``[api] query_timeout``:
a query that takes longer is answered 503 (a problem document saying so) instead of
tying up the server; the thread finishes its query in the background and is then free
again. The pool is small on purpose: many slow queries at once queue and time out
rather than pile onto the database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from cronctl.errors import ConfigError, CronctlError

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition
    from cronctl.jobs.violation import Violation
    from cronctl.options import GlobalOptions
    from cronctl.serve.tokens import Token, TokenSource
    from cronctl.store.base import Store

T = TypeVar("T")
log = logging.getLogger("cronctl.serve")
JOBS_TTL = 5.0  # seconds a loaded set of jobs is reused
PAGE_TTL = 2.0  # seconds the jobs page's data is shared by the requests that ask for it
READ_THREADS = 8


class Overloaded(CronctlError):
    """A read took longer than ``[api] query_timeout`` (HTTP 503)."""


@dataclass(frozen=True)
class Loaded:
    config: Config
    jobs: Sequence[JobDefinition]
    violations: Sequence[Violation]

    def by_id(self) -> dict[str, JobDefinition]:
        return {job.id: job for job in self.jobs}


class ServeContext:
    def __init__(self, options: GlobalOptions, config: Config, store: Store,
                 tokens: TokenSource, listen_host: str = "127.0.0.1") -> None:
        from cronctl.serve.hosts import AllowedHosts
        from cronctl.serve.limits import FailureLimit, RefusalTally

        self.options = options
        self.config = config
        self.store = store
        self.token_source = tokens
        self.listen_host = listen_host
        self.hosts = AllowedHosts(listen_host, config.api.allowed_hosts)
        self.session_lifetime = config.api.session_lifetime
        self.failures = FailureLimit()
        self.refusals = RefusalTally()
        self.timeout = config.api.query_timeout.total_seconds()
        self._closed = threading.Event()
        self._writer = threading.Thread(target=self._write_refusals, daemon=True,
                                        name="cronctl-refusals")
        self._pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="cronctl-read")
        self._lock = threading.Lock()
        self._loaded: tuple[float, Loaded] | None = None
        self._memo: dict[str, tuple[float, object]] = {}
        self._gates: dict[str, threading.Lock] = {}

    @property
    def tokens(self) -> tuple[Token, ...]:
        """The tokens file as it is now (:class:`TokensUnavailable` while it is bad)."""
        return self.token_source.current()

    def start(self) -> None:
        self._writer.start()

    def finish(self) -> None:
        """Stop the refusal writer and write what it still holds (at shutdown)."""
        self._closed.set()
        if self._writer.is_alive():
            self._writer.join(timeout=5)
        self._flush_refusals(everything=True)

    def close(self) -> None:
        self.finish()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.store.close()

    # --- refused requests: one audit row per source and window ---------------------------

    def _write_refusals(self) -> None:
        while True:
            due = self.refusals.next_due()
            if self._closed.wait(5.0 if due is None else min(due, 5.0)):
                return
            self._flush_refusals()

    def _flush_refusals(self, *, everything: bool = False) -> None:
        for tally in self.refusals.due(everything=everything):
            status = max(tally.statuses, key=lambda k: tally.statuses[k])
            try:
                self.store.record_audit(
                    at=tally.last, actor="unauthenticated", role=None, action="refused",
                    target=None, detail=tally.detail(), status=status,
                    result=f"{tally.count} request(s) refused without valid credentials",
                    client=tally.client)
            except Exception as exc:  # the log still says it
                log.error("audit row not written (%d refused request(s) from %s): %s",
                          tally.count, tally.client, exc)

    # --- jobs ----------------------------------------------------------------------------

    def loaded(self, now: datetime) -> Loaded:
        """The configuration and the jobs, at most :data:`JOBS_TTL` seconds old."""
        with self._lock:
            if self._loaded is not None and time.monotonic() - self._loaded[0] < JOBS_TTL:
                return self._loaded[1]
        from cronctl.config import read_config
        from cronctl.jobs.loader import load_jobs

        read = read_config(self.options)
        result = load_jobs(read.config.job_settings, now=now)
        # The valid jobs even when others are not: one bad file must not make every page say
        # there are no jobs (the violations are shown above them).
        loaded = Loaded(read.config, result.shown, (*read.violations, *result.violations))
        with self._lock:
            self._loaded = (time.monotonic(), loaded)
        return loaded

    def valid(self, now: datetime) -> Loaded:
        """:meth:`loaded`, or :class:`ConfigError` with the CLI's ``list`` message when the
        configuration has violations."""
        loaded = self.loaded(now)
        if loaded.violations:
            raise ConfigError(f"{len(loaded.violations)} violation(s); fix them (see "
                              "'cronctl validate') before listing")
        return loaded

    def job(self, job_id: str, now: datetime) -> JobDefinition:
        """The job ``job_id``: :class:`NotFoundError` (with a did-you-mean) when no source
        defines it, :class:`ConfigError` when it is invalid."""
        loaded = self.loaded(now)
        job = loaded.by_id().get(job_id)
        if job is not None:
            return job
        from cronctl.jobs.loader import find_job

        return find_job(loaded.config.job_settings, job_id, now=now)

    def shared(self, key: str, work: Callable[[], T], ttl: float = PAGE_TTL) -> T:
        """``work()``'s result, computed once for all the requests that ask for ``key``
        within ``ttl`` seconds (the others wait for it rather than compute it again).
        The jobs page reads every job's strip: fifty browsers refreshing it at once
        must cost one read, not fifty. Per process; nothing here outlives ``ttl``."""
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                found = self._memo.get(key)
            if found is not None and time.monotonic() - found[0] < ttl:
                return found[1]  # type: ignore[return-value]
            value = work()
            with self._lock:
                self._memo[key] = (time.monotonic(), value)
            return value

    def forget(self) -> None:
        """Drop what :meth:`shared` keeps (after a ``POST`` changed something)."""
        with self._lock:
            self._memo.clear()

    # --- bounded reads -------------------------------------------------------------------

    def bounded(self, work: Callable[[], T]) -> T:
        """``work()`` on a read thread, waited for at most ``query_timeout``."""
        future = self._pool.submit(work)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            future.cancel()
            raise Overloaded(f"the request took longer than {self.timeout:g}s ([api] "
                             "query_timeout); narrow it (a job, --since/--until, a smaller "
                             "limit) or try again") from None
