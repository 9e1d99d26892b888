"""The detector engine: the compiled detectors of one Redactor, scanning text, decoding, walking JSON.

A Redactor builds two of these from the same configuration, separately, so a scrubber that
misses a kind is still caught by the checker (redactor.py). What the detectors look for is
shapes.py's; which known values are skipped is decided here (`_ignorable_known`).

Over 800 lines, on purpose: this is rec's per-line hot path (the writer's throughput is measured
against the release before the rule set, docs/performance.md). The prefilters and gates at the
top (which trigger words, key ends and runs a line can hold before a detector runs) are tuned to
the exact scan in Engine that reads them, and each is tested against its plain definition
(tests/redact/test_prefilters.py); apart from that scan they would be a second description of it.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import hashlib
import hmac
import html
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, unquote

from mcptape.jsonrpc import dumps, loads, wire_dumps
from mcptape.placeholders import PATH_END, PATH_START, PLACEHOLDER_RE
from mcptape.redact import rules
from mcptape.redact.own_text import own_text
from mcptape.redact.shapes import (
    ALWAYS_MIN_LEN,
    B64_MIN_RUN,
    ENTROPY_MIN_LEN,
    KNOWN_MIN_LEN,
    MAX_DEPTH,
    TAG_KEY,
    TAG_MIN_BITS,
    Shape,
    allowed_value,
    field_is_secret,
    high_entropy,
    mask_escaped_placeholders,
    name_class,
    name_end_words,
    plain_value,
    private_key_body_start,
    shannon,
)

# A private key's armour, whole (BEGIN to END) or cut off (BEGIN and the body lines after it: the
# rest comes in later strings of the session, `pem_open`). Neither crosses a `"`: inside a JSON
# message's raw text that would take the message's own closing quotes and braces with it, and the
# tape's raw line would no longer be JSON. A string holds no raw `"` of a key (one in JSON text is `\"`).
_PEM_HEAD = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_BODY_CHARS = r"(?:[A-Za-z0-9+/=\s]|\\[nrt]|Proc-Type:[^\n\\\"]{0,80}|DEK-Info:[^\n\\\"]{0,120})"
_PEM = (
    _PEM_HEAD + r"(?:[^\"]{0,65536}?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|" + _PEM_BODY_CHARS + r"{0,65536})"
)
_PEM_BEGIN = re.compile(_PEM_HEAD)
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A string that continues a key cut off in an earlier one: body lines (64 characters of base64 each
# as PEM wraps them, the last shorter), its headers, or the END line after them.
_PEM_PIECE = r"(?:[A-Za-z0-9+/]{1,128}={0,2}|Proc-Type:[^\n]*|DEK-Info:[^\n]*)"
_PEM_BODY = re.compile(r"\s*" + _PEM_PIECE + r"(?:\s+" + _PEM_PIECE + r")*\s*")  # pieces apart: no backtracking
# Strings shorter than this that are no body line neither continue nor end a cut-off key: the
# protocol's own (`text`, `info`, `notifications/message`) sit between the lines one per message.
_PEM_QUIET = 24
_PEM_MAX_PIECES = 512  # a key is ~100 lines at most; past this a cut-off key is taken as ended
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = 200

# The key=value / key: value rule in text starts at a word a secret name ends with (shapes.py's
# table, `name_end_words`); the full key is then read back from there and judged by name_class.
_KV_WORDS = name_end_words()
_KV_NAMES = "(?i:" + "|".join(re.escape(w).replace("_", r"[_\-]?") for w in _KV_WORDS) + ")"
# Where the scan tries the kv branch: each word's first part (`session` of `session_id`).
_KV_TRIGGERS = tuple(sorted({w.split("_")[0] for w in _KV_WORDS}))
# Of these, the words ordinary text is full of (`path` holds `pat`, `author` holds `auth`) only
# count for could_match where they end a key: followed by `:` or `=` (after a quote or spaces).
_KV_PLAIN_TRIGGERS = frozenset({"session", "passphrase", "passw", "secret", "key", "token", "credential", "signature",
                                "authorization"})
# The word, the rest of the name after it (`SECRET_KEY_BASE`: the class of the whole name decides),
# the key's closing quote, the separator, the value's opening quote, the value.
_KV = (
    r"(?P<kvk>" + _KV_NAMES + r")(?P<kvt>[A-Za-z0-9_\-]{0,40}+)(?P<kvq>\\?[\"'])?[ \t]*(?P<kvs>[:=])[ \t]*"
    r"(?:(?P<kvl>\[)|(?P<kvo>\\?[\"'])?(?P<kvv>(?:(?i:bearer|basic|token|digest|bot)[ \t]+)?[^\s\"'\\&,;<>()\[\]{}]+))"
)
_KV_ITEM = re.compile(r"[ \t]*,?[ \t]*(\\?[\"'])")
_KV_RX = re.compile(_KV)
# A quoted value runs to its closing quote (a Django key holds `&`, `(` and `,`; a seed phrase spaces);
# an unquoted one in a `.env` line (KEY=value at a line's start) to the end of its line.
_KV_QUOTED_MAX = 1024
_ENV_VALUE = re.compile(r"[^\s\"'\\]+")
_LINE_START = re.compile(r"(?:^|\n|\\n|\r|\\r)(?:export[ \t]+)?[ \t]*$")
# An Authorization value is a scheme and credentials, whatever the scheme (`ApiKey`, `SSWS`,
# `Negotiate`, `Digest ...`): the credentials are the secret.
_ANY_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9._\-]*)[ \t]+(\S.*)", re.S)
_AUTH_PARAMS = re.compile(r"[A-Za-z0-9_\-]+=[^,]*,")  # `Digest username="x", response="..."`: the rest is its
_CREDENTIAL = re.compile(r"(?:<[^<>\s]{1,80}>|[^\s;,\"'\\<>])+")
_SCHEME_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{0,23}")  # `Bearer`, `ApiKey`, `SSWS`: no digit, no credential
_AUTH_REST = re.compile(r"(?:[^\r\n\"'\\<>]|<REDACTED:[^<>\s]{1,80}>|<[A-Za-z_\-]{1,40}>)+")  # a placeholder is a value
# Minified JavaScript and CSS (an MCP App's `ui://` HTML) are not key-value documents: `key:o==null?`
# is an object literal and `L.key===null` a comparison. In code, the name rule needs a quoted key or a
# real assignment, and a string literal for a value that looks like a token (`_token_literal`).
_CODE_MIN_LEN = 256
_CODE_PUNCTUATION = re.compile(r"[{};()]")
_CODE_MARKERS = ("function", "=>", "){", "};", "<script", "<style", "var ", "const ", "return ")
_COOKIE = r"(?<![A-Za-z0-9])(?P<ck>(?i:set-cookie|cookie))(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?(?P<ckv>[^\r\n\"\\]+)"
_COOKIE_ATTRS = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority", "partitioned"})
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "bot"})
_AUTH_SCHEME = re.compile(r"(?i)^(bearer|basic|token|digest|bot)\s+(\S.*)$", re.S)

_CLEAN_CACHE_LEN = 96
_CLEAN_CACHE_SIZE = 50_000
# Characters a trigger may be gated on in could_match, the rarer in ordinary text first.
_TRIGGER_GATES = "$<~_-\\\"/.:="
_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{" + str(B64_MIN_RUN) + r",}={0,2}")
_B64_ALPHABET = frozenset(string.ascii_letters + string.digits + "+/_-")
_B64_MASK = bytes(ord("a") if chr(i) in _B64_ALPHABET else ord(" ") for i in range(256))
_B64_NEEDLE = b"a" * B64_MIN_RUN


_NOISY_KV = frozenset(_KV_TRIGGERS) - _KV_PLAIN_TRIGGERS
# A joined name (`seed_phrase`) ends a key with its last word, whatever joins it.
_NOISY_WORDS = frozenset(w.split("_")[-1] for w in _KV_WORDS if w.split("_")[0] in _NOISY_KV)


def _prune(triggers: set[str] | frozenset[str]) -> list[str]:
    """The triggers no other one is a prefix of, sorted. Each trigger's own prefixes are looked up
    (a few dozen), not every other trigger compared (an engine holds hundreds: the pairwise test
    was most of an engine's construction, which ci pays three times a run)."""
    return sorted(t for t in triggers if not any(t[:end] in triggers for end in range(len(t))))


def _ends_a_key(low: str, words: tuple[str, ...]) -> bool:
    """Whether one of `words` (whole last words of secret names) ends a key in `low`: is followed
    by a quote after up to 7 backslashes, spaces, then `:` or `=`. Searched in the reversed text,
    where the pattern starts with the `:` (or `=`), a literal the regex engine skips to: 19
    substring searches of a 1 KB line cost ~8 µs, this ~1."""
    return _key_end_found(low, *_reversed_key_end(words))


def _key_end_found(low: str, colon: re.Pattern[str], equals: re.Pattern[str]) -> bool:
    """_ends_a_key with its words' regexes (could_match keeps them: no cache lookup a line)."""
    rev = low[::-1]
    return colon.search(rev) is not None or ("=" in rev and equals.search(rev) is not None)


@functools.lru_cache(maxsize=8)
def _reversed_key_end(words: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A word, an optional quote after up to 7 backslashes (JSON text in a string in a `raw` in a
    tape line escapes it three times), spaces or tabs, then `:`; and the same
    with `=`; each reversed (longest word first). Possessive (`*+`, `?+`): each word ends with a letter, so giving back a space, a quote or a
    backslash never lets one match; backtracking into them only retried every word."""
    alternatives = "|".join(re.escape(w[::-1]) for w in sorted(words, key=lambda w: (-len(w), w)))
    tail = r"[ \t]*+(?:[\"']\\{0,7}+)?+(?:" + alternatives + ")"
    return re.compile(":" + tail), re.compile("=" + tail)


# scan reads the keys of a text rather than search it for every name trigger when it has fewer
# than one `:` or `=` per this many characters (prose, an image); else it searches (a JSON document).
KEY_SPAN_RATIO = 64
_NAME_CHARS = frozenset(string.ascii_lowercase + string.digits + "_-")


def _key_spans(low: str) -> list[tuple[int, int]]:
    """Where in `low` a key=value or cookie branch's name can lie: the run of name characters
    that ends before each `:` and `=` (after spaces, and a quote after up to 7 backslashes)."""
    spans = []
    for sep in ":=":
        q = low.find(sep)
        while q != -1:
            end = q
            while end > 0 and low[end - 1] in " \t":
                end -= 1
            if end > 0 and low[end - 1] in "\"'":
                end -= 1
                for _ in range(7):
                    if end > 0 and low[end - 1] == "\\":
                        end -= 1
            start = end
            while start > 0 and low[start - 1] in _NAME_CHARS:
                start -= 1
            if start < end:
                spans.append((start, end))
            q = low.find(sep, q + 1)
    return spans


def _gate(trigger: str) -> str:
    """The character of `_TRIGGER_GATES` a trigger is grouped under ("" if it holds none)."""
    return next((c for c in _TRIGGER_GATES if c in trigger), "")


# A group of triggers sharing a gate character is read at each occurrence of the gate (one
# startswith per offset) while occurrences x (offsets + 1) x this stays under triggers x
# (length + 128), else searched for trigger by trigger: a test at an occurrence costs about as
# much as a search through this many characters, a search ~128 more (measured, 0.2-2 KB lines).
_AT_GATE_COST = 256


@dataclass(frozen=True)
class _GateGroup:
    """Triggers that all hold `gate` ("" none of _TRIGGER_GATES), by the offset of its first
    occurrence in each (by_offset): every occurrence of a trigger has the gate there."""

    gate: str
    triggers: tuple[str, ...]
    by_offset: tuple[tuple[int, tuple[str, ...]], ...]

    @classmethod
    def of(cls, gate: str, triggers: list[str]) -> _GateGroup:
        by_offset: dict[int, list[str]] = {}
        for t in triggers if gate else ():
            by_offset.setdefault(t.index(gate), []).append(t)
        return cls(gate, tuple(triggers), tuple((at, tuple(ts)) for at, ts in sorted(by_offset.items())))

    def found_in(self, low: str) -> bool:
        """`any(t in low for t in self.triggers)`. Where the gate is rare (`_meta` and a snake_case
        key or two in a line), read where it occurs rather than searched for trigger by trigger
        through all of `low`: sixteen `_` triggers cost ~9 µs a 1 KB line that way."""
        gate = self.gate
        if not gate:
            return any(t in low for t in self.triggers)
        n = low.count(gate)
        if not n:
            return False
        if n * (len(self.by_offset) + 1) * _AT_GATE_COST >= len(self.triggers) * (len(low) + 128):
            return any(t in low for t in self.triggers)
        p = low.find(gate)
        while p != -1:
            for at, triggers in self.by_offset:
                if p >= at and low.startswith(triggers, p - at):
                    return True
            p = low.find(gate, p + 1)
        return False


def _cut_tails(text: str, start: int, end: int, inside: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of a rule's span [start, end) outside the hits `inside` it (sorted) that one of
    them cut off mid-token: a hit edge with a letter or digit inside and a token character (base64's
    included) outside. Parts a hit ends at a separator (a URL's `:` or `@` around its password)
    stay: ours cut finer there."""
    parts = []
    pos = start
    for s, e in [*inside, (end, end)]:
        a, b = pos, min(max(s, pos), end)
        # a: where one of ours ends (its last character text[a - 1]); b: where the next starts.
        cut_before = a > start and 0 < a < len(text) and text[a - 1].isalnum() and _in_token(text[a])
        cut_after = b < end and 0 < b < len(text) and _in_token(text[b - 1]) and text[b].isalnum()
        if a < b and (cut_before or cut_after):
            parts.append((a, b))
        pos = max(pos, e)
    return parts


def _in_token(c: str) -> bool:
    return c.isalnum() or c in "+/=_-"


_IN_RUN_MIN = 36  # the shortest match of a Shape.in_run shape (a key's DER body: `MII` + 33)


def _mixed(run: str) -> bool:
    return run.lower() != run and run.upper() != run


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
_B64_EDGE = frozenset(string.ascii_letters + string.digits + "+/")
# Maximal runs of URL-safe characters and escapes, possessive (`++`: no backtracking), so each
# character is looked at once; a run is decoded only if it holds an escape. The form these
# replaced (`(?:c|esc)*esc(?:c|esc)*`) backtracked through every long base64 run in a text that
# also held a `%` or `\u`: 26 s for 40 KB, quadratic.
_PCT_RUN = re.compile(r"(?:[A-Za-z0-9._~+\-]++|%[0-9A-Fa-f]{2})++")
_U_RUN = re.compile(r"(?:[A-Za-z0-9._~+/=\-]++|\\u[0-9A-Fa-f]{4})++")


def _requote(text: str) -> str:
    """Percent-encode scrubbed text again, leaving our placeholders readable."""
    out, last = [], 0
    for m in PLACEHOLDER_RE.finditer(text):
        out += [quote(text[last : m.start()], safe=""), m.group(0)]
        last = m.end()
    out.append(quote(text[last:], safe=""))
    return "".join(out)



def looks_like_code(text: str) -> bool:
    """Whether a text is (or holds) code: long, dense in `{};()`, with a word code is made of."""
    if len(text) < _CODE_MIN_LEN or not any(marker in text for marker in _CODE_MARKERS):
        return False
    return len(_CODE_PUNCTUATION.findall(text)) * 25 >= len(text)


def _code_assignment(m: re.Match[str], text: str) -> bool:
    """Whether a key=value match in code is a real assignment or a quoted key (`"apiKey": "..."`,
    `API_KEY = "..."`), not an object literal's `key:`, a ternary's `:` or a `===` comparison;
    and the value a string literal."""
    if not m.group("kvo"):
        return False
    if m.group("kvs") == ":":
        return bool(m.group("kvq"))
    after = m.end("kvs")
    before = m.start("kvs") - 1
    return not (after < len(text) and text[after] in "=>") and not (before >= 0 and text[before] in "=!<>")


def _token_literal(value: str) -> bool:
    """A string literal in code that looks like a credential: 8+ characters, no spaces, not an
    identifier of words (`same-origin`), and a digit, or mixed case, or a symbol."""
    v = value.strip()
    if len(v) < ENTROPY_MIN_LEN or any(c.isspace() for c in v) or _IDENTIFIER_LITERAL.fullmatch(v):
        return False
    return any(c.isdigit() for c in v) or (v.lower() != v and v.upper() != v) or not v.isalnum()


_IDENTIFIER_LITERAL = re.compile(r"[a-z][a-z0-9]*(?:[_\-.][a-z0-9]+)*")


def _closing_quote(text: str, start: int, opening: str) -> int | None:
    """Where the value that starts at `start` after the quote `opening` (`"`, `'`, or `\\"` inside
    JSON text) ends: its closing quote on the same line, within _KV_QUOTED_MAX characters."""
    limit = min(len(text), start + _KV_QUOTED_MAX)
    i = start
    while i < limit:
        c = text[i]
        if c in "\r\n":
            return None
        if opening.startswith("\\"):
            if c == "\\" and text.startswith(opening, i):
                return i
            if c == "\\":
                i += 2
                continue
        elif c == "\\":
            i += 2
            continue
        elif c == opening:
            return i
        i += 1
    return None


# --------------------------------------------------------------------------------------------
# known values


def _ignorable_known(value: str, allow: frozenset[str]) -> bool:
    """Known values that cannot be told apart from ordinary text, or are not secret at all."""
    v = value.strip()
    if len(v) < KNOWN_MIN_LEN or v in allow or allowed_value(v, allow):
        return True
    # true/false, a number, a credential-free path or URL (a data directory, a server URL) are
    # configuration, not secrets; a URL with userinfo, a query or a fragment is kept as a secret.
    if plain_value(v):
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


def known_parts(source: str, value: str) -> list[tuple[str, str]]:
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
class EngineConfig:
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
    rule: bool = False  # found by the maintained rule set (rules.py), not by our own detectors
    context: bool = False  # a secret by the name before it (`key=value` in text), not by its own shape


class Engine:
    """A compiled set of detectors. Redactor holds two, built separately: one scrubs, one verifies."""

    def __init__(self, config: EngineConfig, shapes: Sequence[Shape], *, rules: bool = True) -> None:
        """`rules`: whether the maintained rule set (rules.py) runs too; off only to inject a fault."""
        self.config = config
        self.shapes = list(shapes)
        self.use_rules = rules
        self._edges_ok = True  # False while a decoded run cut out of a longer base64 one is scanned
        self._code: bool | None = None  # whether the text being scanned is code (_in_code; None: not known yet)
        self.pem_open = False
        self.pem_pieces = 0  # strings a cut-off key has continued in since its BEGIN
        self.named_values: list[tuple[str, str]] = []  # (kind, value) the names of this message's fields made secret
        self._clean: set[str] = set()  # short strings known to hold nothing (a cache, not state)
        self._known_text: dict[str, str] = {}  # literal form -> source
        self._known_core: dict[str, str] = {}  # base64 core -> source
        for source, value in sorted(config.known.items()):
            for src, part in known_parts(source, value):
                if _ignorable_known(part, config.allow):
                    continue
                forms, cores = _known_forms(part)
                for f in forms:
                    self._known_text.setdefault(f, src)
                for c in cores:
                    self._known_core.setdefault(c, src)
        self.literals = set(self._known_text) | set(self._known_core)
        self._compile()
        self._index_triggers()

    def fork(self) -> Engine:
        """This engine's compiled detectors (shared: they are only read) with scanning state of its
        own: a PEM block open, a decoded run's edges, the clean-text cache (Redactor.fork)."""
        twin = copy.copy(self)
        twin._edges_ok = True
        twin.pem_open = False
        twin.pem_pieces = 0
        twin.named_values = []
        twin._clean = set()
        return twin

    def _compile(self) -> None:
        """One regex of every detector, each an outer group (lastgroup names the one that matched)."""
        config = self.config
        branches = [r"(?P<skip>" + PLACEHOLDER_RE.pattern + r"|\$\{\{[^}]{0,200}\}\})"]
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
        self._back = {t: shape.back for shape in self.shapes if shape.back for t in shape.triggers}
        self._run_regex = re.compile("|".join(run_branches)) if run_branches else None
        branches.append("(?P<cookie>" + _COOKIE + ")")  # outer groups: lastgroup names the branch
        branches.append("(?P<kv>" + _KV + ")")
        if config.home:
            # As a path, never inside a URL's authority nor a longer path (placeholders.PATH_START).
            branches.append(PATH_START + "(?P<home>" + re.escape(config.home) + ")" + PATH_END)
        if config.user:
            branches.append(r"(?<![A-Za-z0-9_])(?P<user>(?i:" + re.escape(config.user) + r"))(?![A-Za-z0-9_])")
        self.regex = re.compile("|".join(branches))

    def _index_triggers(self) -> None:
        """The lowercase substrings one of which every hit holds: could_match and scan look for them first."""
        config = self.config
        triggers = {"<redacted:", "<home>", "<user>", "${{", "-----begin", "cookie", *_KV_TRIGGERS}
        for shape in self.shapes:
            triggers.update(t for t in shape.triggers if t != "://")
        triggers.update(lit.lower() for lit in self.literals)
        if config.home:
            triggers.add(config.home.lower())
        if config.user:
            triggers.add(config.user.lower())
        # A trigger that contains another is redundant: the shorter one finds the same places.
        self.triggers = _prune(triggers)
        # could_match leaves the noisy name words to `_ends_a_key` (below); it keeps the old
        # plain ones (`passw`, not `pass`, which `passed` holds).
        quiet = _prune((triggers - _NOISY_KV) | _KV_PLAIN_TRIGGERS)
        # Triggers could_match need not search for: a mixed-case base64 run rules a line in before
        # any trigger is (Shape.in_run), and a match that holds another trigger is found by that
        # one (Shape.held).
        spared = {t for shape in self.shapes if shape.in_run and config.decode for t in shape.triggers}
        spared |= {t for shape in self.shapes if shape.held and shape.held in quiet for t in shape.triggers}
        quiet = [t for t in quiet if t not in spared]
        # The whole noisy words (`pwd`, `pin`), each tested where it ends: one that holds a quiet
        # trigger (`apikey` holds `key`) is found by that trigger already.
        # (nor one that ends with another: `onetimecode` ends a key where `code` does).
        self._noisy = tuple(sorted(w for w in _NOISY_WORDS if not any(t in w for t in quiet)
                                   and not any(o != w and w.endswith(o) for o in _NOISY_WORDS)))
        self._noisy_key_end = _reversed_key_end(self._noisy) if self._noisy else None
        # The triggers as they read inside JSON text: once escaped (a message's strings in a tape
        # line) and twice (a `raw` message inside one). Only a literal holding a quote, a
        # backslash or a control character differs (a known value, a Windows home).
        escaped = {_json_escaped(t) for t in quiet}
        escaped |= {_json_escaped(t) for t in escaped}
        json_triggers = sorted(set(quiet) | escaped)
        # For could_match, grouped by a character each holds that prose and JSON keys seldom do
        # (`ghp_`, `sk-`, `<redacted:`): a group whose character is absent is passed over with
        # one single-character test instead of a search per literal. The rest ("") always run.
        # A trigger holding another (`accountkey=` holds `key`) can be left out of this test: it
        # is never present where the shorter one is not.
        groups: dict[str, list[str]] = {}
        for t in json_triggers:
            if not any(o != t and o in t for o in json_triggers):
                groups.setdefault(_gate(t), []).append(t)
        self._trigger_groups = tuple(_GateGroup.of(gate, group) for gate, group in sorted(groups.items()))
        # scan's candidates come from every trigger (positions matter there), grouped the same way.
        scan_groups: dict[str, list[str]] = {}
        for t in self.triggers:
            scan_groups.setdefault(_gate(t), []).append(t)
        self._scan_groups = tuple((gate, tuple(group)) for gate, group in sorted(scan_groups.items()))
        # The triggers that start nothing but the key=value and cookie branches (no shape, known
        # value or path starts with one): those branches need the name to end a key (a quote,
        # spaces, `:` or `=`), so in a long text with few of those, scan looks for these triggers
        # in its keys only (_key_spans), not through the whole text (an image: 64 KB each).
        kv_sources = {*_KV_TRIGGERS, "cookie"}
        # What else starts at a trigger, a kv word too or not (`password` starts the netrc shape).
        others = (triggers - kv_sources) | {t for shape in self.shapes for t in shape.triggers if t != "://"}
        # The triggers that start nothing but Shape.in_run shapes (scan looks for them only in a text
        # with a long mixed-case base64 run).
        in_run = {t for shape in self.shapes if shape.in_run for t in shape.triggers}
        not_in_run = {t for shape in self.shapes if not shape.in_run for t in shape.triggers} | {*_KV_TRIGGERS, "cookie"}
        self._in_run_only = frozenset(t for t in self.triggers if t in in_run and t not in not_in_run)
        self._kv_only = frozenset(
            t for t in self.triggers if t in kv_sources and not any(o.startswith(t) for o in others)
        )
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
        if self.config.patterns or ("\\" in text and ("\\u" in text or "\\/" in text)) or '"b64"' in text:
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
        if "://" in low and ("@" in low or "discord" in low):  # user info, a Teams or Discord webhook
            return True
        for group in self._trigger_groups:
            if group.gate in low and group.found_in(low):  # the gate first: most groups' is absent
                return True
        if self._noisy_key_end is not None and _key_end_found(low, *self._noisy_key_end):
            return True
        return self.use_rules and rules.finds_any(text)

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
        self._code = None  # known once a name rule asks (_in_code): most texts never need to be read for it
        low = text.lower()
        if len(low) != len(text):
            return self._scan_everywhere(text)  # lower() changed lengths (rare scripts): no position map
        candidates: set[int] = set()
        key_spans = None
        if self._kv_only and (low.count(":") + low.count("=")) * KEY_SPAN_RATIO < len(low):
            key_spans = _key_spans(low)
        runs = _b64_runs(text) if len(text) >= B64_MIN_RUN else []
        # Triggers of shapes that lie in a long mixed-case base64 run (Shape.in_run): looked for only
        # in a text that has one (an image's run, a key's body), not through all prose and JSON.
        in_runs = bool(self._in_run_only) and any(e - s >= _IN_RUN_MIN and _mixed(text[s:e]) for s, e in runs)
        for gate, literals in self._scan_groups:
            if gate and gate not in low:
                continue
            for lit in literals:
                if not in_runs and lit in self._in_run_only:
                    continue
                if key_spans is not None and lit in self._kv_only:
                    for start, end in key_spans:
                        i = low.find(lit, start, end)
                        while i != -1:
                            candidates.add(i)
                            i = low.find(lit, i + 1, end)
                    continue
                back = self._back.get(lit, 0)
                i = low.find(lit)
                while i != -1:
                    candidates.add(max(0, i - back))
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
            candidates.update(start for start, _ in runs if text[start] in self._run_first)
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
                if m.end() > m.start() and not inside_placeholder and not allowed_value(m.group(0), cfg.allow):
                    hits.append(Hit(m.start(), m.end(), "pattern", m.group(0)))
        if any(h.kind == "aws-access-key-id" for h in hits):
            hits.extend(self._aws_secrets(text, hits))
        if self.use_rules:
            # Ours first where both see a secret: they cut finer (a URL's password, not the URL).
            own = [(h.start, h.end) for h in hits] + skips
            for start, end, rule in rules.spans(text):
                value = text[start:end]
                # A value the rule set reads may start with `$` (Asaas keys are `$aact_...`): it is
                # not a `$NAME` reference there, which allowed_value lets through.
                bare = value[1:] if value.startswith("$") and not value.startswith("${") else value
                if allowed_value(bare, cfg.allow):
                    continue
                inside = sorted((s, e) for s, e in own if s < end and start < e)
                if not inside:
                    hits.append(self._named(Hit(start, end, rule, value, rule=True)))
                    continue
                # ... unless one of ours stops inside a token the rule reads whole (our shape took
                # `sk_live_` and 24 characters of a longer key): the rest of it is the rule's.
                for a, b in _cut_tails(text, start, end, inside):
                    hits.append(self._named(Hit(a, b, rule, text[a:b], rule=True)))
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
            if self._in_code(text) and not (m.start("ck") > 0 and text[m.start("ck") - 1] in "\"'"):
                return None  # in code, `cookie:` is an object literal's key (a quoted one is data)
            hits = self._cookie(m.start("ckv"), m.group("ckv"))
            if hits:
                return hits
            if "=" in m.group("ckv"):
                return None  # `name=value` pairs, each judged (and allowed) by _cookie
            kv = _KV_RX.match(text, m.start("ck"))  # `"session_cookie": "<token>"`: a bare value
            return self._kv(kv, text) if kv else None
        if group == "kv":
            return self._kv(m, text)
        if group and group.startswith("s"):
            i = int(group[1:])
            shape = self.shapes[i]
            if shape.direct_only and not self._edges_ok:
                return None  # this decoded run's ends are no delimiters (Shape.direct_only)
            sv = f"sv{i}"
            span = m.span(sv) if sv in m.re.groupindex and m.group(sv) is not None else m.span()
            value = text[span[0] : span[1]]
            if shape.check is not None and not shape.check(value):
                return None
            if allowed_value(value, cfg.allow):
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
        cls = name_class(text[start : m.end("kvt")])
        if cls is None:
            return None
        if m.group("kvl") is not None:
            return None if self._in_code(text) else self._kv_list(m.end("kvl"), text, cls)
        value, vstart = m.group("kvv"), m.start("kvv")
        opening, separator = m.group("kvo"), m.group("kvs")
        code = self._in_code(text)
        if code and not _code_assignment(m, text):
            return None
        if _PEM_BEGIN.match(text, vstart):
            # `"private_key": "-----BEGIN PRIVATE KEY-----\n...` (a GCP service-account key): the
            # value is the whole block, which the pem branch takes from here to its END line.
            return None
        if opening:
            close = _closing_quote(text, vstart, opening)
            if close is not None:
                value = text[vstart:close]
        elif cls[1].endswith("authorization"):
            rest = _AUTH_REST.match(text, vstart)
            value = rest.group(0).rstrip() if rest else value
        elif separator == "=" and _LINE_START.search(text, max(0, start - 12), start):
            env = _ENV_VALUE.match(text, vstart)
            value = env.group(0) if env else value
        if code and not _token_literal(value):
            return None
        if cls[1].endswith("authorization"):
            return self._authorization(text, vstart, value)
        scheme = _AUTH_SCHEME.match(value)
        if scheme:
            # `token: Bearer x`, `Bot x`: a shape that starts at the scheme or at the token names it
            # (bearer-token, basic-auth, discord-bot-token); each is tested by that kind.
            if self._shape_at(text, vstart) or self._shape_at(text, vstart + scheme.start(2)):
                return None
            vstart += scheme.start(2)
            value = scheme.group(2)
        elif value.lower() in _SCHEMES:
            return None  # `token: Bearer <REDACTED:...>`: the scheme word alone is no secret
        if not field_is_secret(cls[0], value, self.config.allow):
            return None
        kind = self._classify(value, cls[1])
        return [self._named(Hit(vstart, vstart + len(value), kind, value, context=kind == cls[1]))]

    def _kv_list(self, pos: int, text: str, cls: tuple[str, str]) -> list[Hit] | None:
        """`"recovery_codes": ["...", "..."]` in text: each quoted item, judged under the name."""
        hits: list[Hit] = []
        while (item := _KV_ITEM.match(text, pos)) is not None and len(hits) < 64:
            close = _closing_quote(text, item.end(), item.group(1))
            if close is None:
                break
            value = text[item.end() : close]
            if field_is_secret(cls[0], value, self.config.allow):
                hits.append(self._named(Hit(item.end(), close, cls[1], value, context=True)))
            pos = close + len(item.group(1))
        return hits or None

    def _in_code(self, text: str) -> bool:
        """Whether `text`, the text being scanned, is code (looks_like_code), read once per scan."""
        if self._code is None:
            self._code = looks_like_code(text)
        return self._code

    def _authorization(self, text: str, vstart: int, value: str) -> list[Hit] | None:
        """An Authorization (or Proxy-Authorization) value: the credentials after its scheme,
        whatever the scheme, or the whole value without one. A token shape there names the kind."""
        if self._shape_at(text, vstart):
            return None
        scheme = _ANY_SCHEME.fullmatch(value)
        kind = "authorization"
        if scheme:
            if self._shape_at(text, vstart + scheme.start(2)):
                return None
            kind = {"bearer": "bearer-token", "basic": "basic-auth"}.get(scheme.group(1).lower(), kind)
            vstart += scheme.start(2)
            value = scheme.group(2).rstrip()
            if not _AUTH_PARAMS.match(value):
                # A token (token68), then whatever text goes on; an escaped placeholder is one token.
                token = _CREDENTIAL.match(mask_escaped_placeholders(value))
                value = value[: token.end()] if token else value
        elif _SCHEME_WORD.fullmatch(value):
            return None  # `Authorization: ApiKey <REDACTED:...>`: the scheme word alone is no secret
        if not field_is_secret("always", value, self.config.allow):
            return None
        return [self._named(Hit(vstart, vstart + len(value), kind, value, context=True))]

    def _shape_at(self, text: str, pos: int) -> bool:
        """Whether a token shape (or a known value) starts at `pos` and accepts what it matches."""
        m = self.regex.match(text, pos)
        group = m.lastgroup if m is not None else None
        if m is None or group is None or not (group == "known" or (group.startswith("s") and group[1:].isdigit())):
            return False
        return bool(self._handle(m, group, text))

    def _cookie(self, offset: int, value: str) -> list[Hit]:
        hits = []
        for pm in re.finditer(r"([^=;\s]+)=([^;]*)", mask_escaped_placeholders(value)):
            name, val = pm.group(1), value[pm.start(2) : pm.end(2)].strip()
            if name.lower() in _COOKIE_ATTRS or not val or allowed_value(val, self.config.allow):
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

    def decoded_hits(self, text: str, depth: int, sink: Sink, path: str) -> list[tuple[int, int, str]]:
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
                if "%" not in m.group(0):
                    continue
                decoded = unquote(m.group(0))
                if decoded == m.group(0):
                    continue
                inner = self._run_text(text, m, decoded, depth, sink, path)
                if inner != decoded:
                    out.append((m.start(), m.end(), _requote(inner)))
        if "\\u" in text:
            for m in _U_RUN.finditer(text):
                if "\\u" not in m.group(0):
                    continue
                try:
                    decoded = json.loads('"' + m.group(0) + '"')
                except ValueError:
                    continue
                inner = self._run_text(text, m, decoded, depth, sink, path)
                if inner != decoded:
                    out.append((m.start(), m.end(), json.dumps(inner)[1:-1]))
        # Overlaps (a percent run inside a base64 run): keep the earliest, widest.
        out.sort(key=lambda t: (t[0], -t[1]))
        kept: list[tuple[int, int, str]] = []
        for t in out:
            if not kept or t[0] >= kept[-1][1]:
                kept.append(t)
        return kept

    def _run_text(self, text: str, m: re.Match[str], decoded: str, depth: int, sink: Sink, path: str) -> str:
        """A percent or `\\u` run's decoded text, scrubbed. Such a run stops at the first character
        it cannot hold (`/` for percent runs): if that character, or the one before the run,
        continues a base64 run, the run's ends are no delimiters (Shape.direct_only)."""
        edges_ok = not (
            (m.start() > 0 and text[m.start() - 1] in _B64_EDGE)
            or (m.end() < len(text) and text[m.end()] in _B64_EDGE | {"="})  # `=` before: a query value
        )
        saved, self._edges_ok = self._edges_ok, self._edges_ok and edges_ok
        try:
            return self.text(decoded, depth + 1, sink, path)
        finally:
            self._edges_ok = saved

    def text(self, text: str, depth: int, sink: Sink, path: str = "") -> str:
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

    def _text(self, text: str, depth: int, sink: Sink, path: str) -> str:
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

    def _pem_continuation(self, text: str, sink: Sink, path: str) -> str:
        """A string after a private key that was cut off (`pem_open`): body lines and the END line
        are the key's, printed one line per message, content block, array item or stderr line.
        The protocol's own short strings between them (`text`, `info`) neither continue nor end it."""
        end = _PEM_END.search(text)
        if end and _PEM_BODY.fullmatch(text, 0, end.start()) or (end and not text[: end.start()].strip()):
            self.pem_open = False
            sink.hit("private-key", text[: end.end()], path, False)
            return self.placeholder("private-key", text[: end.end()], False) + text[end.end() :]
        stripped = text.strip()
        if _PEM_BODY.fullmatch(text) and _body_line(stripped):
            self.pem_pieces += 1
            if self.pem_pieces > _PEM_MAX_PIECES:
                self.pem_open = False
            sink.hit("private-key", text, path, False)
            return self.placeholder("private-key", text, False)
        if len(stripped) < _PEM_QUIET or PLACEHOLDER_RE.fullmatch(stripped):
            return text
        self.pem_open = False
        return text

    def _string(self, value: str, name: str | None, sink: Sink, path: str) -> str:
        """One string of a walked message or event, scrubbed (by its field's name too), in order:
        a private key cut off in an earlier string of the session goes on in this one
        (_pem_continuation), and one cut off here makes the strings after it its continuation."""
        rest = self._pem_continuation(value, sink, path) if self.pem_open else value
        before = sink.count
        out = self.field(name, rest, sink, path) if name is not None else self.text(rest, 0, sink, path)
        # A key starts here only where its armour is, or where a detector found its body.
        found_key = sink.count != before and sink.last_kind == "private-key"
        if not self.pem_open and (found_key or "-----BEGIN" in rest) and _cuts_off_a_key(rest):
            self.pem_open, self.pem_pieces = True, 0
        return out

    def placeholder(self, kind: str, value: str, named: bool) -> str:
        if named or kind in ("home", "user"):
            return {"home": "<HOME>", "user": "<USER>"}.get(kind, f"<REDACTED:{kind}>")
        if len(value) * shannon(value) < TAG_MIN_BITS:
            return f"<REDACTED:{kind}>"
        tag = hmac.new(TAG_KEY + self.config.salt, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return f"<REDACTED:{kind}#{tag.hexdigest()[:8]}>"

    # -- objects ----------------------------------------------------------------------------

    def obj(self, value: Any, sink: Sink, path: str = "$", name: str | None = None) -> Any:
        """A deep copy of a JSON-like value with every string scrubbed; `name` is its field name."""
        if isinstance(value, str):
            return self._string(value, name, sink, path)
        if isinstance(value, int) and not isinstance(value, bool) and name is not None:
            return self._number(value, name, sink, path)
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
                if isinstance(before, str) and before.startswith("-") and name_class(before):
                    item_name = before
                result.append(self.obj(item, sink, f"{path}[{i}]", item_name))
            return result
        return value

    def _number(self, value: int, name: str, sink: Sink, path: str) -> int | str:
        """A number under a one-time code's or PIN's name (`"otp": 493817`) is that code: replaced
        by its placeholder (a string), as the same digits in a string are. Other numbers stay."""
        cls = name_class(name)
        if cls is None or cls[0] != "digits" or not field_is_secret("digits", str(value), self.config.allow):
            return value
        sink.hit(cls[1], str(value), path, False)
        return self.placeholder(cls[1], str(value), False)

    def field(self, name: str, value: str, sink: Sink, path: str) -> str:
        scrubbed = self.text(value, 0, sink, path)
        cls = name_class(name)
        if cls is None or scrubbed != value or PLACEHOLDER_RE.search(value):
            return scrubbed  # already scrubbed (now, or by an earlier pass: keep redaction idempotent)
        allow = self.config.allow
        if cls[1] in ("cookie", "set-cookie"):
            hits = self._cookie(0, value)
            if hits:
                return self._apply(value, hits, sink, path)
            if "=" in value or not field_is_secret("always", value, allow):
                return value  # a bare value (no `name=`) is the cookie's secret itself
            stripped = value.strip()
            start = value.index(stripped)
            return self._by_name(value, [Hit(start, start + len(stripped), cls[1], stripped)], sink, path)
        stripped = value.strip()
        start = value.index(stripped)
        if cls[1].endswith("authorization"):
            found = self._authorization(value, start, stripped)
            return self._by_name(value, found, sink, path) if found else value
        if field_is_secret(cls[0], value, allow):
            return self._by_name(value, [Hit(start, start + len(stripped), self._classify(stripped, cls[1]), stripped)],
                                 sink, path)
        return value

    def _by_name(self, value: str, hits: list[Hit], sink: Sink, path: str) -> str:
        """`value` with what its field's name makes secret replaced; each such value is kept for
        the message's other copies of it (`copies`: structuredContent's text in content[0].text)."""
        self.named_values.extend((h.kind, h.value) for h in hits if not h.named)
        return self._apply(value, hits, sink, path)

    def _apply(self, text: str, hits: list[Hit], sink: Sink, path: str) -> str:
        parts, last = [], 0
        for h in hits:
            parts.append(text[last : h.start])
            parts.append(self.placeholder(h.kind, h.value, h.named))
            sink.hit(h.kind, h.value, path, h.named)
            last = h.end
        parts.append(text[last:])
        return "".join(parts)

    # -- events -----------------------------------------------------------------------------

    def event(self, event: Mapping[str, Any], sink: Sink, path: str = "$") -> dict[str, Any]:
        out: dict[str, Any] = {}
        # `raw` and `msg` are one message twice: each is read from the state the event began in
        # (a key cut off before it), and the state after it is the message's, read once.
        before = (self.pem_open, self.pem_pieces)
        after: tuple[bool, int] | None = None
        self.named_values = []
        for k, v in event.items():
            sub = _join(path, k)
            if k in ("raw", "msg"):
                if after is not None:
                    self.pem_open, self.pem_pieces = before
                out[k] = self.raw(v, sink, sub) if k == "raw" and isinstance(v, str) else self.obj(v, sink, sub, None)
                if after is None:
                    after = (self.pem_open, self.pem_pieces)
                else:
                    self.pem_open, self.pem_pieces = after
            elif k == "b64" and isinstance(v, str) and event.get("kind") == "garbage":
                text = self.b64_payload(v, sink, sub)
                if text is None:
                    out[k] = v
                else:
                    out["text"] = text
            else:
                out[k] = self.obj(v, sink, sub, None)
        if self.named_values:
            self._copies(out, sink, path)
        if "raw" in out and "msg" in out and out["raw"] == dumps(out["msg"]):
            del out["raw"]  # the scrubbed raw is now just the compact form of the scrubbed msg
        return out

    def _copies(self, out: dict[str, Any], sink: Sink, path: str) -> None:
        """Every other copy, in the same message, of a value a field's name made secret: servers
        send structuredContent with its JSON text in content[0].text, where a name may not stand
        next to the value (`"phrase": ...` read as `"seed_phrase"` there) or the value is cut."""
        found = {v: kind for kind, v in self.named_values if len(v) >= KNOWN_MIN_LEN}
        self.named_values = []
        if not found:
            return
        forms = {f: (kind, v) for v, kind in found.items() for f in {v, _json_escaped(v), json.dumps(v)[1:-1]}}
        rx = re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)))

        def replace(value: Any, where: str) -> Any:
            if isinstance(value, str):
                if not any(f in value for f in forms):
                    return value
                def one(m: re.Match[str]) -> str:
                    kind, secret = forms[m.group(0)]
                    sink.hit(kind, secret, where, False)
                    return self.placeholder(kind, secret, False)
                return rx.sub(one, value)
            if isinstance(value, dict):
                return {k: replace(v, _join(where, k)) for k, v in value.items()}
            if isinstance(value, list):
                return [replace(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return value

        for k in ("msg", "raw", "text"):
            if k in out:
                out[k] = replace(out[k], _join(path, k))

    def raw(self, raw: str, sink: Sink, path: str) -> str:
        """Exact wire text: scrubbed as text, then as parsed JSON (finds `\\u`-escaped secrets).

        Parsed depth-capped (jsonrpc.loads: too-deep parts stay text, scrubbed as text above).
        """
        scrubbed = self.text(raw, 0, sink, path)
        try:
            parsed = loads(scrubbed)
        except ValueError:
            return scrubbed
        walked = self.obj(parsed, sink, path)
        return wire_dumps(walked) if walked != parsed else scrubbed

    def b64_payload(self, b64: str, sink: Sink, path: str) -> str | None:
        """A garbage line's bytes: scrubbed text form if a secret is inside, else None (keep b64)."""
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            return None
        text = data.decode("utf-8", "backslashreplace")
        before = sink.count
        scrubbed = self.text(text, 0, sink, path)
        return scrubbed if sink.count != before or scrubbed != text else None


def _body_line(line: str) -> bool:
    """Whether a string that reads as base64 is a key's body line: one of 16+ characters (PEM
    wraps at 64), or a short last one with padding or mixed case and a digit (not `text`, `info`)."""
    if len(line) >= 16:
        return True
    return "=" in line or (any(c.isdigit() for c in line) and line.lower() != line and line.upper() != line)


def _cuts_off_a_key(text: str) -> bool:
    """Whether a private key starts in `text` and does not end there: a BEGIN line with no END
    after it, or a key's base64 body (shapes.private_key_body) with none."""
    if "-----BEGIN" in text:
        begin = _PEM_BEGIN.search(text)
        if begin is not None:
            return _PEM_END.search(text, begin.end()) is None
    body = private_key_body_start(text)
    return body is not None and _PEM_END.search(text, body) is None


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


class Sink:
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


