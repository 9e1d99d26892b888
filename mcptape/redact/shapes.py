"""What a secret looks like: provider token shapes, secret-named fields, placeholders, thresholds.

Plain data and small pure predicates; the engine (detectors.py) compiles them into detectors.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import string
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


# --------------------------------------------------------------------------------------------
# secret names: THE table (the redactor's fields and `key=value` text, the verifier, the config's
# env/headers/argv/url, rec's argv and environment all read names through `secret_name`)

# One-time codes and PINs: short digits are secrets under these names (`"otp": "123456"`).
DIGIT_WORDS = frozenset({"otp", "totp", "pin", "cvv", "cvc"})
# Two words that name one thing: `session id`, `api key`, `seed phrase`.
_JOINED = (("session", "id"), ("api", "key"), ("private", "key"), ("seed", "phrase"), ("recovery", "phrase"))

# Names are read as words (`GIT_AUTHOR_EMAIL` -> git, author, email; `apiKey` -> api, key), so a
# word has to *be* `auth` or `token`, not merely contain it. The words come from detect-secrets'
# KeywordDetector denylist (Yelp/detect-secrets, detect_secrets/plugins/keyword.py) and
# gitleaks' generic-api-key rule and its allowlist (gitleaks/gitleaks,
# cmd/generate/config/rules/generic.go): gitleaks matches substrings and then allowlists
# `author`, `primary_key`, `public_key`, `key_id`, `secret_name`, `token_url`, `key_file`...;
# matching words, the same names come out right without a list of exceptions to every word.
_SECRET_WORDS_TEXT = """password passwords passwd passphrase secret secrets token tokens credential credentials
    creds cookie cookies authorization apikey apikeys privkey privatekey keypass sessionid mnemonic
    seedphrase recoveryphrase"""
_SECRET_WORDS = frozenset(_SECRET_WORDS_TEXT.split())
# Glued names: PGPASSWORD, CLIENTSECRET, AUTHTOKEN, SETCOOKIE (not TOKENIZER: the word must end so).
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "cookie")
# Glued key names (detect-secrets' list): APIKEY, ACCOUNTKEY... but not MONKEY, HOTKEY, TURKEY.
_KEY_PREFIXES_TEXT = """api app auth service application account db database client secret access private signing
    encryption master session"""
_KEY_COMPOUNDS = frozenset(f"{p}key" for p in _KEY_PREFIXES_TEXT.split())
# Words that only name a secret as the name's last word: BASIC_AUTH, DB_PASS, GITLAB_PAT, GPG_PRIVATE,
# X_AMZ_SIGNATURE, but AUTH_MODE, PASS_THROUGH, PRIVATE_REGISTRY are settings.
_LAST_WORDS = frozenset({"auth", "pass", "pw", "pwd", "pat", "private", "signature", "sig"} | DIGIT_WORDS)
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
# (`PWD` is one: its value, a path, is plain, and `{"pwd": "hunter22"}` is a password.)
_NOT_SECRET_NAMES = frozenset({"oldpwd"})
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Headers that carry credentials whatever their value looks like (the name rule finds them too;
# this is the list `rec --listen` and the config's `headers:` are documented with).
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token",
     "private-token", "x-amz-security-token", "ocp-apim-subscription-key"}
)  # fmt: skip


def name_end_words() -> tuple[str, ...]:
    """Every word (or joined pair, as `session_id`) a secret name can end with, for the engine's
    `key=value` detector in text: derived from this table, so a word added here is found there."""
    words = set(_SECRET_WORDS) | _KEY_COMPOUNDS | set(_LAST_WORDS) | {"key", "keys"} | set(_SECRET_ENDINGS)
    words |= {f"{a}_{b}" for a, b in _JOINED}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


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
        if joined and (joined[-1], w) in _JOINED:
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
    """('always' | 'entropy' | 'digits', kind) if a field of this name holds secrets, else None.

    Whether it does is `secret_name`'s (the one table); the class says which values under it are
    secrets (`field_is_secret`), the kind names the placeholder: the longest of ALWAYS_NAMES and
    ENTROPY_NAMES the name ends with (kinds goldens already hold), else its secret words.
    """
    if len(name) > 64:
        return None
    norm = _normalize_name(name)
    if not norm or norm in _EXCLUDED_NAMES or not secret_name(name):
        return None
    for cls, base in _NAMES_LONGEST_FIRST:  # `access_token` names the kind, not its suffix `token`
        if norm == base or norm.endswith("_" + base):
            return cls, base.replace("_", "-")
    words = [w for w in norm.split("_") if w]
    last = words[-1]
    if last in DIGIT_WORDS:
        return "digits", last
    if last in ("key", "keys") and len(words) > 1:
        return "entropy", f"{words[-2]}-key"
    if len(words) > 1 and (words[-2], last) in _JOINED:
        return "always", f"{words[-2]}-{last}"
    return "always", last


_NAMES_LONGEST_FIRST = sorted(
    [("always", n) for n in ALWAYS_NAMES] + [("entropy", n) for n in ENTROPY_NAMES],
    key=lambda cn: -len(cn[1]),
)
# `process.env.API_KEY`, `config.secrets.token`, `settings.PASSWORD`: code naming a secret, not one.
_CODE_REF = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+(?:\(\))?")
_WORDS_ONLY = re.compile(r"[a-z]+(?: [a-z]+){11,23}")


def looks_secret(value: str) -> bool:
    """Whether a value under a password-like name is one: no spaces (prose is not: `Best regards,
    Ada`, `stored in the vault`), and a digit, a symbol or mixed case (`hunter22`), or long or
    varied letters; or 12-24 lowercase words (a wallet's seed phrase). `required`, `unset`,
    `optional`, code references (`process.env.API_KEY`) are not."""
    if any(c.isspace() for c in value):
        return bool(_WORDS_ONLY.fullmatch(value))
    if len(value) < ALWAYS_MIN_LEN or _NUMBER.fullmatch(value) or _CODE_REF.fullmatch(value):
        return False
    if not value.isalpha() or (value.lower() != value and value.upper() != value):
        return True
    return len(value) >= 12 or (len(value) >= ENTROPY_MIN_LEN and shannon(value) >= ENTROPY_MIN_BITS_PER_CHAR)


def field_is_secret(cls: str, value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if allowed_value(v, allow) or v.lower() in _IGNORABLE_KNOWN:
        return False
    if cls == "digits" and v.isdigit():
        return 4 <= len(v) <= 12
    if cls == "entropy":
        return high_entropy(v) and not any(c.isspace() for c in v) and not _CODE_REF.fullmatch(v)
    return looks_secret(v)


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
    back: int = 0  # the match starts this many characters before its trigger (Azure's `xxx8Q~`)
    # Only in text as it stands, not in decoded runs: a shape told by its delimiters alone (a
    # standalone AWS secret key) would match a piece of a decoded run, whose ends are no delimiters.
    direct_only: bool = False


def _has_digit_and_letter(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _basic_payload(v: str) -> bool:
    try:
        raw = base64.b64decode(v + "=" * (-len(v) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw


def _aws_secret_key(v: str) -> bool:
    """A standalone 40-character AWS secret access key: base64 of 30 random bytes, so upper and
    lower case and digits (a hex digest or a word has not) and 4.2+ bits a character (random keys
    score ~4.6-5; mixed-case identifiers of that length far less)."""
    return (
        any(c.isupper() for c in v) and any(c.islower() for c in v) and sum(c.isdigit() for c in v) >= 2
        and shannon(v) >= 4.2
    )


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
    # Shapes gitleaks knows and the bundled rule set (rules.py) misses.
    Shape("alibaba-access-key-id", r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])", ("ltai",), _has_digit_and_letter),
    Shape(
        "azure-ad-client-secret",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        ("q~",),
        back=4,
    ),
    Shape(
        "aws-secret-key",  # without its AKIA id nearby (the engine also finds one near an id)
        # Only between the characters that delimit a value (space, quotes, `=`, `:`, brackets): a
        # 40-character stretch of base64 between other characters (`%2F`, `\\n`, `é`, `-`) is a
        # piece of a longer blob (a percent-encoded PEM body, an escaped image), not a key.
        # (`\\"` and `\\n` too: in a JSON line, could_match must see what the walk of its strings sees.)
        r"(?:^|(?<=[\s\"'=:,(\[{>])|(?<=\\[nrt]))[A-Za-z0-9/+]{40}(?=$|[\s\"',;)\]}<&\\])",
        (),
        _aws_secret_key,
        run_first=string.ascii_letters + string.digits + "/+",
        direct_only=True,
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


