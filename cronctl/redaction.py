"""Secrets out of every message: the one place that hides passwords in text (a leaf
module: config and job violations, driver errors and log lines all pass through it).

A database or webhook URL may carry ``user:password@``, or ``?password=``; such a URL can
turn up anywhere in a message (a value of the wrong type quoted back, a driver's error).
Every ``scheme://user:password@`` in the text becomes ``scheme://user:***@``. The
password runs to the last ``@`` of its word, so an unencoded ``@`` or ``/`` in it is
still hidden (``u:p@ss/w@host`` -> ``u:***@host``): over-redacting an odd URL beats
leaking.
"""

from __future__ import annotations

import re

# A whole URL: its password runs to the last "@" of the text (spaces, quotes and all).
# (An empty or odd scheme still marks a URL: "://u:pw@h".)
_URL_USERINFO = re.compile(
    r"^(?P<scheme>(?:[A-Za-z][A-Za-z0-9+.-]*)?://)(?P<user>[^:@/]*):(?P<pw>.*)@")
# A URL inside a message: to the last "@" of its word.
_USERINFO = re.compile(
    r"(?P<scheme>(?:[A-Za-z][A-Za-z0-9+.-]*)?://)(?P<user>[^:@/\s'\"]*):(?P<pw>[^\s'\"]*)@")
_QUERY_PW = re.compile(r"(?i)([?&]password=)[^&\s'\"]*")


def _hide(m: re.Match[str]) -> str:
    return f"{m['scheme']}{m['user']}:***@"


def redact(text: str) -> str:
    """``text`` with every URL password replaced by ``***`` (userinfo and
    ``?password=``)."""
    if "://" not in text and "password=" not in text.lower():
        return text
    out = _USERINFO.sub(_hide, _URL_USERINFO.sub(_hide, text, count=1))
    return _QUERY_PW.sub(r"\1***", out)


__all__ = ["redact"]
