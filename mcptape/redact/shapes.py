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
# What documentation writes where a secret goes: never a secret itself (`postgres://user:password@localhost`,
# `API_KEY=YOUR_API_KEY`, `ghp_xxxxxxxx...`, `Bearer <token>`): `placeholder_value`.
_PLACEHOLDER_VALUES_TEXT = """null none redacted <redacted> xxx xxxx changeme change-me change_me password passwd pass pwd
    secret token apikey api_key api-key example dummy sample placeholder test mypassword yourpassword mysecret
    yoursecret mytoken yourtoken"""
_PLACEHOLDER_VALUES = frozenset(_PLACEHOLDER_VALUES_TEXT.split()) | {""}
_PLACEHOLDER = re.compile(
    r"<[^<>\n]{1,64}>|\{\{[^{}\n]{1,64}\}\}|\[[A-Za-z _\-]{1,64}\]"  # <your-token>, {{api_key}}, [TOKEN]
    r"|(?i:your|my|insert|replace|enter|put)(?:[ _\-]|(?<=[a-z])(?=[A-Z]))(?:[A-Za-z]+[ _\-]?){1,6}"  # your-api-key-here, yourToken
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:KEY|TOKEN|SECRET|PASSWORD|HERE|ME|VALUE|ID)"  # YOUR_API_KEY, REPLACE_ME
)
# A value masked or spelled out as an example: `ghp_xxxxxxxxxxxx`, `sk-...****`, AWS's `...EXAMPLE` keys.
_MASKED = re.compile(r"x{6}|X{6}|\*{4}|•{4}|\.{6}|#{6}|0{12}|(?i:example)")

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


def placeholder_value(value: str) -> bool:
    """A value documentation writes where a secret goes (`YOUR_API_KEY`, `<token>`, `password`,
    `ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`, AWS's `AKIAIOSFODNN7EXAMPLE`): no secret, and a
    reader recognises it as none. A real token has no run of six `x` nor the word `example`."""
    v = value.strip()
    return v.lower() in _PLACEHOLDER_VALUES or bool(_PLACEHOLDER.fullmatch(v)) or _MASKED.search(v) is not None


def allowed_value(value: str, allow: frozenset[str]) -> bool:
    v = value.strip()
    if v in allow or placeholder_value(v):
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
# Words that name one secret together: `session id`, `seed phrase`, `code verifier` (OAuth's PKCE),
# `recovery codes`; each is read as the one word it makes (`sessionid`), a secret's name wherever
# it stands in a name, as the words of _SECRET_WORDS are.
_JOINED_TEXT = """session id, api key, private key, seed phrase, recovery phrase, recovery code, recovery codes,
    backup code, backup codes, code verifier, auth code, authorization code, security answer, security answers,
    secret answer, secret answers"""
# ... and the one-time codes among them, digits as often as not (`"otp_code": "493817"`).
_DIGIT_JOINED_TEXT = """one time code, one time codes, one time password, one time pin, otp code, totp code, mfa code,
    pin code, verification code, security code"""
_JOINED = tuple(tuple(n.split()) for n in (_JOINED_TEXT + "," + _DIGIT_JOINED_TEXT).split(","))
_DIGIT_JOINED = frozenset("".join(n.split()) for n in _DIGIT_JOINED_TEXT.split(","))
# Answers to security questions are secrets whatever they look like, prose too (`"Fluffy the cat"`).
_ANY_VALUE_WORDS = frozenset({"securityanswer", "securityanswers", "secretanswer", "secretanswers"})

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
_SECRET_WORDS = frozenset(_SECRET_WORDS_TEXT.split()) | frozenset("".join(n) for n in _JOINED)
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
    policy version label arn hint helper command cmd process pair ring store vault user username email at on date
    time timestamp changed updated created rotated reset last age rules strength status state valid validity"""
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
    """Every word (or joined words, as `session_id`) a secret name can end with, for the engine's
    `key=value` detector in text: derived from this table, so a word added here is found there."""
    words = set(_SECRET_WORDS) | _KEY_COMPOUNDS | set(_LAST_WORDS) | {"key", "keys"} | set(_SECRET_ENDINGS)
    words |= {"_".join(n) for n in _JOINED}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def _joined(words: list[str]) -> list[str]:
    """`words` with each run that names one secret joined (`session`, `id` -> `sessionid`; the longest first)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        for n in _JOINED_BY_LENGTH:
            if tuple(words[i : i + len(n)]) == n:
                out.append("".join(n))
                i += len(n)
                break
        else:
            out.append(words[i])
            i += 1
    return out


_JOINED_BY_LENGTH = sorted(_JOINED, key=len, reverse=True)


def name_words(name: str) -> list[str]:
    """A variable, flag or header name as lowercase words: `--api-key`, `apiKey`, `API_KEY` -> [api, key]."""
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a name (an env var, a flag, a header, a query parameter) says its value is a secret."""
    words = name_words(name)
    if not words or "".join(words) in _NOT_SECRET_NAMES:
        return False
    joined = _joined(words)  # `session id` and `api key` as two words name one thing
    last_secret = -1
    for i, w in enumerate(joined):
        if _secret_word(w, joined[i - 1] if i else None, last=i == len(joined) - 1):
            last_secret = i
    if last_secret < 0:
        return False
    return not any(w in _META_WORDS for w in joined[last_secret + 1 :])


def _secret_word(w: str, before: str | None = None, *, last: bool = True) -> bool:
    """Whether one (joined) word of a name makes it a secret's: `password`, `apikey`, `sessionid`,
    `key` unless the word `before` says what kind of plain key (`primary key`), and the words that
    only do so as the name's `last` (`pass`, `pin`)."""
    return (
        w in _SECRET_WORDS
        or w in _KEY_COMPOUNDS
        or w.endswith(_SECRET_ENDINGS)
        or (w in ("key", "keys") and before not in _PLAIN_KEY_KINDS)
        or (w in _LAST_WORDS and last)
    )


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
    joined = _joined(name_words(name))
    if joined[-1] in _DIGIT_JOINED:
        return "digits", _JOINED_KINDS[joined[-1]]
    if joined[-1] in _ANY_VALUE_WORDS:
        return "any", _JOINED_KINDS[joined[-1]]
    if last in DIGIT_WORDS:
        return "digits", last
    if last in ("key", "keys") and len(words) > 1:
        return "entropy", f"{words[-2]}-key"
    if joined[-1] in _JOINED_KINDS:
        return "always", _JOINED_KINDS[joined[-1]]
    if not _secret_word(last) and len(words) > 1:
        return "always", "-".join(words[-3:])  # SECRET_KEY_BASE: `secret-key-base`, not `base`
    return "always", last


_JOINED_KINDS = {"".join(n): "-".join(n) for n in _JOINED}  # `recoverycodes` -> `recovery-codes`
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


# `cl100k_base`, `same-origin`, `gpt-4o-mini`: lowercase words and short parts, an identifier's
# shape (a tokenizer under `token`, a fetch mode under `credentials`), not a random token's.
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]{0,9}(?:[_\-.][a-z0-9]{1,10})+")
# A URL without credentials, a query or a fragment (`"password_reset": "https://..."`): where a
# secret is used, not a secret.
_PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s?#@]*")


def field_is_secret(cls: str, value: str, allow: frozenset[str]) -> bool:
    """Whether a value under a name of class `cls` (name_class) is a secret (module docstring)."""
    v = value.strip()
    if allowed_value(v, allow) or v.lower() in _IGNORABLE_KNOWN:
        return False
    if cls == "any":
        return len(v) >= 2 and not _NUMBER.fullmatch(v)  # a count of answers is no answer
    if cls == "digits" and v.isdigit():
        return 4 <= len(v) <= 12
    if _PLAIN_URL.fullmatch(v):
        return False
    if cls == "entropy":
        return (high_entropy(v) and not any(c.isspace() for c in v) and not _CODE_REF.fullmatch(v)
                and not _IDENTIFIER.fullmatch(v))
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
    # Every match lies inside a run of B64_MIN_RUN+ base64-alphabet characters of both cases (a
    # key's DER body, `AKCp` + 69): with decoding on, could_match rules such a run in already, so
    # its triggers need not be searched for in every line (the writer's per-line cost).
    in_run: bool = False
    # A trigger every match also holds (further in), which could_match searches for instead of
    # `triggers`: a .netrc entry starting at `machine` holds `passw` (a name trigger already).
    held: str = ""


def _has_digit_and_letter(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _has_both_cases(v: str) -> bool:
    return v.lower() != v and v.upper() != v


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


def _user_token(v: str) -> bool:
    """A URL's user name that is a token (GitHub's `https://TOKEN@github.com/...`), not a name:
    16+ characters, letters and digits, and random (3.5+ bits a character)."""
    return ":" not in v and _has_digit_and_letter(v) and shannon(v) >= 3.5 and not placeholder_value(v)


# A private key's DER in base64, by its first bytes: a SEQUENCE holding version 0 or 1 (PKCS#1 RSA,
# PKCS#8, SEC1 EC, DSA), or PKCS#8's encrypted form (a PBES2/PKCS#12 algorithm first), or OpenSSH's
# `openssh-key-v1`. Certificates and public keys (a SEQUENCE first) are neither.
_KEY_BODY_STARTS = ("MII", "MHcCAQE", "MIGHAgEA", "MIG2AgEA", "MIGkAgEB", "MC4CAQAw", "b3BlbnNzaC1rZXktdjE")
_KEY_BODY_TRIGGERS = tuple(t.lower() for t in _KEY_BODY_STARTS)
# Not where the body goes on percent-encoded (a `%2F` ends a run there): the decoded text is read whole.
_KEY_BODY_PATTERN = (
    r"(?<![A-Za-z0-9+/])(?:" + "|".join(_KEY_BODY_STARTS) + r")[A-Za-z0-9+/=]{33,}+"
    r"(?:(?:\\[rn]|[\r\n \t])++[A-Za-z0-9+/=]{4,}+)*+(?!%[0-9A-Fa-f]{2})"
)
_KEY_BODY = re.compile(_KEY_BODY_PATTERN)
_ENCRYPTED_KEY_OIDS = (bytes.fromhex("2a864886f70d0105"), bytes.fromhex("2a864886f70d010c"))  # PKCS#5, PKCS#12


def _private_key_der(v: str) -> bool:
    if not _has_both_cases(v):
        return False  # (random base64 has both; could_match counts on it: Shape.in_run)
    if v.startswith("b3BlbnNzaC1rZXktdjE"):
        return True
    head = re.sub(r"[^A-Za-z0-9+/]", "", v[:40])[:24]
    try:
        der = base64.b64decode(head[: len(head) - len(head) % 4])
    except (binascii.Error, ValueError):
        return False
    if len(der) < 8 or der[0] != 0x30:
        return False
    at = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    content = der[at:]
    if content[:3] in (b"\x02\x01\x00", b"\x02\x01\x01"):
        return True
    return content[:1] == b"\x30" and any(oid in der for oid in _ENCRYPTED_KEY_OIDS)


def private_key_body_start(text: str) -> int | None:
    """Where a private key's base64 body (no armour needed) starts in `text`, if one does."""
    if not any(start in text for start in _KEY_BODY_STARTS):
        return None
    for m in _KEY_BODY.finditer(text):
        if _private_key_der(m.group(0)):
            return m.start()
    return None


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
    # Found by where they are rather than by a provider's prefix (issue 38): a webhook URL's
    # documented path is its credential, a token may be a URL's user name, a `.netrc` password
    # follows its `password` word, a private key's base64 body says what it is in its first bytes.
    # Webhook URLs start at their scheme, as a URL's password does (scan tries each `://`), so
    # could_match needs no trigger of theirs in every line: a Teams URL holds an `@`, which rules
    # a line with `://` in, and so does `discord` (engine.Engine.could_match).
    Shape(
        "teams-webhook",  # https://TENANT.webhook.office.com/webhookb2/GUID@GUID/IncomingWebhook/HEX/GUID[/V2...]
        r"https?://[A-Za-z0-9\-]{1,63}\.webhook\.office\.com/webhookb2/(?P<secret>[A-Za-z0-9@/_\-]{40,400})",
        ("://",),
    ),
    Shape(
        "teams-webhook",  # the legacy host
        r"https?://outlook\.office(?:365)?\.com/webhook/(?P<secret>[A-Za-z0-9@/_\-]{40,400})",
        ("://",),
    ),
    Shape(
        "discord-webhook",  # https://discord.com/api[/v10]/webhooks/ID/TOKEN (and ptb., canary., discordapp.com)
        r"https?://(?:[a-z]{1,10}\.)?discord(?:app)?\.com/api(?:/v\d{1,2})?/webhooks/"
        r"(?P<secret>\d{15,21}/[A-Za-z0-9_\-]{60,100})",
        ("://",),
    ),
    Shape(
        "url-user-token",  # https://TOKEN@github.com/org/repo.git: a token as the user name, no password
        r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://(?P<secret>[A-Za-z0-9_\-.~%]{16,256})@",
        ("://",),
        _user_token,
    ),
    Shape(
        "netrc-password",  # `machine HOST login USER password SECRET`, on one line or several
        r"(?i:machine)(?:[ \t\r\n]|\\[nrt])+[^\s\"'\\]+(?:(?:[ \t\r\n]|\\[nrt])+(?i:login|account|port)(?:[ \t\r\n]|\\[nrt])+"
        r"[^\s\"'\\]+){0,3}(?:[ \t\r\n]|\\[nrt])+(?i:password)(?:[ \t\r\n]|\\[nrt])+(?P<secret>[^\s\"'\\]+)",
        ("machine",),
        held="passw",
    ),
    Shape(
        # .netrc's `password SECRET`: at a line's end (`machine HOST login USER password SECRET`, or
        # a line of its own when it is printed one token pair a line) or before the next entry.
        "netrc-password",
        r"(?<![^\n \t])(?i:password|passwd)[ \t]+(?P<secret>[^\s\"'\\;,]+)"
        r"(?=[ \t]*(?:[\r\n;,]|\\[rn]|$)|[ \t]+(?:machine|default)[ \t])",
        ("password", "passwd"),
        lambda v: looks_secret(v) and not placeholder_value(v),
    ),
    Shape("private-key", _KEY_BODY_PATTERN, _KEY_BODY_TRIGGERS, _private_key_der, in_run=True),
    # Shapes betterleaks' rules know only with their context (a host, a keyword nearby).
    Shape("artifactory-api-key", r"(?<![A-Za-z0-9])AKCp[A-Za-z0-9]{69}(?![A-Za-z0-9])", ("akcp",), in_run=True),
    Shape("artifactory-reference-token", r"(?<![A-Za-z0-9])cmVmdGtu[A-Za-z0-9]{56}(?![A-Za-z0-9])", ("cmvmdgtu",),
          in_run=True),
    Shape(
        "flyio-access-token",
        r"(?<![A-Za-z0-9_])(?:fo1_[A-Za-z0-9_\-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/=]{100,})(?![A-Za-z0-9_\-])",
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
        _has_both_cases,
        in_run=True,
    ),
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


