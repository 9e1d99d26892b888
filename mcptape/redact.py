"""Secret redaction: the single choke point every byte passes before mcptape writes or shows it.

Owns what counts as a secret and how it is replaced: tapes (events, header, footer), reports,
terminal and markdown text and error messages all go through a `Redactor`, then `verify`
scans the finished output again and raises `SecretLeak` (exit 4) if anything survived.
It leaves *where* output goes to the writers (record/, ci.py, github.py, report/): they call
`redact_*`/`guard`, then `verify` on the exact bytes, and write nothing when it raises.

Detectors, in the order they win on overlapping text:

1. Known values (`known`: source name -> value): the secrets among what the config hands a
   server, or rec's command line and environment, chosen by one rule (`secret_reason`, in the
   last section: by name, shape, entropy, header, or because the user marks them; `MODE:
   result` is configuration, not a secret). Found in every form we can predict: raw,
   URL-encoded (quote / quote_plus, upper and lower hex), JSON-escaped (plain and `\\uXXXX`),
   HTML/XML-escaped, and base64 (standard and urlsafe) at all three byte alignments, so a value
   embedded in a longer blob such as `Basic base64(user:value)` is found without decoding.
   Named after their source: `<REDACTED:env.CALC_TOKEN>`. Values that cannot be told from
   ordinary text are skipped (see `_ignorable_known`): shorter than 6 characters,
   booleans/null, plain numbers, values the user allows, credential-free paths and URLs, and
   values inside mcptape's own text (`own_text`: JSON keys, method names, report words), which
   config/secrets.py refuses outright.
2. Token shapes of common providers (`SHAPES`): GitHub classic and fine-grained, OpenAI,
   Anthropic, AWS access key ids (and a 40-char secret key near one), Slack tokens and
   webhooks, Google API keys, Stripe secret/restricted keys and webhook secrets (publishable
   `pk_` keys are public by design and stay), GitLab, npm, PyPI, Hugging Face, Azure storage
   `AccountKey=`/`SharedAccessKey=`, Twilio `SK...`, SendGrid `SG.x.y`, Discord bot tokens,
   DigitalOcean `do?_v1_`, Databricks `dapi...`, JWTs, whole PEM private key blocks (also as
   escaped JSON text, a GCP service-account key, and when printed line by line on stderr),
   `Authorization: Bearer|Basic` values, and `user:pass@` in URLs (postgres, mysql, mongodb,
   redis, any scheme).
3. Secret-named fields (`_name_class`): for `password`, `secret`, `client_secret`,
   `private_key`, `authorization`, `cookie`, ... any value of 4+ characters is a secret; for
   `token`, `api_key`, `access_token`, `session_id`, ... a value is a secret when it has at
   least 8 characters and a Shannon entropy of at least 3.0 bits per character (random tokens
   score 4-6, words and ISO timestamps under 3). The same rule covers JSON keys, `key=value`
   and `key: value` in text, URL query strings and `--flag value` pairs in argv lists.
   `progressToken` and friends (MCP protocol fields, not credentials) are excluded. This is the
   rule for what a *server* writes; the values mcptape hands a server are judged by
   `secret_reason` (last section), whose `secret_name` reads a name as words.
4. User patterns (`redact.patterns`), kind `pattern`.
5. Who recorded: the home directory becomes `<HOME>` (only as a whole path component), the user
   name becomes `<USER>` as a whole word, case-insensitively, unless it is shorter than 4
   characters or a common account/word name (`COMMON_USER_NAMES`: root, runner, ci, admin,
   ...), which would over-redact ordinary text and identifies nobody.

Decoding (on by default; `decode=False` exists for the benchmark): after the direct pass, runs
of base64 alphabet (24+ chars, mixed case) that decode to mostly printable UTF-8, percent-encoded
runs and JSON `\\uXXXX`-escaped runs are decoded and scanned again, two levels deep. A secret
inside a base64 blob replaces the whole blob; inside percent/`\\u` runs only the secret is
replaced and the rest re-encoded. Allowlisted and never redacted: our own placeholders (also as
XML, HTML and JSON escape them: `&lt;REDACTED:x&gt;` is no URL password), `${{ secrets.X }}`,
`$VAR`/`${VAR}` references and the exact values in `allow`.

Placeholders are `<REDACTED:kind#tag>`. The tag is not an ordinal (removing one secret would
renumber every later one into false drift) but the first 32 bits of HMAC-SHA256 of the value,
keyed with a fixed project constant plus an optional `salt`. The key is public, so the tag is
only given to values whose estimated entropy (length x Shannon bits/char) is at least 64 bits:
then 2**32 or more candidate values share each tag, so it confirms no guess and cannot be
reversed. Lower-entropy values (a `password: hunter22`) get no tag at all, never an unkeyed or
brute-forceable hash; known values need none (their source names them). The same secret gets
the same placeholder in every tape and run; a rotated token gets a new tag, so comparisons
should treat tags as identities within a tape (`PLACEHOLDER_RE`, `strip_tags`).

Speed: Python's regex engine crawls on a many-branch alternation, so each detector starts with
a lowercase literal (its trigger); `str.find` locates triggers and the combined regex is only
matched, anchored, there. The few shapes without a literal prefix (Twilio, Discord) are tried
only where a base64-alphabet run starts with one of their first characters (`Shape.run_first`). A whole tape line is first put to `_Engine.could_match`, a superset
test (no trigger in its lowercase, plain or JSON-escaped; no encoded run; no user patterns
configured, since a pattern may be anchored to a field's value): a line it clears is not walked
at all, by the scrubber nor by `verify`. Short clean strings (JSON keys) are cached.

Fail closed: redaction and verification use two separately built detector engines, so a
scrubber that misses a kind (a bug, or a fault injected in a test) is still caught by
`verify`, whose messages name the place and kind, never the value.
"""

from __future__ import annotations

import base64
import binascii
import functools
import getpass
import hashlib
import hmac
import html
import json
import math
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote

from mcptape.errors import SecretLeak

# --------------------------------------------------------------------------------------------
# constants and small pure helpers

PLACEHOLDER_RE = re.compile(r"<REDACTED:[A-Za-z0-9_.:@\-]{1,120}(?:#[0-9a-f]{8})?>|<HOME>|<USER>")
# Our placeholders as report formats escape them: XML and HTML (JUnit, the markdown's <summary>
# lines) write `&lt;REDACTED:x&gt;`, HTML-safe JSON `\u003cREDACTED:x\u003e`. Escaped, a placeholder
# is still ours: `&` and `;` could otherwise read as a URL password or a cookie value.
_ESCAPED_PLACEHOLDER_RE = re.compile(
    r"(?:&lt;|&#0*60;|&#[xX]0*3[cC];|\\u003[cC])(?:REDACTED:[A-Za-z0-9_.:@\-]{1,120}(?:#[0-9a-f]{8})?|HOME|USER)"
    r"(?:&gt;|&#0*62;|&#[xX]0*3[eE];|\\u003[eE])"
)
_TAG_KEY = b"mcptape/redact/v1"
_TAG_MIN_BITS = 64.0
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


def strip_tags(text: str) -> str:
    """Text with placeholder tags removed (`<REDACTED:x#1a2b3c4d>` -> `<REDACTED:x>`), for comparisons
    that must not call a rotated token drift."""
    return re.sub(r"(<REDACTED:[^<>#\s]+)#[0-9a-f]{8}>", r"\1>", text)


def _allowed_value(value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if v in allow or v.lower() in _PLACEHOLDER_VALUES:
        return True
    rest = PLACEHOLDER_RE.sub("", _VAR_REF.sub("", v))
    if "&" in rest or "\\u" in rest:
        rest = _ESCAPED_PLACEHOLDER_RE.sub("", rest)
    return not rest.strip(" \t\"'*.-_•")


def _mask_escaped_placeholders(text: str) -> str:
    """`text` with each escaped placeholder blanked out (same length), for splitting on `;` and `=`."""
    if "&" not in text and "\\u" not in text:
        return text
    return _ESCAPED_PLACEHOLDER_RE.sub(lambda m: "\0" * len(m.group(0)), text)


# Secret-named fields. Names are normalized: camelCase -> snake_case, lower, '-' -> '_'.
_ALWAYS_NAMES = (
    "password", "passwd", "passphrase", "secret", "client_secret", "secret_key", "secret_access_key",
    "private_key", "cookie", "set_cookie", "authorization", "proxy_authorization",
)  # fmt: skip
_ENTROPY_NAMES = (
    "token", "access_token", "refresh_token", "id_token", "auth_token", "session_token", "security_token",
    "api_key", "apikey", "access_key", "session_id", "sessionid", "credential", "credentials", "signature",
)  # fmt: skip
_EXCLUDED_NAMES = frozenset({"progress_token", "page_token", "next_page_token", "next_token", "cursor"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _normalize_name(name: str) -> str:
    return _CAMEL.sub("_", name.strip().lstrip("-$")).lower().replace("-", "_").replace(".", "_")


@functools.lru_cache(maxsize=4096)
def _name_class(name: str) -> tuple[str, str] | None:
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
    [("always", n) for n in _ALWAYS_NAMES] + [("entropy", n) for n in _ENTROPY_NAMES],
    key=lambda cn: -len(cn[1]),
)


def _field_is_secret(cls: str, value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if _allowed_value(v, allow) or v.lower() in _IGNORABLE_KNOWN:
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
_PEM = (
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,65536}?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|[\s\S]{0,65536}$)"
)
_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"\s*(?:[A-Za-z0-9+/=]{1,128})?\s*|\s*[A-Za-z\-]+:.*")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = 200

# Names that trigger the key=value / key: value rule in text; the full key is then classified
# by _name_class, so this only has to be a superset of its names.
_KV_NAMES = r"(?i:session[_\-]?id|passphrase|password|passwd|secret|key|token|credentials?|signature|authorization)"
# Where the scan tries the kv branch: a name's last component (the full key is classified by
# walking back from it, so `api_key`, `accessToken` and `DB_PASSWORD` all start from here).
_KV_TRIGGERS = ("session", "passphrase", "passw", "secret", "key", "token", "credential", "signature", "authorization")
_KV = (
    r"(?P<kvk>" + _KV_NAMES + r")(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
    r"(?P<kvv>(?:(?i:bearer|basic|token|digest|bot)[ \t]+)?[^\s\"'\\&,;<>()\[\]{}]+)"
)
_COOKIE = r"(?<![A-Za-z0-9])(?P<ck>(?i:set-cookie|cookie))(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?(?P<ckv>[^\r\n\"\\]+)"
_COOKIE_ATTRS = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority", "partitioned"})
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "bot"})
_AUTH_SCHEME = re.compile(r"(?i)^(bearer|basic|token|digest|bot)\s+(\S.*)$", re.S)

_CLEAN_CACHE_LEN = 96
_CLEAN_CACHE_SIZE = 50_000
# Characters a trigger may be gated on in could_match, the rarer in ordinary text first.
_TRIGGER_GATES = "$<_-\\\"/.:="
_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{" + str(B64_MIN_RUN) + r",}={0,2}")
_B64_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/_-")
_B64_MASK = bytes(ord("a") if chr(i) in _B64_ALPHABET else ord(" ") for i in range(256))
_B64_NEEDLE = b"a" * B64_MIN_RUN


def _gate(trigger: str) -> str:
    """The character of `_TRIGGER_GATES` a trigger is grouped under ("" if it holds none)."""
    return next((c for c in _TRIGGER_GATES if c in trigger), "")


def _has_b64_run(text: str) -> bool:
    """Whether `text` has a run of B64_MIN_RUN base64-alphabet characters (bytes.translate: fast)."""
    return _B64_NEEDLE in text.encode("utf-8", "surrogatepass").translate(_B64_MASK)


def _b64_runs(text: str) -> list[tuple[int, int]]:
    """The spans `_B64_RUN.finditer(text)` finds, found with translate and find: the regex tries
    every position of every shorter word (~75 µs per KB of JSON with hex ids, against ~5)."""
    if not text.isascii():  # byte offsets would not be character offsets
        return [m.span() for m in _B64_RUN.finditer(text)] if _has_b64_run(text) else []
    masked = text.encode("ascii").translate(_B64_MASK)
    runs: list[tuple[int, int]] = []
    pos = 0
    while (start := masked.find(_B64_NEEDLE, pos)) != -1:
        end = masked.find(b" ", start + B64_MIN_RUN)
        if end == -1:
            end = len(masked)
        pos = end
        while pos < len(text) and pos - end < 2 and text[pos] == "=":
            pos += 1  # the run's padding, as `={0,2}` takes it
        runs.append((start, pos))
    return runs


_B64_CHARS = re.compile(r"[A-Za-z0-9+/=_\-]")
_PCT_RUN = re.compile(r"(?:[A-Za-z0-9._~+\-]|%[0-9A-Fa-f]{2})*%[0-9A-Fa-f]{2}(?:[A-Za-z0-9._~+\-]|%[0-9A-Fa-f]{2})*")
_U_RUN = re.compile(r"(?:[A-Za-z0-9._~+/=\-]|\\u[0-9A-Fa-f]{4})*\\u[0-9A-Fa-f]{4}(?:[A-Za-z0-9._~+/=\-]|\\u[0-9A-Fa-f]{4})*")


def _requote(text: str) -> str:
    """Percent-encode scrubbed text again, leaving our placeholders readable."""
    out, last = [], 0
    for m in PLACEHOLDER_RE.finditer(text):
        out += [quote(text[last : m.start()], safe=""), m.group(0)]
        last = m.end()
    out.append(quote(text[last:], safe=""))
    return "".join(out)


# --------------------------------------------------------------------------------------------
# known values


def _ignorable_known(value: str, allow: frozenset[str]) -> bool:
    """Known values that cannot be told apart from ordinary text, or are not secret at all."""
    v = value.strip()
    if len(v) < KNOWN_MIN_LEN or v.lower() in _IGNORABLE_KNOWN or v in allow:
        return True
    if _NUMBER.fullmatch(v) or _allowed_value(v, allow):
        return True
    # A credential-free path or URL (a data directory, a server URL) is configuration, not a
    # secret; a URL with userinfo, a query or a fragment is kept as a secret.
    if _PLAIN_PATH_OR_URL.fullmatch(v) and "@" not in v:
        return True
    # A value inside mcptape's own words would rewrite the tape's structure (config/secrets.py refuses
    # such a secret with a message; rec warns): never a known secret.
    return own_text(v)


def _b64_cores(raw: bytes) -> list[str]:
    """The base64 characters determined by `raw` alone, at each of the three byte alignments."""
    out = []
    n = len(raw)
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode("ascii")
        start, end = -(-8 * k // 6), (8 * (k + n)) // 6
        core = enc[start:end]
        if len(core) >= 8:
            out.append(core)
            url = core.replace("+", "-").replace("/", "_")
            if url != core:
                out.append(url)
    return out


def _json_escaped(text: str) -> str:
    """`text` as it reads inside a JSON string written by jsonrpc.dumps (no quotes around it)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _known_forms(value: str) -> tuple[set[str], set[str]]:
    """(literal forms, base64 cores) under which `value` may appear in output."""
    forms = {value, quote(value, safe=""), quote_plus(value), quote(value, safe="/:")}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), f) for f in list(forms)}
    forms.add(json.dumps(value)[1:-1])
    forms.add(_json_escaped(value))
    forms |= {html.escape(value, quote=False), html.escape(value)}  # JUnit XML, the markdown's HTML
    forms = {f for f in forms if len(f) >= KNOWN_MIN_LEN}
    cores = set(_b64_cores(value.encode("utf-8")))
    return forms, cores - forms


def _known_parts(source: str, value: str) -> list[tuple[str, str]]:
    """The value and the parts of it that are secrets on their own (a header's token, a password)."""
    parts = [(source, value)]
    m = _AUTH_SCHEME.match(value.strip())
    if m:
        token = m.group(2).strip()
        parts.append((source, token))
        if m.group(1).lower() == "basic":
            try:
                decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                decoded = ""
            if ":" in decoded:
                parts += [(source, decoded), (source, decoded.split(":", 1)[1])]
    return parts


# --------------------------------------------------------------------------------------------
# the engine


@dataclass
class _Config:
    """What a Redactor was built with; engines are compiled from it."""

    known: dict[str, str]
    patterns: list[re.Pattern[str]]
    allow: frozenset[str]
    home: str | None
    user: str | None
    decode: bool
    salt: bytes


@dataclass
class Hit:
    start: int
    end: int
    kind: str
    value: str
    named: bool = False  # a known value: placeholder named after its source, no tag


class _Engine:
    """A compiled set of detectors. Redactor holds two, built separately: one scrubs, one verifies."""

    def __init__(self, config: _Config, shapes: Sequence[Shape]) -> None:
        self.config = config
        self.shapes = list(shapes)
        self.pem_open = False
        self._clean: set[str] = set()  # short strings known to hold nothing (a cache, not state)
        self._known_text: dict[str, str] = {}  # literal form -> source
        self._known_core: dict[str, str] = {}  # base64 core -> source
        for source, value in sorted(config.known.items()):
            for src, part in _known_parts(source, value):
                if _ignorable_known(part, config.allow):
                    continue
                forms, cores = _known_forms(part)
                for f in forms:
                    self._known_text.setdefault(f, src)
                for c in cores:
                    self._known_core.setdefault(c, src)
        branches = [r"(?P<skip>" + PLACEHOLDER_RE.pattern + r"|\$\{\{[^}]{0,200}\}\})"]
        self.literals = set(self._known_text) | set(self._known_core)
        literals = sorted(self.literals, key=lambda s: (-len(s), s))
        self._known_rx: re.Pattern[str] | None = None
        if literals:
            alternatives = "|".join(re.escape(lit) for lit in literals)
            self._known_rx = re.compile(alternatives)
            branches.append("(?P<known>" + alternatives + ")")
        branches.append("(?P<pem>" + _PEM + ")")
        run_branches = []
        for i, shape in enumerate(self.shapes):
            pattern = shape.pattern.replace("(?P<secret>", f"(?P<sv{i}>")
            branches.append(f"(?P<s{i}>{pattern})")
            if shape.run_first:
                run_branches.append(f"(?P<s{i}>{pattern})")
        # Shapes without a literal prefix are tried where a run starts with one of their first
        # characters; could_match tests such a run with a regex of just those shapes.
        self._run_first = "".join(sorted({c for shape in self.shapes for c in shape.run_first}))
        self._run_regex = re.compile("|".join(run_branches)) if run_branches else None
        branches.append("(?P<cookie>" + _COOKIE + ")")  # outer groups: lastgroup names the branch
        branches.append("(?P<kv>" + _KV + ")")
        if config.home:
            branches.append("(?P<home>" + re.escape(config.home) + r")(?![A-Za-z0-9_.\-])")
        if config.user:
            branches.append(r"(?<![A-Za-z0-9_])(?P<user>(?i:" + re.escape(config.user) + r"))(?![A-Za-z0-9_])")
        self.regex = re.compile("|".join(branches))
        triggers = {"<redacted:", "<home>", "<user>", "${{", "-----begin", "cookie", *_KV_TRIGGERS}
        for shape in self.shapes:
            triggers.update(t for t in shape.triggers if t != "://")
        triggers.update(lit.lower() for lit in self.literals)
        if config.home:
            triggers.add(config.home.lower())
        if config.user:
            triggers.add(config.user.lower())
        # A trigger that contains another is redundant: the shorter one finds the same places.
        self.triggers = sorted(t for t in triggers if not any(o != t and t.startswith(o) for o in triggers))
        # The triggers as they read inside JSON text: once escaped (a message's strings in a tape
        # line) and twice (a `raw` message inside one). Only a literal holding a quote, a
        # backslash or a control character differs (a known value, a Windows home).
        escaped = {_json_escaped(t) for t in self.triggers}
        escaped |= {_json_escaped(t) for t in escaped}
        json_triggers = sorted(set(self.triggers) | escaped)
        # For could_match, grouped by a character each holds that prose and JSON keys seldom do
        # (`ghp_`, `sk-`, `<redacted:`): a group whose character is absent is passed over with
        # one single-character test instead of a search per literal. The rest ("") always run.
        # A trigger holding another (`accountkey=` holds `key`) can be left out of this test: it
        # is never present where the shorter one is not.
        groups: dict[str, list[str]] = {}
        for t in json_triggers:
            if not any(o != t and o in t for o in json_triggers):
                groups.setdefault(_gate(t), []).append(t)
        self._trigger_groups = tuple((gate, tuple(group)) for gate, group in sorted(groups.items()))
        # scan's candidates come from every trigger (positions matter there), grouped the same way.
        scan_groups: dict[str, list[str]] = {}
        for t in self.triggers:
            scan_groups.setdefault(_gate(t), []).append(t)
        self._scan_groups = tuple((gate, tuple(group)) for gate, group in sorted(scan_groups.items()))
        # MCP's `progressToken` is in most requests of clients that ask for progress (and in the
        # responses echoing them). It holds the trigger `token`, but it is not a secret's name
        # (_EXCLUDED_NAMES), so could_match passes over the exact JSON string `"progressToken"`;
        # unless some other trigger could overlap it (a known value inside it, or one with a quote).
        inside = [t for t in json_triggers if t in "progresstoken"]
        quoted = any('"' in t for t in json_triggers)
        self._harmless = ('"progresstoken"',) if inside == ["token"] and not quoted else ()

    def could_match(self, text: str) -> bool:
        """Cheap superset test: False only if nothing in `text` can be found by this engine, whether
        `text` is scanned as it stands or parsed as JSON and walked (tape lines, JSON reports).

        Every detector starts with one of `triggers` (secret-named fields too: each name holds
        one), so a text whose lowercase holds none of them, plain or JSON-escaped, holds no match;
        a decoder needs an encoded run. Whatever cannot be ruled out this cheaply counts as a
        possible match: `\\u` and `\\/` escapes (they can spell a trigger), user patterns (one
        may be anchored, or match only unescaped text) and a garbage event's `b64` bytes (decoded
        whatever their case). 15–30 µs per KB of clean JSON here; the full walk costs several times that.
        """
        if self.config.patterns or "\\u" in text or "\\/" in text or '"b64"' in text:
            return True
        decode = self.config.decode
        if decode and "%" in text:
            return True
        if decode or self._run_regex is not None:  # before the triggers: an image is ruled in at its first run
            for start, end in _b64_runs(text):
                if self._run_shape_at(text, start):
                    return True
                run = text[start:end]
                if decode and run.lower() != run and run.upper() != run:  # mixed case: could be base64 text
                    return True
        low = text.lower()
        for harmless in self._harmless:
            low = low.replace(harmless, '""')  # quotes: no trigger holds one, so none spans the cut
        if "://" in low and "@" in low:
            return True
        return any(gate in low and any(t in low for t in group) for gate, group in self._trigger_groups)

    def _run_shape_at(self, text: str, start: int) -> bool:
        """Whether a run-started shape (Shape.run_first) matches at `start`, a run's first character."""
        return (
            self._run_regex is not None
            and text[start] in self._run_first
            and self._run_regex.match(text, start) is not None
        )

    # -- text -------------------------------------------------------------------------------

    def scan(self, text: str) -> list[Hit]:
        """Every secret in `text` found by the direct (non-decoding) detectors, merged, in order.

        Python's regex engine is slow on a many-branch alternation (under 1 MB/s on prose), but
        `str.find` on a literal is fast. So every branch starts with a literal (its trigger),
        candidates are the places a trigger occurs in the lowercased text, and the combined
        regex is only *matched* there, anchored.
        """
        low = text.lower()
        if len(low) != len(text):
            return self._scan_everywhere(text)  # lower() changed lengths (rare scripts): no position map
        candidates: set[int] = set()
        for gate, literals in self._scan_groups:
            if gate and gate not in low:
                continue
            for lit in literals:
                i = low.find(lit)
                while i != -1:
                    candidates.add(i)
                    i = low.find(lit, i + 1)
        if "://" in low:  # the url-password branch starts at the scheme, before its trigger
            i = low.find("://")
            while i != -1:
                j = i
                while j > 0 and i - j < 21 and (text[j - 1].isalnum() or text[j - 1] in "+.-"):
                    j -= 1
                candidates.add(j)
                i = low.find("://", i + 1)
        if self._run_first and len(text) >= B64_MIN_RUN:
            candidates.update(start for start, _ in _b64_runs(text) if text[start] in self._run_first)
        hits: list[Hit] = []
        skips: list[tuple[int, int]] = []
        pos = 0
        match = self.regex.match
        for p in sorted(candidates):
            if p < pos:
                continue
            m = match(text, p)
            if m is None:
                continue
            group = m.lastgroup
            found = self._handle(m, group, text)
            if group == "skip":
                skips.append(m.span())
            if found is None:
                continue
            hits.extend(found)
            pos = max(m.end(), p + 1)
        return self._finish(text, hits, skips)

    def _scan_everywhere(self, text: str) -> list[Hit]:
        """The same detectors tried at every position: slow, for text whose lowercase is not 1:1."""
        hits: list[Hit] = []
        skips: list[tuple[int, int]] = []
        pos = 0
        while (m := self.regex.search(text, pos)) is not None:
            group = m.lastgroup
            found = self._handle(m, group, text)
            if group == "skip":
                skips.append(m.span())
            if found is None:
                pos = m.start() + 1  # rejected: other detectors may still start inside it
                continue
            hits.extend(found)
            pos = max(m.end(), m.start() + 1)
        return self._finish(text, hits, skips)

    def _finish(self, text: str, hits: list[Hit], skips: list[tuple[int, int]]) -> list[Hit]:
        cfg = self.config
        for rx in cfg.patterns:
            for m in rx.finditer(text):
                inside_placeholder = any(s < m.end() and m.start() < e for s, e in skips)
                if m.end() > m.start() and not inside_placeholder and not _allowed_value(m.group(0), cfg.allow):
                    hits.append(Hit(m.start(), m.end(), "pattern", m.group(0)))
        if any(h.kind == "aws-access-key-id" for h in hits):
            hits.extend(self._aws_secrets(text, hits))
        return _merge(hits)

    def _handle(self, m: re.Match[str], group: str | None, text: str) -> list[Hit] | None:
        """Hits for one match, or None to reject it (then scanning resumes one character later)."""
        cfg = self.config
        if group == "skip":
            return []
        if group == "known":
            lit = m.group("known")
            if lit in self._known_text:
                return [Hit(m.start(), m.end(), self._known_text[lit], lit, named=True)]
            start, end = m.start(), m.end()  # a base64 core: the whole blob around it goes
            while start > 0 and _B64_CHARS.match(text, start - 1):
                start -= 1
            while end < len(text) and _B64_CHARS.match(text, end):
                end += 1
            return [Hit(start, end, self._known_core[lit], text[start:end], named=True)]
        if group == "pem":
            return [Hit(m.start(), m.end(), "private-key", m.group(0))]
        if group == "home":
            return [Hit(m.start(), m.end(), "home", m.group(0))]
        if group == "user":
            return [Hit(m.start(), m.end(), "user", m.group(0))]
        if group == "cookie":
            return self._cookie(m.start("ckv"), m.group("ckv")) or None
        if group == "kv":
            return self._kv(m, text)
        if group and group.startswith("s"):
            i = int(group[1:])
            shape = self.shapes[i]
            sv = f"sv{i}"
            span = m.span(sv) if sv in m.re.groupindex and m.group(sv) is not None else m.span()
            value = text[span[0] : span[1]]
            if shape.check is not None and not shape.check(value):
                return None
            if _allowed_value(value, cfg.allow):
                return None
            # `Bearer ghp_...`: the token's own shape is the more telling kind.
            kind = self._classify(value, shape.kind) if span != m.span() else shape.kind
            return [self._named(Hit(span[0], span[1], kind, value))]
        return None

    def _named(self, hit: Hit) -> Hit:
        """A hit renamed after its source when its value is, or holds, a known one."""
        source = self._known_text.get(hit.value)
        if source is None and self._known_rx is not None:
            m = self._known_rx.search(hit.value)
            if m:
                source = self._known_text.get(m.group(0)) or self._known_core.get(m.group(0))
        if source:
            return Hit(hit.start, hit.end, source, hit.value, named=True)
        return hit

    def _classify(self, value: str, default: str) -> str:
        for shape in self.shapes:
            if shape.check is None and re.fullmatch(shape.pattern, value):
                return shape.kind
        return default

    def _kv(self, m: re.Match[str], text: str) -> list[Hit] | None:
        start = m.start("kvk")
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
            start -= 1
        cls = _name_class(text[start : m.end("kvk")])
        if cls is None:
            return None
        value = m.group("kvv")
        vstart = m.start("kvv")
        if _PEM_BEGIN.match(text, vstart):
            # `"private_key": "-----BEGIN PRIVATE KEY-----\n...` (a GCP service-account key): the
            # value is the whole block, which the pem branch takes from here to its END line.
            return None
        scheme = _AUTH_SCHEME.match(value)
        if scheme:
            # `Authorization: Bearer x`, `Bot x`: a shape that starts at the scheme or at the token
            # names it (bearer-token, basic-auth, discord-bot-token); each is tested by that kind.
            if self._shape_at(text, vstart) or self._shape_at(text, vstart + scheme.start(2)):
                return None
            vstart += scheme.start(2)
            value = scheme.group(2)
        elif value.lower() in _SCHEMES:
            return None  # `Authorization: Bearer <REDACTED:...>`: the scheme word alone is no secret
        if not _field_is_secret(cls[0], value, self.config.allow):
            return None
        return [self._named(Hit(vstart, vstart + len(value), self._classify(value, cls[1]), value))]

    def _shape_at(self, text: str, pos: int) -> bool:
        """Whether a token shape (or a known value) starts at `pos` and accepts what it matches."""
        m = self.regex.match(text, pos)
        group = m.lastgroup if m is not None else None
        if m is None or group is None or not (group == "known" or (group.startswith("s") and group[1:].isdigit())):
            return False
        return bool(self._handle(m, group, text))

    def _cookie(self, offset: int, value: str) -> list[Hit]:
        hits = []
        for pm in re.finditer(r"([^=;\s]+)=([^;]*)", _mask_escaped_placeholders(value)):
            name, val = pm.group(1), value[pm.start(2) : pm.end(2)].strip()
            if name.lower() in _COOKIE_ATTRS or not val or _allowed_value(val, self.config.allow):
                continue
            if len(val) >= ALWAYS_MIN_LEN:
                s = offset + pm.start(2) + (len(pm.group(2)) - len(pm.group(2).lstrip()))
                hits.append(self._named(Hit(s, s + len(val), "cookie", val)))
        return hits

    def _aws_secrets(self, text: str, hits: list[Hit]) -> list[Hit]:
        out = []
        for h in [h for h in hits if h.kind == "aws-access-key-id"]:
            lo, hi = max(0, h.start - _AWS_NEAR), min(len(text), h.end + _AWS_NEAR)
            for m in _AWS_SECRET.finditer(text, lo, hi):
                v = m.group(0)
                # Mixed case and random (base64 of 30 random bytes: ~5 bits per character); not a
                # digit required: about 1 secret key in 1000 has none (40 draws of 64, 10 digits).
                if any(c.isupper() for c in v) and any(c.islower() for c in v) and shannon(v) >= 4.0:
                    out.append(Hit(m.start(), m.end(), "aws-secret-key", v))
        return out

    # -- decoding passes ------------------------------------------------------------------------

    def decoded_hits(self, text: str, depth: int, sink: _Sink, path: str) -> list[tuple[int, int, str]]:
        """(start, end, replacement) for secrets hidden behind base64, percent or \\u encoding."""
        out: list[tuple[int, int, str]] = []
        for start, end in _b64_runs(text):
            run = text[start:end]
            decoded = _b64_text(run)
            if decoded is None:
                continue
            inner = self.text(decoded, depth + 1, sink, path)
            if inner != decoded:
                kind = sink.last_kind or "secret"
                out.append((start, end, self.placeholder(f"base64:{kind}", run, sink.last_named)))
        if "%" in text:
            for m in _PCT_RUN.finditer(text):
                decoded = unquote(m.group(0))
                if decoded == m.group(0):
                    continue
                inner = self.text(decoded, depth + 1, sink, path)
                if inner != decoded:
                    out.append((m.start(), m.end(), _requote(inner)))
        if "\\u" in text:
            for m in _U_RUN.finditer(text):
                try:
                    decoded = json.loads('"' + m.group(0) + '"')
                except ValueError:
                    continue
                inner = self.text(decoded, depth + 1, sink, path)
                if inner != decoded:
                    out.append((m.start(), m.end(), json.dumps(inner)[1:-1]))
        # Overlaps (a percent run inside a base64 run): keep the earliest, widest.
        out.sort(key=lambda t: (t[0], -t[1]))
        kept: list[tuple[int, int, str]] = []
        for t in out:
            if not kept or t[0] >= kept[-1][1]:
                kept.append(t)
        return kept

    def text(self, text: str, depth: int, sink: _Sink, path: str = "") -> str:
        """`text` with every secret replaced; each one reported to `sink`."""
        short = len(text) <= _CLEAN_CACHE_LEN
        if short and text in self._clean:
            return text  # JSON keys and small values repeat in every message: known clean
        before = sink.count
        result = self._text(text, depth, sink, path)
        if short and result == text and sink.count == before and depth == 0:
            if len(self._clean) >= _CLEAN_CACHE_SIZE:
                self._clean.clear()
            self._clean.add(text)
        return result

    def _text(self, text: str, depth: int, sink: _Sink, path: str) -> str:
        hits = self.scan(text) if text else []
        if hits:
            text = self._apply(text, hits, sink, path)
        if self.config.decode and depth < MAX_DEPTH and len(text) >= 6:
            repl = self.decoded_hits(text, depth, sink, path)
            if repl:
                parts = []
                last = 0
                for s, e, r in repl:
                    parts.append(text[last:s])
                    parts.append(r)
                    last = e
                parts.append(text[last:])
                text = "".join(parts)
        return text

    def _pem_continuation(self, text: str, sink: _Sink, path: str) -> str:
        """Body and END lines of a private key printed one line per event (stderr)."""
        end = _PEM_END.search(text)
        if end:
            self.pem_open = False
            sink.hit("private-key", text[: end.end()], path, False)
            return self.placeholder("private-key", text[: end.end()], False) + text[end.end() :]
        if _PEM_BODY.fullmatch(text):
            sink.hit("private-key", text, path, False)
            return self.placeholder("private-key", text, False)
        self.pem_open = False
        return text

    def placeholder(self, kind: str, value: str, named: bool) -> str:
        if named or kind in ("home", "user"):
            return {"home": "<HOME>", "user": "<USER>"}.get(kind, f"<REDACTED:{kind}>")
        if len(value) * shannon(value) < _TAG_MIN_BITS:
            return f"<REDACTED:{kind}>"
        tag = hmac.new(_TAG_KEY + self.config.salt, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return f"<REDACTED:{kind}#{tag.hexdigest()[:8]}>"

    # -- objects ----------------------------------------------------------------------------

    def obj(self, value: Any, sink: _Sink, path: str = "$", name: str | None = None) -> Any:
        """A deep copy of a JSON-like value with every string scrubbed; `name` is its field name."""
        if isinstance(value, str):
            return self.field(name, value, sink, path) if name is not None else self.text(value, 0, sink, path)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = self.text(k, 0, sink, f"{path}.<key>") if isinstance(k, str) else k
                out[key] = self.obj(v, sink, _join(path, key), k if isinstance(k, str) else None)
            return out
        if isinstance(value, list | tuple):
            items = list(value)
            # [[name, value], ...] header pairs name their values; so does `--token value` in argv.
            pairs = bool(items) and all(
                isinstance(it, list | tuple) and len(it) == 2 and isinstance(it[0], str) for it in items
            )
            result = []
            for i, item in enumerate(items):
                if pairs:
                    head = self.text(item[0], 0, sink, f"{path}[{i}][0]")
                    result.append([head, self.obj(item[1], sink, f"{path}[{i}][1]", item[0])])
                    continue
                item_name = name
                before = items[i - 1] if i > 0 else None
                if isinstance(before, str) and before.startswith("-") and _name_class(before):
                    item_name = before
                result.append(self.obj(item, sink, f"{path}[{i}]", item_name))
            return result
        return value

    def field(self, name: str, value: str, sink: _Sink, path: str) -> str:
        scrubbed = self.text(value, 0, sink, path)
        cls = _name_class(name)
        if cls is None or scrubbed != value or PLACEHOLDER_RE.search(value):
            return scrubbed  # already scrubbed (now, or by an earlier pass: keep redaction idempotent)
        allow = self.config.allow
        if cls[1] in ("cookie", "set-cookie"):
            hits = self._cookie(0, value)
            if hits:
                return self._apply(value, hits, sink, path)
            return value
        scheme = _AUTH_SCHEME.match(value.strip())
        if scheme and cls[1].endswith("authorization"):
            token = scheme.group(2).strip()
            if _field_is_secret("always", token, allow):
                start = value.index(token)
                kind = {"bearer": "bearer-token", "basic": "basic-auth"}.get(scheme.group(1).lower(), "authorization")
                return self._apply(value, [Hit(start, start + len(token), kind, token)], sink, path)
            return value
        if _field_is_secret(cls[0], value, allow):
            stripped = value.strip()
            start = value.index(stripped)
            return self._apply(value, [Hit(start, start + len(stripped), self._classify(stripped, cls[1]), stripped)], sink, path)
        return value

    def _apply(self, text: str, hits: list[Hit], sink: _Sink, path: str) -> str:
        parts, last = [], 0
        for h in hits:
            parts.append(text[last : h.start])
            parts.append(self.placeholder(h.kind, h.value, h.named))
            sink.hit(h.kind, h.value, path, h.named)
            last = h.end
        parts.append(text[last:])
        return "".join(parts)

    # -- events -----------------------------------------------------------------------------

    def event(self, event: Mapping[str, Any], sink: _Sink, path: str = "$") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in event.items():
            sub = _join(path, k)
            if k == "raw" and isinstance(v, str):
                out[k] = self.raw(v, sink, sub)
            elif k == "text" and isinstance(v, str) and event.get("kind") == "stderr":
                # A key printed line by line: BEGIN in one stderr event, body and END in the next.
                rest = self._pem_continuation(v, sink, sub) if self.pem_open else v
                begin = _PEM_BEGIN.search(v)
                if begin and not _PEM_END.search(v, begin.end()):
                    self.pem_open = True
                out[k] = self.text(rest, 0, sink, sub)
            elif k == "b64" and isinstance(v, str) and event.get("kind") == "garbage":
                text = self.b64_payload(v, sink, sub)
                if text is None:
                    out[k] = v
                else:
                    out["text"] = text
            else:
                out[k] = self.obj(v, sink, sub, None)
        if "raw" in out and "msg" in out:
            from mcptape.jsonrpc import dumps

            if out["raw"] == dumps(out["msg"]):
                del out["raw"]  # the scrubbed raw is now just the compact form of the scrubbed msg
        return out

    def raw(self, raw: str, sink: _Sink, path: str) -> str:
        """Exact wire text: scrubbed as text, then as parsed JSON (finds `\\u`-escaped secrets).

        Parsed depth-capped (jsonrpc.loads: too-deep parts stay text, scrubbed as text above).
        """
        from mcptape.jsonrpc import loads, wire_dumps

        scrubbed = self.text(raw, 0, sink, path)
        try:
            parsed = loads(scrubbed)
        except ValueError:
            return scrubbed
        walked = self.obj(parsed, sink, path)
        return wire_dumps(walked) if walked != parsed else scrubbed

    def b64_payload(self, b64: str, sink: _Sink, path: str) -> str | None:
        """A garbage line's bytes: scrubbed text form if a secret is inside, else None (keep b64)."""
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            return None
        text = data.decode("utf-8", "backslashreplace")
        before = sink.count
        scrubbed = self.text(text, 0, sink, path)
        return scrubbed if sink.count != before or scrubbed != text else None


def _join(path: str, key: Any) -> str:
    """A JSON path step; a key that could itself be a secret is not spelled out (paths reach messages)."""
    return f"{path}.{_path_key(str(key))}"


@functools.lru_cache(maxsize=4096)
def _path_key(k: str) -> str:
    if _PATH_KEY.fullmatch(k) and not (high_entropy(k) and any(c.isdigit() for c in k)):
        return k
    return "<key>"


_PATH_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_\-]{0,40}")


def _b64_text(run: str) -> str | None:
    """The decoded text of a base64 run if it is plausibly encoded text, else None (cheap checks first)."""
    body = run.rstrip("=")
    if body.lower() == body or body.upper() == body:
        return None  # base64 of text has both cases; a hex digest or a lowercase path has not
    url = "-" in body or "_" in body
    if url and ("+" in body or "/" in body):
        return None
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        data = (base64.urlsafe_b64decode if url else base64.b64decode)(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\r\n\t")
    return text if printable >= 0.9 * len(text) else None


def _merge(hits: list[Hit]) -> list[Hit]:
    """Sorted, non-overlapping hits: overlapping ones join, the first (strongest) kind names them."""
    if len(hits) <= 1:
        return hits
    hits.sort(key=lambda h: (h.start, -h.end))
    merged = [hits[0]]
    for h in hits[1:]:
        last = merged[-1]
        if h.start < last.end:
            if h.end > last.end:
                merged[-1] = Hit(last.start, h.end, last.kind, last.value + "\0" + h.value, last.named)
            continue
        merged.append(h)
    return merged


class _Sink:
    """Where an engine reports what it replaced: the Redactor's counts, or verify's findings."""

    def __init__(self, record: Callable[[str, str, str, bool], None]) -> None:
        self._record = record
        self.count = 0
        self.last_kind: str | None = None
        self.last_named = False

    def hit(self, kind: str, value: str, path: str, named: bool) -> None:
        self.count += 1
        self.last_kind = kind
        self.last_named = named
        self._record(kind, value, path, named)


# --------------------------------------------------------------------------------------------
# the public face


class Redactor:
    """Scrubs secrets from events, objects and text, and verifies finished output.

    One instance per tape or report: placeholders are stable within it (and across runs, see the
    module docstring). `counts` says how many distinct values of which kind were redacted.
    """

    def __init__(
        self,
        known: Mapping[str, str] | None = None,
        patterns: Sequence[str] = (),
        allow: Sequence[str] = (),
        *,
        home: str | None = "",
        user: str | None = "",
        decode: bool = True,
        salt: bytes = b"",
    ) -> None:
        """`home`/`user` default ("") to this machine's; pass None to turn that detector off."""
        from mcptape.errors import ConfigError

        compiled = []
        for i, p in enumerate(patterns):
            try:
                compiled.append(re.compile(p))
            except re.error as e:
                raise ConfigError(
                    f"redact.patterns[{i}]: not a valid regular expression: {e}",
                    hint="write a Python regular expression, e.g. ACME-[A-Z0-9]{24}",
                ) from e
        if home == "":
            home = _default_home()
        if user == "":
            user = _default_user()
        if home is not None:
            home = home.rstrip("/\\")
            if home.count("/") + home.count("\\") < 1 or len(home) < 3:
                home = None  # "/" or a drive root would match every path
        if user is not None and (len(user) < 4 or user.lower() in COMMON_USER_NAMES):
            user = None
        self._config = _Config(
            known={k: str(v) for k, v in (known or {}).items()},
            patterns=compiled,
            allow=frozenset(allow),
            home=home,
            user=user,
            decode=decode,
            salt=salt,
        )
        self._scrubber = _Engine(self._config, SHAPES)
        self._checker = _Engine(self._config, SHAPES)  # built separately: a scrubber bug cannot blind it
        self.counts: dict[str, int] = {}
        self.occurrences: dict[str, int] = {}
        self._seen: set[tuple[str, str]] = set()
        self._sink = _Sink(self._record)

    def _record(self, kind: str, value: str, path: str, named: bool) -> None:
        self.occurrences[kind] = self.occurrences.get(kind, 0) + 1
        # Distinct values are told apart by a keyed digest; the value itself is not kept.
        digest = hmac.new(_TAG_KEY + self._config.salt, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        key = (kind, digest.hexdigest())
        if key not in self._seen:
            self._seen.add(key)
            self.counts[kind] = self.counts.get(kind, 0) + 1

    # -- scrubbing ----------------------------------------------------------------------------

    def redact_event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """A new event with every secret replaced, in every part (msg, raw, text, b64, detail, ...).

        Events holding nothing secret-like are returned as a shallow copy (nested values shared).
        """
        from mcptape.jsonrpc import dumps

        if not self._scrubber.pem_open and not self._scrubber.could_match(dumps(event)):
            return dict(event)
        return self._scrubber.event(event, self._sink)

    def redact_obj(self, obj: Any) -> Any:
        """A deep copy of a JSON-like value (dicts, lists, strings, ...) with secrets replaced."""
        return self._scrubber.obj(obj, self._sink)

    def redact_text(self, text: str) -> str:
        return self._scrubber.text(text, 0, self._sink)

    def redact_tape(self, header: Mapping[str, Any], events: Iterable[Mapping[str, Any]], *, where: str = "tape",
                    **footer: Any) -> bytes:
        """The whole tape as bytes, scrubbed and verified: what a golden tape writer writes atomically.

        Raises SecretLeak (and so writes nothing) if verification finds anything.
        """
        from mcptape.tape.format import tape_bytes

        data = tape_bytes(
            self._scrubber.obj(dict(header), self._sink),
            (self.redact_event(ev) for ev in events),
            **self._scrubber.obj(footer, self._sink),
        )
        self.verify(data, where)
        return data

    def line_bytes(self, line: Mapping[str, Any], where: str, text: str | None = None) -> bytes:
        """One tape line scrubbed, serialized (newline included) and verified: what a streaming
        writer writes. Raises SecretLeak (write nothing) if verification finds anything. `text`,
        if given, must be `dumps(line)` (EventBuilder.line_and_text splices it for less).

        A line in which the checker can find nothing (`could_match`, verify's own first step) is
        final as it stands: it is not walked, scrubbed or serialized twice. That is verification
        by the checker, not trust in the scrubber, so the two engines stay independent.
        """
        from mcptape.jsonrpc import dumps
        from mcptape.tape.format import serialize

        if text is None:
            text = dumps(line)
        if not self._scrubber.pem_open and not self._checker.could_match(text):
            return (text + "\n").encode("utf-8")
        data = serialize(self._scrubber.event(line, self._sink))
        self.verify(data, where)
        return data

    def guard(self, text: str, where: str) -> str:
        """Scrub text and verify the result: for reports, logs, markdown, PR comments, error messages."""
        cleaned = self.redact_text(text)
        self.verify(cleaned, where)
        return cleaned

    def summary(self) -> str:
        """How many values of which kind were redacted, never the values: `2 github-token, 1 env.X`."""
        return ", ".join(f"{n} {kind}" for kind, n in sorted(self.counts.items())) or "nothing redacted"

    # -- verification -------------------------------------------------------------------------

    def verify(self, data: str | bytes, where: str) -> None:
        """Scan finished output with the separately built checker; SecretLeak names place and kind.

        JSON lines (tapes, JSON reports) are parsed and walked, so the place is a line and a JSON
        path; other lines are scanned as text. Decoded forms are checked too.
        """
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        checker = self._checker
        checker.pem_open = False
        found: list[tuple[str, str, bool]] = []
        sink = _Sink(lambda kind, value, path, named: found.append((kind, path, named)))
        lines = text.split("\n")
        multi = len([ln for ln in lines if ln.strip()]) > 1
        for number, line in enumerate(lines, start=1):
            if not line.strip() or not (checker.pem_open or checker.could_match(line)):
                continue  # nothing there any detector could find, as text or parsed
            place = f"{where}:{number}" if multi else where
            parsed: Any = None
            stripped = line.strip()
            if stripped[:1] in "{[":
                try:
                    parsed = json.loads(stripped)
                except ValueError:
                    parsed = None
            if isinstance(parsed, dict):
                checker.event(parsed, sink)
            elif isinstance(parsed, list):
                checker.obj(parsed, sink)
            else:
                checker.text(line, 0, sink, "text")
            if not found and parsed is not None:
                # The exact text as well: a walker bug must not hide a plain token in the bytes.
                strict = [h for h in checker.scan(line) if h.kind not in _CONTEXT_KINDS]
                if strict:
                    found.append((strict[0].kind, "line text", strict[0].named))
            if found:
                kind, path, named = found[0]
                hint = (
                    f"if the value of {kind} is not a secret, list it under redact.allow in mcptape.yml; "
                    "if it is, this is an mcptape bug: please report it"
                    if named
                    else "this is an mcptape bug: please report it; meanwhile add the value's shape to "
                    "redact.patterns in mcptape.yml"
                )
                raise SecretLeak(f"{place}: a {kind} value survived redaction (at {path}); nothing was written", hint=hint)


# Kinds whose detection depends on context a raw JSON line garbles (escaped quotes, entropy of a
# prefix); the structured walk checks them instead.
_CONTEXT_KINDS = frozenset(
    {"cookie", "bearer-token", "basic-auth"} | {n.replace("_", "-") for n in _ALWAYS_NAMES + _ENTROPY_NAMES}
)


# --------------------------------------------------------------------------------------------
# what is a secret in the config and on the command line
#
# One rule for every value mcptape hands a server: `env:`, `headers:`, `command:`/`start:` and
# `url:` in mcptape.yml (config/secrets.py), rec's argv and environment (record/stdio.py), and the request
# headers `rec --listen` forwards (record/http.py). The values it picks become the Redactor's
# `known` secrets; every other value is configuration and is never scrubbed.

# Names are read as words (`GIT_AUTHOR_EMAIL` -> git, author, email; `apiKey` -> api, key), so a
# word has to *be* `auth` or `token`, not merely contain it. The words come from detect-secrets'
# KeywordDetector denylist (Yelp/detect-secrets, detect_secrets/plugins/keyword.py) and
# gitleaks' generic-api-key rule and its allowlist (gitleaks/gitleaks,
# cmd/generate/config/rules/generic.go): gitleaks matches substrings and then allowlists
# `author`, `primary_key`, `public_key`, `key_id`, `secret_name`, `token_url`, `key_file`...;
# matching words, the same names come out right without a list of exceptions to every word.
_SECRET_WORDS_TEXT = """password passwords passwd passphrase secret secrets token tokens credential credentials
    creds cookie cookies authorization apikey apikeys privkey privatekey keypass sessionid"""
_SECRET_WORDS = frozenset(_SECRET_WORDS_TEXT.split())
# Glued names: PGPASSWORD, CLIENTSECRET, AUTHTOKEN, SETCOOKIE (not TOKENIZER: the word must end so).
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "cookie")
# Glued key names (detect-secrets' list): APIKEY, ACCOUNTKEY... but not MONKEY, HOTKEY, TURKEY.
_KEY_PREFIXES_TEXT = """api app auth service application account db database client secret access private signing
    encryption master session"""
_KEY_COMPOUNDS = frozenset(f"{p}key" for p in _KEY_PREFIXES_TEXT.split())
# Words that only name a secret as the name's last word: BASIC_AUTH, DB_PASS, GITLAB_PAT, GPG_PRIVATE,
# X_AMZ_SIGNATURE, but AUTH_MODE, PASS_THROUGH, PRIVATE_REGISTRY are settings.
_LAST_WORDS = frozenset({"auth", "pass", "pw", "pwd", "pat", "private", "signature", "sig"})
# `key` is a secret's name (API_KEY, STRIPE_KEY, SECRET_KEY, DEPLOY_KEY) unless the word before says
# it is a database or UI key (gitleaks' allowlist: primary, foreign, public, ...).
_PLAIN_KEY_KINDS_TEXT = """public pub primary foreign sort partition hot natural composite cache idempotency dedup
    dedupe routing shard lookup hash range row bucket schema sequence"""
_PLAIN_KEY_KINDS = frozenset(_PLAIN_KEY_KINDS_TEXT.split())
# A name whose last words say it holds something *about* a secret (where it is, how long it is,
# what it is called) is not one: TOKEN_URL, PASSWORD_FILE, API_KEY_ID, SECRET_NAME, TOKEN_TTL.
_META_WORDS_TEXT = """id ids name names alias file files path paths dir url uri endpoint host port type kind length
    len size min max count limit expiry expires expiration ttl timeout lifetime format mode header field param
    prefix suffix location provider scope scopes audience issuer alg algorithm env var enabled disabled required
    policy version label arn hint helper command cmd process pair ring store vault user username email"""
_META_WORDS = frozenset(_META_WORDS_TEXT.split())
# Whole names that are not what their words say: the shell's working directories.
_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd"})
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Headers that carry credentials whatever their value looks like (the name rule finds them too;
# this is the list `rec --listen` and the config's `headers:` are documented with).
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token",
     "private-token", "x-amz-security-token", "ocp-apim-subscription-key"}
)  # fmt: skip


def name_words(name: str) -> list[str]:
    """A variable, flag or header name as lowercase words: `--api-key`, `apiKey`, `API_KEY` -> [api, key]."""
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a name (an env var, a flag, a header, a query parameter) says its value is a secret."""
    words = name_words(name)
    if not words or "".join(words) in _NOT_SECRET_NAMES:
        return False
    # `session id` and `api key` as two words name one thing.
    joined: list[str] = []
    for w in words:
        if joined and (joined[-1], w) in (("session", "id"), ("api", "key"), ("private", "key")):
            joined[-1] += w
        else:
            joined.append(w)
    last_secret = -1
    for i, w in enumerate(joined):
        last = i == len(joined) - 1
        if (
            w in _SECRET_WORDS
            or w in _KEY_COMPOUNDS
            or w.endswith(_SECRET_ENDINGS)
            or (w in ("key", "keys") and not (i and joined[i - 1] in _PLAIN_KEY_KINDS))
            or (w in _LAST_WORDS and last)
        ):
            last_secret = i
    if last_secret < 0:
        return False
    return not any(w in _META_WORDS for w in joined[last_secret + 1 :])


def _plain_value(value: str) -> bool:
    """A value no name makes a secret: true/false/null, a number, a path or URL without credentials."""
    v = value.strip()
    return (
        v.lower() in _IGNORABLE_KNOWN
        or bool(_NUMBER.fullmatch(v))
        or (bool(_PLAIN_PATH_OR_URL.fullmatch(v)) and "@" not in v)
    )


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


_shape_engine: _Engine | None = None


def _shape_of(value: str) -> str | None:
    """The kind of token shape (SHAPES, PEM key, URL password, `Bearer x`, `key=value`) the value holds."""
    global _shape_engine
    if _shape_engine is None:
        _shape_engine = _Engine(
            _Config(known={}, patterns=[], allow=frozenset(), home=None, user=None, decode=True, salt=b""), SHAPES
        )
    sink = _Sink(lambda kind, value, path, named: None)
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
    if not v or _allowed_value(v, frozenset(allow)):
        return None
    if marked:
        return "redact.env or redact.headers marks it"
    shape = _shape_of(v)
    if shape is not None:
        return f"it has a token shape ({shape})"
    if header and (name.strip().lower() in SECRET_HEADERS or secret_name(name)):
        return f"it is sent in the {name} header"
    if secret_name(name) and not _plain_value(v):
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


# mcptape's own text: what tapes and reports hold whatever the server said. A known secret found in
# it would be scrubbed out of the tape's structure (every `"result"` key) and flagged in reports
# that are only verified, so such a value is refused by the config (config/secrets.py says where) and is
# never used as a known secret (`_ignorable_known`). Words are compared case-insensitively, and a
# value is refused when it is *part* of one (`struct` of `structural`): known values are found
# anywhere in the text. tests/integration/test_redact_e2e.py runs ci through every drift variant
# and fails on a word it writes that is missing here. (A JSON path the reports compose from keys,
# `error.message`, is not a word of its own: a secret equal to one still fails verification.)
_OWN_TEXT = {
    "JSON-RPC": "jsonrpc method params result error code message data",
    "MCP methods (2024-11-05 to 2026-07-28)": """initialize ping tools/list tools/call resources/list resources/read
        resources/templates/list resources/subscribe resources/unsubscribe prompts/list prompts/get
        completion/complete logging/setLevel sampling/createMessage elicitation/create roots/list server/discover
        subscriptions/listen tasks/get tasks/list tasks/result tasks/cancel ref/prompt ref/resource
        notifications/initialized notifications/cancelled notifications/progress notifications/message
        notifications/resources/updated notifications/resources/list_changed notifications/tools/list_changed
        notifications/prompts/list_changed notifications/roots/list_changed notifications/elicitation/complete
        notifications/tasks/status notifications/subscriptions/acknowledged""",
    "MCP keys": """_meta io.modelcontextprotocol/protocolVersion io.modelcontextprotocol/clientCapabilities
        io.modelcontextprotocol/clientInfo io.modelcontextprotocol/serverInfo io.modelcontextprotocol/logLevel
        io.modelcontextprotocol/subscriptionId protocolVersion capabilities clientInfo serverInfo instructions
        experimental extensions logging sampling elicitation elicitations completions listChanged subscribe
        supported supportedVersions requiredCapabilities tools prompts resources resourceTemplates
        resourceSubscriptions toolsListChanged promptsListChanged resourcesListChanged content contents
        structuredContent isError inputSchema outputSchema annotations readOnlyHint destructiveHint idempotentHint
        openWorldHint execution taskSupport description title version websiteUrl icons uriTemplate mimeType text
        image audio resource resource_link blob arguments argument messages role assistant user nextCursor cursor
        progressToken progress total level logger completion values hasMore reason requestId requestState
        inputRequests inputResponses resultType cacheScope ttlMs status statusMessage taskId createdAt
        lastUpdatedAt lastModified pollInterval metadata modelPreferences systemPrompt includeContext temperature
        maxTokens stopSequences stopReason toolChoice toolUseId requestedSchema action context audience priority
        costPriority speedPriority intelligencePriority cancel create application/json text/event-stream""",
    "JSON Schema": """$schema $ref $defs type object string number integer boolean array null properties
        required items enum const default format pattern minimum maximum exclusiveMinimum exclusiveMaximum
        minLength maxLength minItems maxItems uniqueItems additionalProperties patternProperties anyOf oneOf allOf
        definitions examples enumNames""",
    "tape format (tape/)": """mcptape tape end format events crc32 name transport server command protocol
        negotiation kind dir c2s s2c msg raw bytes detail what request response notification stderr garbage note
        exit signal returncode side_effect http stdio streamable-http event_withheld dropped dropped_bytes
        overflow partial_bytes interrupted recorder_error server_exited stderr_dropped .tape.jsonl""",
    "JSON report (report/model.py)": """mcptape_report config sessions session verdict exit_code drifts
        findings category severity path before after golden_line fresh_line call step orphans updated_golden
        shard redactions duration_s surface diff golden fresh notes worst_exit""",
    "verdicts, severities and finding tags (diff/)": """same updated output structural secret none info
        breaking compatible cosmetic added removed changed order schema conformance process notification
        side_effect result_to_error error_to_result server_request_added server_request_removed crash stdout""",
    "JUnit (report/junit.py)": """testsuites testsuite testcase failure failures errors skipped classname
        system-out time tests output_drift structural_drift secret_leak could_not_run encoding""",
    "terminal and markdown reports (report/)": """verdict first drifted call error no drift redaction redacted
        value values survived nothing written --update-golden --session --junit --json --summary --out-dir
        mcptape.yml accept accepted accepts commit committing review reviewed intended change changes
        re-recording tool tools prompt prompts surface details Added Removed Breaking Compatible Cosmetic Later
        calls findings finding golden tape tapes fresh live run keeps left untouched complete completed
        conformance message(s) anyway fails until conforms record recorded recording answer answered garbage
        non-json non-utf-8 unknown holding longer milliseconds middle cannot character characters difference
        property optional explain transport report terminal summary comment sticky marker could not timeout
        timed crashed started failed start ready listen notify request""",
}  # fmt: skip


@functools.lru_cache(maxsize=1)
def _own_words() -> tuple[str, ...]:
    kinds = {s.kind for s in SHAPES} | {n.replace("_", "-") for n in _ALWAYS_NAMES + _ENTROPY_NAMES}
    kinds |= {"private-key", "cookie", "pattern", "home", "user", "redacted", "aws-secret-key", "secret"}
    return tuple(sorted({w.lower() for words in _OWN_TEXT.values() for w in words.split()} | kinds))


def own_text_secrets(known: Mapping[str, str], extra: Iterable[str] = (), allow: Iterable[str] = ()) -> list[str]:
    """The sources of known secrets that are (or hold a part that is) mcptape's own text: they
    cannot be scrubbed without rewriting tapes and reports, so the Redactor leaves them out and
    config/secrets.py refuses them. `extra` adds the config's own names (sessions, servers, golden_dir)."""
    words = tuple(extra)
    allowed = frozenset(allow)
    out = []
    for source, value in known.items():
        for _, part in _known_parts(source, value):
            p = part.strip()
            if len(p) < KNOWN_MIN_LEN or _allowed_value(p, allowed) or _plain_value(p):
                continue
            if own_text(p, words):
                out.append(source)
                break
    return out


def own_text(value: str, extra: Iterable[str] = ()) -> bool:
    """Whether a value is, or is part of, a word of mcptape's own text (or of `extra`: the config's
    session and server names, golden_dir), which no known secret may be (see _OWN_TEXT)."""
    v = value.strip().lower()
    if not v:
        return False
    return any(v in w for w in _own_words()) or any(v in str(w).lower() for w in extra)


def _default_home() -> str | None:
    home = os.environ.get("HOME") or ""
    if not home:
        try:
            home = str(Path.home())
        except RuntimeError:
            return None
    return home or None


def _default_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


_default: Redactor | None = None


def guard(text: str, where: str, redactor: Redactor | None = None) -> str:
    """Scrub and verify text with `redactor`, or with a shared one that knows no config secrets."""
    global _default
    if redactor is None:
        if _default is None:
            _default = Redactor()
        redactor = _default
    return redactor.guard(text, where)


__all__ = ["PLACEHOLDER_RE", "SHAPES", "Redactor", "Shape", "guard", "high_entropy", "shannon", "strip_tags"]
