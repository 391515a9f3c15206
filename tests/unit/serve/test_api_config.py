"""``[api]`` in cronctl.toml: listen, tokens_file (relative to the file), query_timeout;
each bad value is a violation naming the key and its line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from cronctl.apiconfig import ApiSettings
from cronctl.config import read_config
from cronctl.options import GlobalOptions


def _read(tmp_path: Path, text: str) -> tuple[ApiSettings, list[str]]:
    path = tmp_path / "cronctl.toml"
    path.write_text(text)
    result = read_config(GlobalOptions(config=path))
    return result.config.api, [str(v) for v in result.violations]


def test_defaults_without_a_table(tmp_path: Path) -> None:
    api, problems = _read(tmp_path, "")
    assert api == ApiSettings() and problems == []
    assert api.listen is None and api.tokens_file is None
    assert api.query_timeout == timedelta(seconds=10)


def test_values(tmp_path: Path) -> None:
    api, problems = _read(tmp_path, '[api]\nlisten = "0.0.0.0:9000"\ntokens_file = "t/tokens"\n'
                                    'query_timeout = "2s"\n')
    assert problems == []
    assert api.listen == ("0.0.0.0", 9000)
    assert api.tokens_file == (tmp_path / "t" / "tokens").absolute()
    assert api.query_timeout == timedelta(seconds=2)
    assert _read(tmp_path, "[api]\nlisten = 8400\n")[0].listen == ("127.0.0.1", 8400)


def test_bad_values_are_violations_with_lines(tmp_path: Path) -> None:
    _, problems = _read(tmp_path, '[api]\nlisten = "host:99999"\ntokens_file = 3\n'
                                  'query_timeout = "1h"\nlisen = 1\n')
    assert len(problems) == 4
    assert any(":2:" in p and "api.listen" in p and "65535" in p for p in problems)
    assert any(":3:" in p and "api.tokens_file" in p for p in problems)
    assert any(":4:" in p and "api.query_timeout" in p and "10m" in p for p in problems)
    assert any(":5:" in p and "api.lisen" in p and "did you mean" in p for p in problems)
    _, problems = _read(tmp_path, 'api = "yes"\n')
    assert any("must be a table" in p for p in problems)


def test_allowed_hosts_and_session_lifetime(tmp_path: Path) -> None:
    api, problems = _read(tmp_path, '[api]\nallowed_hosts = ["Cron.Example.com.", "10.0.0.5", '
                                    '"[::1]", "cron.example.com"]\nsession_lifetime = "8h"\n')
    assert problems == []
    assert api.allowed_hosts == ("cron.example.com", "10.0.0.5", "::1")
    assert api.session_lifetime == timedelta(hours=8)
    assert _read(tmp_path, "")[0].session_lifetime == timedelta(hours=12)
    for bad, says in (('"cron.example.com"', "list of host names"),
                      ('["https://cron.example.com"]', "no scheme, port or path"),
                      ('["cron.example.com:8443"]', "no scheme, port or path"),
                      ('[""]', "not a host name"), ("[3]", "not a host name")):
        _, problems = _read(tmp_path, f"[api]\nallowed_hosts = {bad}\n")
        assert len(problems) == 1 and "api.allowed_hosts" in problems[0], bad
        assert says in problems[0], (bad, problems)
    for bad in ('"0s"', '"31d"', '"soon"'):
        _, problems = _read(tmp_path, f"[api]\nsession_lifetime = {bad}\n")
        assert len(problems) == 1 and "api.session_lifetime" in problems[0], bad
