"""Which values mcptape hands a server are secrets: one rule for the config, rec's argv and environment.

`secret_reason` decides for `env:`, `headers:`, `command:`/`start:` and `url:` of mcptape.yml
(config/secrets.py), rec's command line and environment (record/stdio.py) and the request headers
`rec --listen` forwards (record/http.py). The values it picks become the Redactor's `known`
secrets; every other value is configuration and is never scrubbed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote

from mcptape.redact.detectors import Engine, EngineConfig, Sink, known_parts
from mcptape.redact.own_text import own_text
from mcptape.redact.shapes import (  # noqa: F401 (name_words, SECRET_HEADERS: this module's public face too)
    KNOWN_MIN_LEN,
    SECRET_HEADERS,
    SHAPES,
    allowed_value,
    name_words,
    plain_value,
    secret_name,
    shannon,
)

# --------------------------------------------------------------------------------------------
# what is a secret in the config and on the command line
#
# One rule for every value mcptape hands a server: `env:`, `headers:`, `command:`/`start:` and
# `url:` in mcptape.yml (config/secrets.py), rec's argv and environment (record/stdio.py), and the request
# headers `rec --listen` forwards (record/http.py). The values it picks become the Redactor's
# `known` secrets; every other value is configuration and is never scrubbed.

_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~]+")
TOKEN_LIKE_MIN_LEN = 24
TOKEN_LIKE_MIN_BITS_PER_CHAR = 4.0


def token_like(value: str) -> bool:
    """A value that looks random whatever its name: 24+ token characters, upper and lower case and
    digits, and 4.0+ bits of entropy per character.

    Random 24-character tokens score 4.0-4.5 (95% of them clear the bar); the mixed-case
    identifiers, versions and paths of ordinary configuration (`ProductionDatabaseV2Primary`,
    `gpt-4o-mini-2024-07-18`, `/srv/App2/data.json`) fall short or have a single case. Hex
    digests and UUIDs are identifiers and are left to names (`WEBHOOK_SECRET: 6da8...`).
    """
    v = value.strip()
    if len(v) < TOKEN_LIKE_MIN_LEN or not _TOKEN_CHARS.fullmatch(v):
        return False
    if "/" in v and ("." in v or v.startswith(("/", "~"))):
        return False  # a path, not base64
    if not (any(c.isupper() for c in v) and any(c.islower() for c in v) and any(c.isdigit() for c in v)):
        return False
    return shannon(v) >= TOKEN_LIKE_MIN_BITS_PER_CHAR


_shape_engine: Engine | None = None


def _shape_of(value: str) -> str | None:
    """The kind of token shape (SHAPES, PEM key, URL password, `Bearer x`, `key=value`) the value holds."""
    global _shape_engine
    if _shape_engine is None:
        _shape_engine = Engine(
            EngineConfig(known={}, patterns=[], allow=frozenset(), home=None, user=None, decode=True, salt=b""),
            SHAPES,
            # rec reads its argv before it forks its writer, and the rule set's Go runtime does not
            # survive a fork (rules.py). A token only the rules know is still a known secret here:
            # token_like finds it by its randomness; the redactor finds it in the traffic.
            rules=False,
        )
    sink = Sink(lambda kind, value, path, named: None)
    if _shape_engine.text(value, 0, sink) == value:
        return None
    return sink.last_kind or "secret"


def secret_reason(
    name: str, value: str, *, header: bool = False, marked: bool = False, allow: Iterable[str] = ()
) -> str | None:
    """Why the value a server gets under `name` is a secret, or None if it is configuration.

    In order: the exact values in `allow` (`redact.allow`) and `${VAR}` references never are; a
    value the user marks (`redact.env`, `redact.headers`) is; so is one with a token shape, a URL
    password or a PEM key inside, one sent in a credential header, one whose name says so
    (`secret_name`; unless the value is plainly not a secret: true, 8080, a path), and one that
    looks random (`token_like`). `MODE: result`, `APP_ENV: production`, `AUTHOR_NAME: Alice Smith`
    are none of these.
    """
    v = value.strip()
    if not v or allowed_value(v, frozenset(allow)):
        return None
    if marked:
        return "redact.env or redact.headers marks it"
    shape = _shape_of(v)
    if shape is not None:
        return f"it has a token shape ({shape})"
    if header and (name.strip().lower() in SECRET_HEADERS or secret_name(name)):
        return f"it is sent in the {name} header"
    if secret_name(name) and not plain_value(v):
        return "its name says so"
    if token_like(v):
        return "it looks random (high entropy)"
    return None


_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^/?#\s]+)@")
_URL_QUERY_PARAM = re.compile(r"([?&])([^=&#\s]+)=([^&#\s]+)")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)


def argv_secrets(argv: Sequence[str], placeholder: str = "<redacted>") -> tuple[list[str], dict[str, str]]:
    """The command with secret values replaced by `placeholder`, and the values (source -> value).

    `--token=X` and `--api-key X` (by the flag's name, secret_reason), `API_KEY=X` (as `env`
    takes it), `scheme://user:pass@host` and secret-named query parameters in URLs, and any other
    argument that looks random. `-p X` never: a one-letter flag says nothing. A token-shaped
    argument (`ghp_...`) stays for the redactor, which finds it anywhere and names its kind.
    Plain values stay under any flag (`--key-file ./k.pem`, `--password-file`, `--token-url https://...`).
    """
    clean: list[str] = []
    found: dict[str, str] = {}
    flag: str | None = None  # the secret-named flag whose value comes next
    for arg in argv:
        if flag is not None:
            if arg.startswith("-") and len(arg) > 1:
                flag = None  # a flag without a value; look at this one normally
            else:
                if secret_reason(flag, arg):
                    found[f"argv.{flag}"] = arg
                    clean.append(placeholder)
                else:
                    clean.append(arg)
                flag = None
                continue
        if arg.startswith("-") and len(arg) > 1:
            name, eq, value = arg.partition("=")
            if secret_name(name):
                if not eq:
                    flag = name
                    clean.append(arg)
                elif value and secret_reason(name, value):
                    found[f"argv.{name}"] = value
                    clean.append(f"{name}={placeholder}")
                else:
                    clean.append(arg)
                continue
            if eq and value and _random_unshaped(value):
                found[f"argv.{name}"] = value
                clean.append(f"{name}={placeholder}")
                continue
            clean.append(_url_secrets(arg, found, placeholder))
            continue
        m = _ASSIGNMENT.fullmatch(arg)
        if m and m.group(2) and secret_reason(m.group(1), m.group(2)):
            found[f"argv.{m.group(1)}"] = m.group(2)
            clean.append(f"{m.group(1)}={placeholder}")
            continue
        stripped = _url_secrets(arg, found, placeholder)
        if stripped == arg and not m and _random_unshaped(arg):
            found[f"argv.{len(clean)}"] = arg
            stripped = placeholder
        clean.append(stripped)
    return clean, found


def _random_unshaped(value: str) -> bool:
    """A random-looking value with no token shape: only knowing it finds it in the traffic. (A
    shaped token is left in place: the redactor finds it anywhere and names its kind.)"""
    return token_like(value) and _shape_of(value) is None


def _url_secrets(arg: str, found: dict[str, str], placeholder: str) -> str:
    """`arg` with URL passwords and secret query parameters replaced; the values go to `found`."""
    if "://" not in arg and "?" not in arg:
        return arg

    def userinfo(m: re.Match[str]) -> str:
        found[f"argv.url-password.{len(found)}"] = m.group("pw")
        return f"{m.group('scheme')}{m.group('user')}:{placeholder}@"

    def query(m: re.Match[str]) -> str:
        if not secret_reason(unquote(m.group(2)), unquote(m.group(3))):
            return m.group(0)
        found[f"argv.url-query.{len(found)}"] = m.group(3)
        return f"{m.group(1)}{m.group(2)}={placeholder}"

    return _URL_QUERY_PARAM.sub(query, _URL_USERINFO.sub(userinfo, arg))


def env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The secrets of an environment a server inherits (rec's), by secret_reason: `env.NAME` -> value."""
    return {f"env.{k}": v for k, v in env.items() if secret_reason(k, v)}


def command_secrets(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """The known secrets of a command run in `env` (rec's, play --fallback's, an error message's):
    the command line's (`argv.*`) and the environment's (`env.*`)."""
    return {**argv_secrets(argv)[1], **env_secrets(env)}


def own_text_secrets(known: Mapping[str, str], extra: Iterable[str] = (), allow: Iterable[str] = ()) -> list[str]:
    """The sources of known secrets that are (or hold a part that is) mcptape's own text: they
    cannot be scrubbed without rewriting tapes and reports, so the Redactor leaves them out and
    config/secrets.py refuses them. `extra` adds the config's own names (sessions, servers, golden_dir)."""
    words = tuple(extra)
    allowed = frozenset(allow)
    out = []
    for source, value in known.items():
        for _, part in known_parts(source, value):
            p = part.strip()
            if len(p) < KNOWN_MIN_LEN or allowed_value(p, allowed) or plain_value(p):
                continue
            if own_text(p, words):
                out.append(source)
                break
    return out


