"""``[metrics] listen`` in cronctl.toml: off by default, host:port validated, loopback when
only a port is given, every problem one violation naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronctl.config import format_listen, parse_listen, read_config
from cronctl.options import GlobalOptions


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("CRONCTL_CONFIG", "CRONCTL_DATABASE_URL", "STATE_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("cronctl.config.SYSTEM_CONFIG", Path("/nonexistent/cronctl.toml"))


def test_off_by_default() -> None:
    assert read_config(GlobalOptions()).config.metrics_listen is None
    Path("cronctl.toml").write_text('[scheduler]\nnode_id = "a"\n')
    assert read_config(GlobalOptions()).config.metrics_listen is None


@pytest.mark.parametrize(("value", "expected"), [
    ('"127.0.0.1:9464"', ("127.0.0.1", 9464)),
    ('"0.0.0.0:80"', ("0.0.0.0", 80)),
    ('"localhost:9464"', ("localhost", 9464)),
    ('"metrics.example.org:9464"', ("metrics.example.org", 9464)),
    ('"[::1]:9464"', ("::1", 9464)),
    ('":9464"', ("127.0.0.1", 9464)),
    ('"9464"', ("127.0.0.1", 9464)),
    ("9464", ("127.0.0.1", 9464)),
])
def test_listen_values(value: str, expected: tuple[str, int]) -> None:
    Path("cronctl.toml").write_text(f"[metrics]\nlisten = {value}\n")
    result = read_config(GlobalOptions())
    assert result.violations == ()
    assert result.config.metrics_listen == expected


@pytest.mark.parametrize(("value", "message"), [
    ('"127.0.0.1"', "has no port"),
    ('"127.0.0.1:0"', "from 1 to 65535"),
    ('"127.0.0.1:65536"', "from 1 to 65535"),
    ('"127.0.0.1:http"', "from 1 to 65535"),
    ('"::1:9464"', "IPv6 address in brackets"),
    ('"[nope]:9464"', "not an IPv6 address"),
    ('"[::1]"', "has no port"),
    ('"bad host:9464"', "not a host name or address"),
    ('""', "host:port"),
    ("true", "host:port"),
    ("[9464]", "host:port"),
])
def test_bad_listen_is_one_violation_naming_the_line(value: str, message: str) -> None:
    Path("cronctl.toml").write_text(f'[scheduler]\nnode_id = "a"\n\n[metrics]\nlisten = {value}\n')
    result = read_config(GlobalOptions())
    [violation] = result.violations
    assert violation.key == "metrics.listen"
    assert violation.source.endswith("cronctl.toml:5")
    assert message in violation.message
    assert "\n" not in str(violation)
    assert result.config.metrics_listen is None


def test_unknown_metrics_key_and_section_suggest() -> None:
    Path("cronctl.toml").write_text('[metrics]\nlistn = ":1"\n[metric]\nlisten = ":1"\n')
    found = {(v.key, v.message) for v in read_config(GlobalOptions()).violations}
    assert ("metrics.listn", "unknown key (did you mean 'listen'?)") in found
    assert ("metric", "unknown section (did you mean 'metrics'?)") in found


def test_metrics_must_be_a_table() -> None:
    Path("cronctl.toml").write_text('metrics = ":9464"\n')
    [violation] = read_config(GlobalOptions()).violations
    assert (violation.key, violation.message) == ("metrics", "must be a table ([metrics])")


def test_format_listen() -> None:
    assert format_listen(("127.0.0.1", 9464)) == "127.0.0.1:9464"
    assert format_listen(("::1", 9464)) == "[::1]:9464"
    assert parse_listen(format_listen(("::1", 9))) == ("::1", 9)


def test_every_metrics_key_is_in_the_file_format_page() -> None:
    from cronctl import config

    man = (Path(__file__).resolve().parents[3] / "man" / "cronctl.toml.5").read_text()
    section = man.split(".SS [metrics]", 1)[1].split(".S", 1)[0]
    for key in config.METRICS_KEYS:
        assert f".B {key}" in section
    for name in ("cronctl_fires_total", "cronctl_executions_total", "cronctl_skipped_total",
                 "cronctl_lateness_seconds", "cronctl_running_executions",
                 "cronctl_waiting_fires", "cronctl_job_last_success_timestamp_seconds",
                 "cronctl_job_next_fire_timestamp_seconds", "cronctl_store_up",
                 "cronctl_notify_failures_total", "cronctl_build_info",
                 "cronctl_execution_cpu_seconds", "cronctl_execution_max_rss_bytes"):
        assert name in section
