"""The process log's line format: the cached timestamp text is the one a fresh
``datetime`` gives, at every millisecond and second boundary."""

from __future__ import annotations

import io
import json
import logging
import random
from datetime import UTC, datetime

from cronctl.runtime.logsetup import _Stamps, configure_logging, flush_logs, ids


def _reference(created: float) -> str:
    stamp = datetime.fromtimestamp(created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def test_cached_stamps_match_datetime() -> None:
    stamps = _Stamps()
    rng = random.Random(11)
    base = 1_772_953_200.0  # 2026-03-08T07:00:00Z
    edges = [base + k + f for k in range(3) for f in (0.0, 0.0009995, 0.0005, 0.9994999,
                                                      0.9995, 0.9999994, 0.9999996, 0.999999)]
    randoms = [base + rng.uniform(0, 86_400 * 400) for _ in range(5_000)]
    for created in [*edges, *sorted(randoms), *randoms]:  # in order, and jumping around
        assert stamps(created) == _reference(created), created


def test_text_and_json_lines() -> None:
    out = io.StringIO()
    log = logging.getLogger("cronctl.runtime")
    try:
        configure_logging(logging.INFO, "text", out)
        log.info("fired job=%s", "a\nb", extra=ids("a\nb", 7))
        configure_logging(logging.INFO, "json", out)  # (the text handler's lines written)
        log.info("fired job=%s", "a", extra=ids("a", 7))
        flush_logs()
    finally:
        configure_logging(logging.WARNING, "text", io.StringIO())
    text, doc = out.getvalue().splitlines()
    stamp, level, message = text.split(" ", 2)
    assert datetime.fromisoformat(stamp).tzinfo is not None and stamp.endswith("Z")
    assert (level, message) == ("INFO", "fired job=a\\nb")
    parsed = json.loads(doc)
    assert (parsed["ts"][-1], parsed["job"], parsed["exec"]) == ("Z", "a", "7")
