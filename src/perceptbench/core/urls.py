"""Credentials written into a URL (``http://user:secret@host/...``) kept out of everything
perceptbench writes or prints: records' ``model_version``, response-cache entries, reports,
log lines and error messages.

The rule is pip's (``pip._internal.utils.misc.redact_auth_from_url``): ``user:password@``
becomes ``user:****@``, and a lone ``token@`` (a user name alone is often a token) becomes
``****@``.  The request itself still carries the credentials; only what is shown or stored is
redacted.  Imports nothing of perceptbench (the bottom layer).
"""

from __future__ import annotations

import re

__all__ = ["redact_url", "redact_urls_in", "split_userinfo"]

#: scheme://userinfo@ : the userinfo of RFC 3986 §3.2.1 (no '/', '@' or whitespace in it)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")


def _redacted(m: re.Match) -> str:
    user, sep, _password = m.group("userinfo").partition(":")
    return f"{m.group('scheme')}{user + ':****' if sep else '****'}@"


def redact_url(url: str) -> str:
    """``url`` with its userinfo redacted as pip does: ``http://u:p@h/x`` -> ``http://u:****@h/x``,
    ``http://tok@h/x`` -> ``http://****@h/x``; a URL without userinfo is returned unchanged."""
    return redact_urls_in(url)


def redact_urls_in(text: str) -> str:
    """Every URL in ``text`` (a message, a log line) with its userinfo redacted (:func:`redact_url`)."""
    return _USERINFO.sub(_redacted, str(text))


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(``url`` without its userinfo, ``(user, password)`` percent-decoded, or None when it has
    none).  A client sends the pair as HTTP Basic auth (what ``http://user:pw@host`` means, RFC
    7617), so the URL it requests and logs carries no credentials."""
    from urllib.parse import unquote

    m = _USERINFO.match(str(url))
    if not m:
        return str(url), None
    user, _, password = m.group("userinfo").partition(":")
    return m.group("scheme") + str(url)[m.end():], (unquote(user), unquote(password))
