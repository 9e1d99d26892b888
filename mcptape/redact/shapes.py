"""What a secret looks like: provider token shapes, secret-named fields, placeholders, thresholds.

Plain data and small pure predicates; the engine (engine.py) compiles them into detectors.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from mcptape.placeholders import ESCAPED_PLACEHOLDER_RE, PLACEHOLDER_RE

# --------------------------------------------------------------------------------------------
# constants and small pure helpers

TAG_KEY = b"mcptape/redact/v1"
TAG_MIN_BITS = 64.0
KNOWN_MIN_LEN = 6
ENTROPY_MIN_LEN = 8
ENTROPY_MIN_BITS_PER_CHAR = 3.0
ALWAYS_MIN_LEN = 4
B64_MIN_RUN = 24
MAX_DEPTH = 2

_COMMON_USER_NAMES_TEXT = """root runner ci admin administrator user users ubuntu debian centos fedora alpine
    ec2-user node app build builder jenkins gitlab-runner circleci travis vagrant docker www www-data
    nobody daemon test tester dev developer guest default system service worker deploy git home data
    mcp server client local host main master"""
COMMON_USER_NAMES = frozenset(_COMMON_USER_NAMES_TEXT.split())
_IGNORABLE_KNOWN = frozenset({"true", "false", "yes", "no", "null", "none", "on", "off", "localhost"})
_PLACEHOLDER_VALUES = frozenset({"", "null", "none", "redacted", "<redacted>", "xxx", "xxxx", "changeme"})

_VAR_REF = re.compile(r"\$\{\{[^}]{0,200}\}\}|\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-[^}]*)?\}|\$[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_PLAIN_PATH_OR_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|/|\./|~/)[^\s?#@]*")


def shannon(value: str) -> float:
    """Shannon entropy of the value's own character distribution, in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def high_entropy(value: str) -> bool:
    """The rule for values under token-like names (see module docstring)."""
    return len(value) >= ENTROPY_MIN_LEN and shannon(value) >= ENTROPY_MIN_BITS_PER_CHAR


def allowed_value(value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if v in allow or v.lower() in _PLACEHOLDER_VALUES:
        return True
    rest = PLACEHOLDER_RE.sub("", _VAR_REF.sub("", v))
    if "&" in rest or "\\u" in rest:
        rest = ESCAPED_PLACEHOLDER_RE.sub("", rest)
    return not rest.strip(" \t\"'*.-_•")


def mask_escaped_placeholders(text: str) -> str:
    """`text` with each escaped placeholder blanked out (same length), for splitting on `;` and `=`."""
    if "&" not in text and "\\u" not in text:
        return text
    return ESCAPED_PLACEHOLDER_RE.sub(lambda m: "\0" * len(m.group(0)), text)


# Secret-named fields. Names are normalized: camelCase -> snake_case, lower, '-' -> '_'.
ALWAYS_NAMES = (
    "password", "passwd", "passphrase", "secret", "client_secret", "secret_key", "secret_access_key",
    "private_key", "cookie", "set_cookie", "authorization", "proxy_authorization",
)  # fmt: skip
ENTROPY_NAMES = (
    "token", "access_token", "refresh_token", "id_token", "auth_token", "session_token", "security_token",
    "api_key", "apikey", "access_key", "session_id", "sessionid", "credential", "credentials", "signature",
)  # fmt: skip
_EXCLUDED_NAMES = frozenset({"progress_token", "page_token", "next_page_token", "next_token", "cursor"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _normalize_name(name: str) -> str:
    return _CAMEL.sub("_", name.strip().lstrip("-$")).lower().replace("-", "_").replace(".", "_")


@functools.lru_cache(maxsize=4096)
def name_class(name: str) -> tuple[str, str] | None:
    """('always' | 'entropy', kind) if a field of this name holds secrets, else None."""
    if len(name) > 64:
        return None
    norm = _normalize_name(name)
    if not norm or norm in _EXCLUDED_NAMES:
        return None
    for cls, base in _NAMES_LONGEST_FIRST:  # `access_token` names the kind, not its suffix `token`
        if norm == base or norm.endswith("_" + base):
            return cls, base.replace("_", "-")
    return None


_NAMES_LONGEST_FIRST = sorted(
    [("always", n) for n in ALWAYS_NAMES] + [("entropy", n) for n in ENTROPY_NAMES],
    key=lambda cn: -len(cn[1]),
)


def field_is_secret(cls: str, value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if allowed_value(v, allow) or v.lower() in _IGNORABLE_KNOWN:
        return False
    if cls == "always":
        return len(v) >= ALWAYS_MIN_LEN
    return high_entropy(v)


# --------------------------------------------------------------------------------------------
# token shapes


@dataclass(frozen=True)
class Shape:
    """One provider token shape; a `(?P<secret>...)` group marks the secret part (else the whole match).

    Most shapes start with a literal (`triggers`). A shape with no literal prefix (a Twilio key is
    `SK` + hex, a Discord bot token base64 of a number) gives the characters it may start with in
    `run_first` instead: it is tried where a base64-alphabet run of B64_MIN_RUN+ characters starts
    with one of them (`_b64_runs`, found with bytes.translate, so prose pays nothing for it).
    """

    kind: str
    pattern: str
    triggers: tuple[str, ...]  # lowercase literals, one of which starts every match (":// " is special)
    check: Callable[[str], bool] | None = None
    run_first: str = ""


def _has_digit_and_letter(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _basic_payload(v: str) -> bool:
    try:
        raw = base64.b64decode(v + "=" * (-len(v) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw


def _discord_bot_token(v: str) -> bool:
    """A Discord bot token's first part is the bot's numeric id in base64: a cheap, telling check."""
    head = v.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.isdigit()


_END = r"(?![A-Za-z0-9_\-])"
SHAPES: tuple[Shape, ...] = (
    Shape("github-token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,255}" + _END, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Shape("github-pat", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,255}" + _END, ("github_pat_",)),
    Shape("anthropic-key", r"(?<![A-Za-z0-9_])sk-ant-[A-Za-z0-9_\-]{20,}" + _END, ("sk-ant-",)),
    Shape(
        "openai-key",
        r"(?<![A-Za-z0-9_\-])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{20,})" + _END,
        ("sk-",),
    ),
    Shape("aws-access-key-id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])", ("akia", "asia", "abia", "acca")),
    Shape("slack-token", r"(?<![A-Za-z0-9_])(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})" + _END, ("xox", "xapp-")),
    Shape("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]{20,}", ("https://hooks.slack.",)),
    Shape("google-api-key", r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_\-]{35}" + _END, ("aiza",)),
    Shape("stripe-key", r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _END, ("sk_live_", "sk_test_", "rk_live_", "rk_test_")),
    Shape("stripe-webhook-secret", r"(?<![A-Za-z0-9_])whsec_[A-Za-z0-9]{24,}" + _END, ("whsec_",)),
    Shape("gitlab-token", r"(?<![A-Za-z0-9_])gl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{20,}" + _END, ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-")),
    Shape("npm-token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}" + _END, ("npm_",)),
    Shape("pypi-token", r"(?<![A-Za-z0-9_])pypi-AgE[A-Za-z0-9_\-]{50,}" + _END, ("pypi-age",)),
    Shape("huggingface-token", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}" + _END, ("hf_",)),
    Shape("jwt", r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*" + _END, ("eyj",)),
    Shape(
        "bearer-token",
        r"(?i:(?<![A-Za-z0-9])bearer)\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)(?![A-Za-z0-9._~+/=\-])",
        ("bearer",),
        _has_digit_and_letter,
    ),
    Shape(
        "basic-auth",
        r"(?i:(?<![A-Za-z0-9])basic)\s+(?P<secret>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",
        ("basic",),
        _basic_payload,
    ),
    # Shapes from gitleaks' rules (cmd/generate/config/rules/*.go in gitleaks/gitleaks): the ones
    # users of MCP servers meet in tool results and server logs.
    Shape(
        "azure-storage-key",  # AccountKey= in storage connection strings, SharedAccessKey= (Service Bus, Event Hubs)
        r"(?<![A-Za-z0-9])(?i:accountkey|sharedaccesskey)=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/=])",
        ("accountkey=", "sharedaccesskey="),
    ),
    Shape("twilio-api-key", r"(?<![A-Za-z0-9_\-])SK[0-9a-fA-F]{32}" + _END, (), _has_digit_and_letter, run_first="S"),
    Shape("sendgrid-api-key", r"(?<![A-Za-z0-9_\-])SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END, ("sg.",)),
    Shape(
        "discord-bot-token",
        r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + _END,
        (),
        _discord_bot_token,
        run_first="MNO",
    ),
    Shape("digitalocean-token", r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}" + _END, ("dop_v1_", "doo_v1_", "dor_v1_")),
    Shape("databricks-token", r"(?<![A-Za-z0-9_])dapi[a-h0-9]{32}(?:-\d)?" + _END, ("dapi",)),
    Shape(
        # postgres://, mysql://, mongodb(+srv)://, redis:// and any other scheme. A password may
        # hold a raw `@` (urllib and the database drivers take the *last* `@` of the authority,
        # which ends at the first `/`, `?` or `#`), so the secret runs to that last `@`.
        "url-password",
        r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^/\s:@\"'<>\\]{0,128}:"
        r"(?P<secret>[^/?#\s\"'<>\\]{1,256})@",
        ("://",),
    ),
)

def plain_value(value: str) -> bool:
    """A value no name makes a secret: true/false/null, a number, a path or URL without credentials."""
    v = value.strip()
    return (
        v.lower() in _IGNORABLE_KNOWN
        or bool(_NUMBER.fullmatch(v))
        or (bool(_PLAIN_PATH_OR_URL.fullmatch(v)) and "@" not in v)
    )


