"""Secret redaction: the single choke point every byte passes before mcptape writes or shows it.

Owns what counts as a secret and how it is replaced: tapes (events, header, footer), reports,
terminal and markdown text and error messages all go through a `Redactor`, then `verify`
scans the finished output again and raises `SecretLeak` (exit 4) if anything survived.
It leaves *where* output goes to the writers (proxy.py, ci.py, github.py, report/): they call
`redact_*`/`guard`, then `verify` on the exact bytes, and write nothing when it raises.

Detectors, in the order they win on overlapping text:

1. Known values (`known`: source name -> value, from the config's `env:`/`headers:`), in
   every form we can predict: raw, URL-encoded (quote / quote_plus, upper and lower hex),
   JSON-escaped (plain and `\\uXXXX`), and base64 (standard and urlsafe) at all three byte
   alignments, so a value embedded in a longer blob such as `Basic base64(user:value)` is
   found without decoding. Named after their source: `<REDACTED:env.CALC_TOKEN>`. Values that
   cannot be told from ordinary text are skipped (see `_ignorable_known`): shorter than 6
   characters, booleans/null, plain numbers, values the user allows, and credential-free
   paths and URLs. Everything else a user passes is a secret by default.
2. Token shapes of common providers (`SHAPES`): GitHub classic and fine-grained, OpenAI,
   Anthropic, AWS access key ids (and a 40-char secret key near one), Slack tokens and
   webhooks, Google API keys, Stripe secret/restricted keys and webhook secrets (publishable
   `pk_` keys are public by design and stay), GitLab, npm, PyPI, Hugging Face, JWTs, whole PEM
   private key blocks (also when printed line by line on stderr), `Authorization: Bearer|Basic`
   values, and `user:pass@` in URLs.
3. Secret-named fields (`_name_class`): for `password`, `secret`, `client_secret`,
   `private_key`, `authorization`, `cookie`, ... any value of 4+ characters is a secret; for
   `token`, `api_key`, `access_token`, `session_id`, ... a value is a secret when it has at
   least 8 characters and a Shannon entropy of at least 3.0 bits per character (random tokens
   score 4-6, words and ISO timestamps under 3). The same rule covers JSON keys, `key=value`
   and `key: value` in text, URL query strings and `--flag value` pairs in argv lists.
   `progressToken` and friends (MCP protocol fields, not credentials) are excluded.
4. User patterns (`redact.patterns`), kind `pattern`.
5. Who recorded: the home directory becomes `<HOME>` (only as a whole path component), the user
   name becomes `<USER>` as a whole word, case-insensitively, unless it is shorter than 4
   characters or a common account/word name (`COMMON_USER_NAMES`: root, runner, ci, admin,
   ...), which would over-redact ordinary text and identifies nobody.

Decoding (on by default; `decode=False` exists for the benchmark): after the direct pass, runs
of base64 alphabet (24+ chars, mixed case) that decode to mostly printable UTF-8, percent-encoded
runs and JSON `\\uXXXX`-escaped runs are decoded and scanned again, two levels deep. A secret
inside a base64 blob replaces the whole blob; inside percent/`\\u` runs only the secret is
replaced and the rest re-encoded. Allowlisted and never redacted: our own placeholders,
`${{ secrets.X }}`, `$VAR`/`${VAR}` references and the exact values in `allow`.

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
matched, anchored, there. A whole tape line is first put to `_Engine.could_match`, a superset
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
    return not rest.strip(" \t\"'*.-_•")


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
    """One provider token shape; a `(?P<secret>...)` group marks the secret part (else the whole match)."""

    kind: str
    pattern: str
    triggers: tuple[str, ...]  # lowercase literals, one of which starts every match (":// " is special)
    check: Callable[[str], bool] | None = None


def _has_digit_and_letter(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _basic_payload(v: str) -> bool:
    try:
        raw = base64.b64decode(v + "=" * (-len(v) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw


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
    Shape(
        "url-password",
        r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^/\s:@\"'<>\\]{0,128}:"
        r"(?P<secret>[^/\s@\"'<>\\]{1,256})@",
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
_TRIGGER_GATES = "$<_-\\\"/.:"
_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{" + str(B64_MIN_RUN) + r",}={0,2}")
_B64_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/_-")
_B64_MASK = bytes(ord("a") if chr(i) in _B64_ALPHABET else ord(" ") for i in range(256))
_B64_NEEDLE = b"a" * B64_MIN_RUN


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
    return bool(_PLAIN_PATH_OR_URL.fullmatch(v)) and "@" not in v


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
        for i, shape in enumerate(self.shapes):
            pattern = shape.pattern.replace("(?P<secret>", f"(?P<sv{i}>")
            branches.append(f"(?P<s{i}>{pattern})")
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
        groups: dict[str, list[str]] = {}
        for t in json_triggers:
            groups.setdefault(next((c for c in _TRIGGER_GATES if c in t), ""), []).append(t)
        self._trigger_groups = tuple((gate, tuple(group)) for gate, group in sorted(groups.items()))
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
        if self.config.decode:  # before the triggers: a base64 image is ruled in at its first run
            if "%" in text:
                return True
            for start, end in _b64_runs(text):
                run = text[start:end]
                if run.lower() != run and run.upper() != run:  # mixed case: could be base64 text
                    return True
        low = text.lower()
        for harmless in self._harmless:
            low = low.replace(harmless, '""')  # quotes: no trigger holds one, so none spans the cut
        if "://" in low and "@" in low:
            return True
        return any(gate in low and any(t in low for t in group) for gate, group in self._trigger_groups)

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
        for lit in self.triggers:
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
            return [self._named(Hit(span[0], span[1], shape.kind, value))]
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
        scheme = _AUTH_SCHEME.match(value)
        if scheme:
            vstart += scheme.start(2)
            value = scheme.group(2)
        elif value.lower() in _SCHEMES:
            return None  # `Authorization: Bearer <REDACTED:...>`: the scheme word alone is no secret
        if not _field_is_secret(cls[0], value, self.config.allow):
            return None
        return [self._named(Hit(vstart, vstart + len(value), self._classify(value, cls[1]), value))]

    def _cookie(self, offset: int, value: str) -> list[Hit]:
        hits = []
        for pm in re.finditer(r"([^=;\s]+)=([^;]*)", value):
            name, val = pm.group(1), pm.group(2).strip()
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
                if any(c.isupper() for c in v) and any(c.islower() for c in v) and any(c.isdigit() for c in v):
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
        found: list[tuple[str, str]] = []
        sink = _Sink(lambda kind, value, path, named: found.append((kind, path)))
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
                    found.append((strict[0].kind, "line text"))
            if found:
                kind, path = found[0]
                raise SecretLeak(
                    f"{place}: a {kind} value survived redaction (at {path}); nothing was written",
                    hint="this is an mcptape bug: please report it; meanwhile add the value's shape to "
                    "redact.patterns in mcptape.yml",
                )


# Kinds whose detection depends on context a raw JSON line garbles (escaped quotes, entropy of a
# prefix); the structured walk checks them instead.
_CONTEXT_KINDS = frozenset(
    {"cookie", "bearer-token", "basic-auth"} | {n.replace("_", "-") for n in _ALWAYS_NAMES + _ENTROPY_NAMES}
)


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
