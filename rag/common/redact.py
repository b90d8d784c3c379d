"""Keep secrets out of every message: the one place where errors become text for people.

    redact("Illegal header value b'Bearer tok-SECRET\\n'")  ->  "... b'Bearer [redacted]\\n'"

Secrets are the values of the environment variables the settings name (the LLM and embedding
API keys, CHROMA_AUTH_TOKEN, every value in CHROMA_HEADERS), any variable whose name says it
holds a key, token, secret or password, the user name, password and query of the configured
server URLs (`llm.base_url`, `embedding.base_url`), and the `user:password@` part of any URL.
They are replaced in the text as written, in their repr() form (a library may print b'...\\n')
and stripped of surrounding space.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

from rag.settings import Settings

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|HEADERS?)$", re.I)
# scheme://user[:password]@host -> scheme://host (also inside longer text). Up to the last `@`
# of the URL: a password may hold a `/`, `?` or `#` that was not percent-encoded.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s'\"<>]*@")
_MIN_SECRET = 4  # shorter values ("1", "yes") would blank out ordinary words
PATH_SECRET = 8  # a piece of a server URL's path this long may be a key (`/sk-…/v1`)


def secret_names(settings: Settings | None = None) -> set[str]:
    """Environment variables whose values are secrets."""
    names = {name for name in os.environ if _SECRET_NAME.search(name)}
    if settings is not None:
        names |= {
            settings.llm.api_key_env,
            settings.embedding.api_key_env,
            settings.store.auth_token_env,
            settings.store.headers_env,
        }
    return names


def secret_values(settings: Settings | None = None) -> list[str]:
    """The secrets in the environment, longest first (so no secret is half replaced)."""
    values: set[str] = set()
    for name in secret_names(settings):
        raw = os.environ.get(name)
        if not raw:
            continue
        values.add(raw)
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):  # CHROMA_HEADERS: each header value is a secret
            values |= {str(v) for v in parsed.values()}
    if settings is not None:
        values |= _url_secrets(settings.llm.base_url) | _url_secrets(settings.embedding.base_url)
    forms: set[str] = set()
    for value in values:
        for form in (value, value.strip(), repr(value)[1:-1], repr(value.strip())[1:-1]):
            if len(form) >= _MIN_SECRET:
                forms.add(form)
    return sorted(forms, key=len, reverse=True)


def _url_secrets(url: str | None) -> set[str]:
    """The user name, password, query values, and the long pieces of the path and `;params`
    of a configured server URL: some gateways take the key in the path (`…/sk-abc123/v1`);
    pieces shorter than `PATH_SECRET` (`v1`, `api`, `openai`) stay readable."""
    if not url:
        return set()
    try:
        parts = urlsplit(url)
        found = {parts.username or "", parts.password or "", parts.query}
        found |= {value for _, value in parse_qsl(parts.query)}
    except ValueError:
        return set()
    found |= {p for p in re.split(r"[/;=,&]", parts.path) if len(p) >= PATH_SECRET}
    return {form for value in found if value for form in (value, unquote(value))}


def redact(text: str, settings: Settings | None = None) -> str:
    """`text` with every secret and every URL's `user:password@` removed."""
    text = _USERINFO.sub(r"\1", text)
    for value in secret_values(settings):
        text = text.replace(value, REDACTED)
    return text


def display_url(url: str) -> str:
    """`url` as scheme, host and port only, for sidebars and messages.

    Whatever precedes the last `@` may be a password, even past a `/`, `?` or `#` that the
    user did not percent-encode, so all of it goes; the path, `;params`, query and fragment
    may hold a key (`…/sk-abc123/v1`, `?api_key=…`), so they go too.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _USERINFO.sub(r"\1", url).split("/", 1)[0]
    host = re.split(r"[/?#;]", rest.rpartition("@")[2], maxsplit=1)[0]
    return f"{scheme}://{host}"


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def check_header(variable: str, name: str, value: str) -> None:
    """Refuse a header an HTTP client would reject, naming the variable, never the value.

    A token read with `$(cat token.txt)` keeps its newline; the client's error would then
    print the whole header, secret included.
    """
    if not _HEADER_NAME.match(name):
        raise ValueError(f"{variable}: {name!r} is not a valid HTTP header name")
    problem = ""
    if "\n" in value or "\r" in value:
        problem = "a line break (a trailing newline from a file?)"
    elif any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in value):
        problem = "a control character"
    elif value != value.strip():
        problem = "spaces around it"
    elif not value.isascii():
        problem = "characters that are not ASCII"
    if problem:
        where = variable if name == "Authorization" else f"{variable} (header {name})"
        raise ValueError(f"{where} holds {problem}: remove it")
