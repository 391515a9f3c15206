"""Tokens, roles, browser sessions, the Host names served, the failure limit and the
refusal tally, and the signed double-submit CSRF token of ``cronctl serve`` (pure
functions and injected clocks: no server)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cronctl.errors import ConfigError
from cronctl.serve.auth import (
    Forbidden,
    Principal,
    Unauthorized,
    bearer,
    csrf_key,
    csrf_valid,
    new_csrf,
    new_session_id,
    require_operate,
    session_digest,
    session_principal,
)
from cronctl.serve.hosts import AllowedHosts, host_of
from cronctl.serve.limits import FailureLimit, RefusalTally, source_of
from cronctl.serve.tokens import Token, TokenSource, TokensUnavailable, find_token, read_tokens


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


TOKENS = (Token("ops", "operate", _sha("s3cret-op")), Token("viewer", "read", _sha("s3cret-rd")))


def test_tokens_file_reads_names_roles_and_digests(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# comment\n\nops OPERATE {_sha('a').upper()}  # trailing\n"
                    f"ci read {_sha('b')}\n")
    assert read_tokens(path) == (Token("ops", "operate", _sha("a")), Token("ci", "read", _sha("b")))


@pytest.mark.parametrize(("line", "says"), [
    ("ops operate", "3 words"),
    ("ops admin " + "a" * 64, "role must be read or operate"),
    ("ops read " + "z" * 64, "sha256"),
    ("ops read s3cret-token-pasted-here", "sha256"),
    ("o/ps read " + "a" * 64, "name"),
])
def test_a_bad_tokens_line_names_its_line_and_never_echoes_it(tmp_path: Path, line: str,
                                                               says: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"ok read {'b' * 64}\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        read_tokens(path)
    message = str(caught.value)
    assert f"{path}:2" in message and says in message
    assert "s3cret" not in message and "\n" not in message


def test_a_duplicate_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"ops read {'a' * 64}\nops operate {'b' * 64}\n")
    with pytest.raises(ConfigError, match="used twice"):
        read_tokens(path)


def test_find_token_matches_the_digest_only() -> None:
    assert find_token(TOKENS, "s3cret-op") == TOKENS[0]
    assert find_token(TOKENS, "s3cret-rd") == TOKENS[1]
    assert find_token(TOKENS, _sha("s3cret-op")) is None  # the digest is not the token
    assert find_token(TOKENS, "") is None


def test_bearer_header_and_its_failures() -> None:
    assert bearer(TOKENS, "Bearer s3cret-op") == Principal("ops", "operate")
    assert bearer(TOKENS, "bearer  s3cret-rd ") == Principal("viewer", "read")
    for header in ("Bearer nope", "Basic czNjcmV0", "Bearer", "s3cret-op", ""):
        with pytest.raises(Unauthorized):
            bearer(TOKENS, header)


def test_a_session_is_a_random_id_bound_to_its_token_as_it_is_now() -> None:
    one, two = new_session_id(), new_session_id()
    assert one != two and len(one) >= 43
    digest = session_digest(one)
    assert digest == hashlib.sha256(one.encode()).hexdigest() and one not in digest
    who = session_principal(TOKENS, digest, "ops", _sha("s3cret-op"))
    assert who == Principal("ops", "operate", via_cookie=True, session=digest)
    with pytest.raises(Unauthorized, match="session ended"):
        session_principal(TOKENS, digest, None, None)  # no row: expired or logged out
    with pytest.raises(Unauthorized, match="no longer valid"):
        session_principal(TOKENS, digest, "ops", _sha("rotated"))  # the token changed
    with pytest.raises(Unauthorized, match="no longer valid"):
        session_principal(TOKENS, digest, "gone", _sha("s3cret-op"))  # its name is gone
    # the role is the tokens file's of today, not the login's
    demoted = (Token("ops", "read", _sha("s3cret-op")),)
    assert session_principal(demoted, digest, "ops", _sha("s3cret-op")).role == "read"


def test_host_names_served() -> None:
    loop = AllowedHosts("127.0.0.1", ("cron.example.com",))
    for header in ("127.0.0.1", "127.0.0.1:8321", "localhost:8321", "LOCALHOST", "[::1]:8321",
                   "cron.example.com", "cron.example.com.:443"):
        assert loop.allows(header), header
    for header in (None, "", "attacker.example", "attacker.example:8321", "10.0.0.5",
                   "[::1", "[::1]x", "cron.example.com:http", "a b"):
        assert not loop.allows(header), header
    one = AllowedHosts("10.0.0.5")
    assert one.allows("10.0.0.5:8321") and not one.allows("localhost")
    anywhere = AllowedHosts("0.0.0.0")
    assert anywhere.allows("192.0.2.7:8321") and anywhere.allows("[2001:db8::1]")
    assert not anywhere.allows("attacker.example")
    assert loop.allows_origin("http://localhost:8321")
    assert not loop.allows_origin("http://attacker.example") and not loop.allows_origin("null")
    assert host_of("[::1]:80") == "::1" and host_of("Example.COM.") == "example.com"


def test_failure_limit_is_a_bucket_per_source() -> None:
    now = [0.0]
    limit = FailureLimit(burst=3, per_second=0.5, clock=lambda: now[0])
    for _ in range(3):
        assert limit.retry_after("a") == 0
        limit.failed("a")
    assert limit.retry_after("a") == 2  # one failure back every 2 s
    assert limit.retry_after("b") == 0  # another source is not held to a's failures
    now[0] = 2.0
    assert limit.retry_after("a") == 0
    limit.failed("a")
    assert limit.retry_after("a") == 2
    assert source_of("2001:db8::1") == source_of("2001:db8::ffff") == "2001:db8::/64"
    assert source_of("::ffff:10.1.2.3") == "10.1.2.3" and source_of("10.1.2.3") == "10.1.2.3"


def test_refusals_are_one_row_per_source_and_window() -> None:
    now = [0.0]
    tally = RefusalTally(window=60, clock=lambda: now[0])
    for _ in range(40):
        tally.note("10.0.0.1", "POST /api/v1/jobs/x/pause", 401)
    tally.note("10.0.0.2", "GET /api/v1/jobs", 429)
    assert tally.due() == [] and tally.next_due() == 60
    now[0] = 61
    rows = {r.client: r for r in tally.due()}
    assert rows["10.0.0.1"].count == 40 and rows["10.0.0.2"].statuses == {429: 1}
    assert tally.due() == [] and tally.next_due() is None
    tally.note("10.0.0.1", "GET /", 401)
    assert [r.count for r in tally.due(everything=True)] == [1]


def test_token_source_follows_the_file_and_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"ops operate {_sha('a')}\n")
    source = TokenSource(path)
    assert [t.name for t in source.current()] == ["ops"]
    path.write_text(f"ops operate {_sha('a')}\nci read {_sha('b')}\n")
    assert [t.name for t in source.current()] == ["ops", "ci"]
    path.write_text("ops operate\n")
    with pytest.raises(TokensUnavailable):
        source.current()
    path.unlink()
    with pytest.raises(TokensUnavailable):
        source.current()
    other = tmp_path / "other"
    other.write_text(f"x read {_sha('c')}\n")
    source.reload(other)
    assert [t.name for t in source.current()] == ["x"]
    with pytest.raises(ConfigError, match="cannot read"):
        TokenSource(tmp_path / "missing")


def test_read_tokens_may_not_operate() -> None:
    require_operate(Principal("ops", "operate"))
    with pytest.raises(Forbidden, match="'viewer' has the role 'read'"):
        require_operate(Principal("viewer", "read"))


def test_csrf_token_is_signed_bound_to_the_name_and_to_the_tokens_file() -> None:
    key = csrf_key(TOKENS)
    token = new_csrf(key, "ops")
    assert csrf_valid(key, "ops", token, token)
    assert not csrf_valid(key, "ops", token, None)  # the form did not send it
    assert not csrf_valid(key, "ops", token, new_csrf(key, "ops"))  # not the cookie's
    assert not csrf_valid(key, "viewer", token, token)  # another principal's
    forged = token.split(".")[0] + "." + "0" * 32
    assert not csrf_valid(key, "ops", forged, forged)
    other = csrf_key((Token("ops", "operate", _sha("rotated")),))
    assert not csrf_valid(other, "ops", token, token)  # the tokens file changed
    assert csrf_key(tuple(reversed(TOKENS))) == key  # the same file, any order
