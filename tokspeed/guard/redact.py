"""Secrets out of everything tokspeed writes: redaction happens once, at the writer.

The writers are ``guard.outputs`` (every file: ``write_file`` and the line-by-line ``open_append``) and the
terminal (``guard.console.safe_console`` and the error line of ``cli.main``); each passes its text through
``known().text`` -- the process's one ``Redactor``, which holds every secret this process was told of
(``remember``: a run's API key and the user and password of its URL, ``Redactor.for_run``) and every
credential in its environment (``HF_TOKEN``, ``TOKSPEED_API_KEY`` and any variable whose name says key,
token, secret, password or auth).

A known secret is removed in every spelling: raw, percent-encoded, JSON-escaped (``\\/`` and ``\\uXXXX``
included), base64 (HTTP Basic credentials), and any prefix of 8 characters or more of any of these (a
300-character excerpt that cuts a key still hides the part it kept). Credentials nobody told it of are
removed by shape: the ``user:password@`` of any URL; the value of a query parameter, a JSON entry, a
header, an assignment (``OPENAI_API_KEY=…``, ``api_key: …``, ``password = …``, ``'api_key': '…'``) or a command
line flag (``--api-key …``) whose name says key, token, secret, password, auth, sig, signature, cookie, session
or subscription-key, in any spelling (``api_key``, ``apiKey``, ``X-Api-Key``, ``subscription-key``); ``Bearer …``
/ ``Basic …`` values; and the credentials whose issuers give them a shape of their own (``hf_…``, ``ghp_…``,
``sk-…``, ``AIza…``, ``xoxb-…``, ``AKIA…``: ``_TOKEN_SHAPES``) wherever they stand.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from urllib.parse import quote, unquote, urlsplit

MASK = "***"
MIN_SECRET = 4                    # shorter "secrets" (a user name "a") would mask ordinary text
MIN_PREFIX = 8                    # a cut secret: this many of its first characters are enough to mask
# words that make a name a credential's name, as parts of it (api_key, apiKey, X-Api-Key, subscription-key);
# "key" alone (a dict's "key") and plurals ("prompt_tokens") are not
_SECRET_WORDS = {"token", "secret", "password", "passwd", "pwd", "auth", "authorization", "authorisation", "sig",
                 "signature", "cookie", "credential", "credentials", "bearer", "session", "apikey"}
_KEY_PAIRS = {("api", "key"), ("subscription", "key"), ("access", "key"), ("private", "key"), ("secret", "key"),
              ("client", "key"), ("account", "key"), ("hf", "token")}
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s@?#\"'<>]+)@")
_QUERY = re.compile(r"(?P<k>[?&;](?P<name>[A-Za-z0-9_.\-]{1,64})=)(?P<v>[^&#\s\"'<>\\]*)")
_JSON_PAIR = re.compile(r'(?P<k>"(?P<name>[A-Za-z0-9_.\- ]{1,64})"\s*:\s*")(?P<v>(?:[^"\\]|\\.)*)"')
_HEADER = re.compile(r"(?P<k>\b(?P<name>[A-Za-z][A-Za-z0-9-]{0,63}):[ \t]*)(?P<v>[^\s,;\"'<>]{8,})")
# an Authorization value: "Bearer <token>" (any case) or "Basic <base64>"; 8+ characters, so prose ("basic usage")
# is left alone
_SCHEME_VALUE = re.compile(r"\b(?P<s>[Bb]earer|BEARER|Basic)\s+[A-Za-z0-9._~+/=-]{8,}")
# an assignment in any spelling: ``OPENAI_API_KEY=sk-...``, ``api_key: ...``, ``password = ...``, Python's
# ``'api_key': '...'`` (the name may be quoted, the value too); a header's ``X-Api-Key: ...`` is one of them
# -- a value with a letter in it and not a number: a figure (``"bytes_per_token": 4.7e+09``) is no credential
_ASSIGN = re.compile(r"(?P<k>(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z][A-Za-z0-9_.\-]{0,63})['\"]?[ \t]*[=:][ \t]*['\"]?)"
                     r"(?P<v>(?=[^\s'\"&,;<>]*[A-Za-z])[^\s'\"&,;<>]{8,})")
# a command line's ``--api-key VALUE`` / ``--hf-token=VALUE`` (a value with a letter in it, as above)
_FLAG = re.compile(r"(?P<k>(?<![A-Za-z0-9-])--(?P<name>[A-Za-z][A-Za-z0-9-]{1,63})(?:=|[ \t]+))"
                   r"(?P<v>(?=[^\s'\"]*[A-Za-z])[^\s'\"]{8,})")
# credentials whose issuers give them a shape of their own, wherever they stand (no name beside them): Hugging
# Face (hf_), GitHub (ghp_ gho_ ghu_ ghs_ ghr_, github_pat_), OpenAI / Anthropic (sk-, sk-proj-, sk-ant-), Google
# API keys (AIza), Slack (xoxb- ...), AWS access key ids (AKIA / ASIA)
_TOKEN_SHAPES = re.compile(r"\b(?:hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
                           r"|sk-[A-Za-z0-9_\-]{20,}|AIza[0-9A-Za-z_\-]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}"
                           r"|(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9_\-])")


def secret_name(name: str) -> bool:
    """True when ``name`` (a query parameter, a JSON key, a header, an environment variable) names a
    credential."""
    parts = [w.lower() for w in _NAME_PARTS.findall(name)]
    if any(w in _SECRET_WORDS for w in parts):
        return True
    if parts == ["key"] or parts[-1:] == ["key"] and len(parts) <= 3 and parts[0] in ("x", "api", "subscription"):
        return True
    return any(pair in _KEY_PAIRS for pair in zip(parts, parts[1:]))


def _harmless(value: str) -> bool:
    """The run line's ``api_key: "from TOKSPEED_API_KEY"`` (where the key came from) is not a credential."""
    return value.startswith("from ") or value in ("none", "", MASK)


def spellings(secret: str) -> set[str]:
    """The ways ``secret`` appears in text: raw, percent-encoded, JSON-escaped (with ``\\/``), base64."""
    out = {secret, quote(secret, safe=""), quote(secret), quote(secret, safe="").replace("%20", "+")}
    esc = json.dumps(secret)[1:-1]
    out |= {esc, esc.replace("/", "\\/"), json.dumps(secret, ensure_ascii=False)[1:-1]}
    out.add(base64.b64encode(secret.encode()).decode())
    return {s for s in out if len(s) >= MIN_SECRET}


class Redactor:
    def __init__(self, secrets=()):
        self._secrets: list[str] = []
        self.add(*secrets)

    def add(self, *secrets) -> None:
        found = set(self._secrets)
        for s in secrets:
            if isinstance(s, str) and len(s) >= MIN_SECRET:
                found |= spellings(s)
        self._secrets = sorted(found, key=len, reverse=True)

    @classmethod
    def for_run(cls, url: str | None = None, api_key: str | None = None) -> "Redactor":
        """The key, and the user/password of ``url`` (plain and as Basic credentials); also remembered by the
        process's writers (``remember``)."""
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
            secrets.append(base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode())
        remember(*secrets)
        return cls(secrets)

    def _known(self, value: str) -> str:
        for s in self._secrets:
            if s in value:
                value = value.replace(s, MASK)
        for s in self._secrets:                  # what is left of a cut secret: its longest prefix of 8+
            if len(s) > MIN_PREFIX and s[:MIN_PREFIX] in value:
                value = _mask_prefixes(value, s)
        return value

    def text(self, value: str) -> str:
        value = self._known(str(value))
        value = _USERINFO.sub(lambda m: m["scheme"] + MASK + "@", value)
        named = lambda m: m["k"] + MASK if secret_name(m["name"]) and not _harmless(m["v"]) else m.group()  # noqa: E731
        value = _QUERY.sub(lambda m: m["k"] + MASK if m["name"].lower() == "code" else named(m), value)  # OAuth ?code=
        value = _JSON_PAIR.sub(lambda m: (m["k"] + MASK + '"') if secret_name(m["name"]) and not _harmless(m["v"])
                               else m.group(), value)
        value = _HEADER.sub(named, value)
        value = _ASSIGN.sub(lambda m: m.group() if _number(m["v"]) else named(m), value)
        value = _FLAG.sub(lambda m: m.group() if _number(m["v"]) else named(m), value)
        value = _TOKEN_SHAPES.sub(MASK, value)
        return _SCHEME_VALUE.sub(lambda m: m["s"] + " " + MASK, value)

    def obj(self, value):
        """``value`` (dicts, lists, strings, numbers) with every string redacted and every credential-named
        entry masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: (MASK if isinstance(k, str) and secret_name(k) and isinstance(v, str) and not _harmless(v)
                        else self.obj(v)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value


def _number(text: str) -> bool:
    """Whether ``text`` is a number (``1.2e-05``, ``inf``): a count or a figure, never a credential."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _mask_prefixes(value: str, secret: str) -> str:
    """Every run of ``value`` that is a prefix of ``secret`` of MIN_PREFIX characters or more, masked."""
    out, i, head = [], 0, secret[:MIN_PREFIX]
    while (j := value.find(head, i)) >= 0:
        n = MIN_PREFIX
        while n < len(secret) and j + n < len(value) and value[j + n] == secret[n]:
            n += 1
        out.append(value[i:j] + MASK)
        i = j + n
    out.append(value[i:])
    return "".join(out)


PLAIN = Redactor()                 # credentials nobody told us about (a run file someone sent)
_KNOWN = Redactor()
_LOCK = threading.Lock()
_ENV_READ = False


def remember(*secrets) -> None:
    """Secrets every writer of this process masks from now on."""
    with _LOCK:
        _KNOWN.add(*secrets)


def known() -> Redactor:
    """The process's redactor: what it was told (``remember``) and the credentials in its environment."""
    global _ENV_READ
    if not _ENV_READ:
        with _LOCK:
            _ENV_READ = True
            _KNOWN.add(*(v for k, v in os.environ.items() if env_credential(k, v)))
    return _KNOWN


_NOT_A_VALUE = {"path", "file", "dir", "home", "sock", "socket", "url", "endpoint", "host", "port", "mode", "level",
                "timeout", "enabled", "disable", "parallelism"}


def env_credential(name: str, value: str) -> bool:
    """An environment variable that holds a credential: its name says so (``HF_TOKEN``, ``OPENAI_API_KEY``),
    its last word is not where one is kept (``HF_TOKEN_PATH``, ``SSH_AUTH_SOCK``) and its value is not a path."""
    parts = [w.lower() for w in _NAME_PARTS.findall(name)]
    return (secret_name(name) and len(value) >= MIN_PREFIX and not (parts and parts[-1] in _NOT_A_VALUE)
            and not value.startswith(("/", "~", "./")))
