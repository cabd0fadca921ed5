"""Secrets out of everything tokspeed records: one ``Redactor`` per run, applied to every record as it is
written, to the summary, to the report and to console lines made from data.

It removes what it was told (the API key; the user and password of the URL) wherever it appears: plain,
percent-encoded, or as HTTP Basic credentials (base64 of ``user:password``), so a server that echoes the
``Authorization`` header in ``/props`` or in an error body gets nothing into the files. It also removes
credentials it was not told about: the ``user:password@`` of any URL, the values of token-like query
parameters (``?token=``, ``&api_key=``, ``sig``...), ``Bearer …`` / ``Basic …`` values, and the value
of any dict entry whose key names a credential (``authorization``, ``api_key``, ``cookie``...).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import quote, unquote, urlsplit

MASK = "***"
MIN_SECRET = 4                    # shorter "secrets" (a user name "a") would mask ordinary text
TOKEN_PARAMS = ("token", "access_token", "auth", "auth_token", "api_key", "apikey", "api-key", "key", "secret",
                "client_secret", "password", "passwd", "pwd", "sig", "signature", "hf_token", "session", "code")
SECRET_KEYS = re.compile(r"^(x-)?(proxy-)?(authori[sz]ation|api[_-]?key|access[_-]?token|auth[_-]?token|bearer|token|"
                         r"secret|client[_-]?secret|password|passwd|(set-)?cookie|credentials?)$", re.I)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s@?#\"'<>]+)@")
_QUERY = re.compile(r"(?P<k>[?&;](?:%s)=)[^&#\s\"'<>]*" % "|".join(re.escape(p) for p in TOKEN_PARAMS), re.I)
# an Authorization value: "Bearer <token>" (any case) or "Basic <base64>"; 8+ characters, so prose ("basic usage")
# is left alone
_SCHEME_VALUE = re.compile(r"\b(?P<s>[Bb]earer|BEARER|Basic)\s+[A-Za-z0-9._~+/=-]{8,}")


class Redactor:
    def __init__(self, secrets=()):
        found: set[str] = set()
        for s in secrets:
            if isinstance(s, str) and len(s) >= MIN_SECRET:
                found |= {s, quote(s, safe=""), quote(s)}
        self._secrets = sorted(found, key=len, reverse=True)

    @classmethod
    def for_run(cls, url: str | None = None, api_key: str | None = None) -> "Redactor":
        """The key, and the user/password of ``url`` (plain and as Basic credentials)."""
        secrets = [api_key] if api_key else []
        try:
            p = urlsplit(url or "")
            user, password = p.username, p.password
        except ValueError:
            user = password = None
        for part in (user, password):
            if part:
                secrets += [part, unquote(part)]
        if user is not None and password is not None:
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            secrets.append(base64.b64encode(pair).decode())
        if api_key:
            secrets.append(base64.b64encode(api_key.encode()).decode())
        return cls(secrets)

    def text(self, value: str) -> str:
        for s in self._secrets:
            if s in value:
                value = value.replace(s, MASK)
        value = _USERINFO.sub(lambda m: m["scheme"] + MASK + "@", value)
        value = _QUERY.sub(lambda m: m["k"] + MASK, value)
        return _SCHEME_VALUE.sub(lambda m: m["s"] + " " + MASK, value)

    def obj(self, value):
        """``value`` (dicts, lists, strings, numbers) with every string redacted and every credential-named
        entry masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: (MASK if isinstance(k, str) and SECRET_KEYS.search(k) and isinstance(v, str) and v
                        and not _harmless(k, v) else self.obj(v))
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value


def _harmless(key: str, value: str) -> bool:
    """The run line's ``api_key: "from TOKSPEED_API_KEY"`` (where the key came from) is not a credential."""
    return value.startswith("from ") or value == "none"


PLAIN = Redactor()                 # credentials nobody told us about (a run file someone sent)
