"""Tokens, roles, loopback-only without tokens, and the signed double-submit CSRF token
of ``cronctl serve`` (pure functions: no server)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cronctl.errors import ConfigError
from cronctl.serve.auth import (
    Forbidden,
    Principal,
    Unauthorized,
    authenticate,
    csrf_key,
    csrf_valid,
    is_loopback,
    new_csrf,
    require_operate,
)
from cronctl.serve.tokens import Token, find_token, read_tokens


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


def test_bearer_header_cookie_and_their_failures() -> None:
    def auth(header: str | None = None, cookie: str | None = None) -> Principal:
        return authenticate(TOKENS, authorization=header, cookie=cookie, client="10.1.2.3")

    assert auth("Bearer s3cret-op") == Principal("ops", "operate")
    assert auth("bearer  s3cret-rd ") == Principal("viewer", "read")
    assert auth(cookie="s3cret-op") == Principal("ops", "operate", via_cookie=True)
    for header in ("Bearer nope", "Basic czNjcmV0", "Bearer", "s3cret-op"):
        with pytest.raises(Unauthorized):
            auth(header)
    with pytest.raises(Unauthorized, match="log in"):
        auth(cookie="stale")
    with pytest.raises(Unauthorized, match="token is needed"):
        auth()


def test_without_tokens_only_loopback_reads() -> None:
    for client in ("127.0.0.1", "127.8.9.10", "::1"):
        who = authenticate(None, authorization=None, cookie=None, client=client)
        assert who.role == "read" and who.name == "loopback"
        with pytest.raises(Forbidden, match="operate"):
            require_operate(who)
    for client in ("10.0.0.5", "192.168.1.2", "2001:db8::1", None):
        with pytest.raises(Forbidden, match="loopback"):
            authenticate(None, authorization="Bearer x", cookie=None, client=client)
    assert is_loopback("localhost") and not is_loopback("example.org")


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
