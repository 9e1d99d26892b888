"""The rules that judge text an agent reads as instructions: what a change ADDS to it, by rule id.

A tool's description, a schema's `description` or `default`, a prompt's text, the server's
`instructions`: an agent reads them all as part of its prompt, so new words there change what it
does. `review_text(old, new, known)` finds the characters `new` adds to `old` (a word-level
difflib diff) and reports each rule match that touches them. Only added text is judged, so a
description that always said "do not tell the user the password" is not re-flagged on every PR;
with `old=""` (first contact: `mcptape check --surface`) the whole text is judged.

The rule ids are stable: they are `security.<id>` in `drift.fail_on`/`drift.ignore`, and SARIF
rule ids. RULES holds each one's short explanation (what a reviewer reads; verdict.SECURITY_KINDS its home). What each matches:
    instruction  text aimed at the model: "ignore previous instructions", "do not tell the user",
                 "before using any other tool", <IMPORTANT> / <system> tags, role markers
    invisible    characters a reviewer cannot see: zero-width, bidi controls, Unicode tag
                 characters (U+E0000..E007F: ASCII smuggled invisibly), variation selectors
    homoglyph    a word mixing Latin with Cyrillic or Greek letters; a name that is not ASCII
                 or reads like another listed name (surface_review.py judges names)
    url          a URL, e-mail address or host name not anywhere in the old surface
    encoded      a base64 or hex run long enough to carry a payload
    sensitive    credentials and sensitive paths: ~/.ssh, id_rsa, .env, ~/.aws/credentials, ...
    oversize     one field grew by more than OVERSIZE_CHARS characters in one change
Pure functions over strings; the field extraction and Findings are surface_review.py's.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mcptape.logsafe import INVISIBLE_CHARS, emoji_part, escape_controls
from mcptape.verdict.vocabulary import SECURITY_KINDS

# The rules of this module, with their explanations (verdict.SECURITY_KINDS holds them with the rest).
RULES: dict[str, str] = {rule: SECURITY_KINDS[rule] for rule in
                         ("instruction", "invisible", "homoglyph", "url", "encoded", "sensitive", "oversize")}
OVERSIZE_CHARS = 2000  # added to one field in one change; long legitimate descriptions grow by less
EXCERPT_CHARS = 80
MAX_DIFF_WORK = 250_000  # words of old × words of new that difflib may compare for one field

_I = re.IGNORECASE
_INSTRUCTION_PATTERNS = (
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+)*"
    r"(?:previous|prior|above|earlier|preceding|other|former|system|original)\b(?:\s+\w+)?",
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:instructions|rules|guidelines|prompts?)\b",
    r"\b(?:do\s+not|don'?t|never|must\s+not)\s+(?:tell|inform|mention|reveal|show|notify|alert|let)\s+"
    r"(?:it\s+to\s+|this\s+to\s+|that\s+to\s+)?(?:the\s+)?user\b",
    r"\bwithout\s+(?:telling|informing|asking|notifying|alerting|showing)\s+(?:the\s+)?user\b",
    r"\b(?:hide|conceal|keep)\s+(?:this|it|that)\s+(?:secret\s+)?(?:from\s+the\s+user|hidden|secret)\b",
    r"\bbefore\s+(?:using|calling|invoking|running|executing)\s+(?:any|every|each|another|other|all)\s+(?:other\s+)?tools?\b",
    r"\b(?:always|first)\s+(?:call|use|invoke|run)\s+this\s+tool\b",
    r"\binstead\s+of\s+(?:any|the)\s+other\s+tools?\b",
    r"\b(?:you\s+are\s+now|from\s+now\s+on,?\s+you|new\s+instructions?\s*:|act\s+as\s+(?:an?\s+)?(?:admin|root|system))",
    r"\b(?:system\s+prompt|conversation\s+history|previous\s+messages)\b",
    r"</?\s*(?:important|system|instructions?|secret|hidden)\s*>",
    r"\[/?INST\]|<\|im_start\|>|<\|im_end\|>|^\s*(?:system|assistant)\s*:",
)
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), _I)  # one scan, not one per pattern
# What a reviewer cannot see: logsafe's one table of invisible characters, which every renderer escapes.
_INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")
_INVISIBLE_RUN = re.compile(_INVISIBLE.pattern + "+")
_WORD = re.compile(r"\w+")
_URL = re.compile(r"\b(?:https?|wss?|ftp|file)://[^\s<>\"'`)\]]+", _I)
_EMAIL = re.compile(r"\b[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# A bare host: labels and a top-level domain that hosts use (not `file.txt` or `config.json`).
_HOST = re.compile(
    r"(?<![\w@/.-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:com|net|org|io|dev|ai|app|xyz|ru|cn|co|me|info|biz|sh|site|online|top|cloud|tk|zip|mov)\b(?![\w-])", _I
)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{40,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{32,}(?![0-9A-Za-z])")
_SENSITIVE = re.compile(
    r"~?/?\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|(?<![\w.])\.env\b(?!\w)|\.aws/credentials|\.netrc\b|\.npmrc\b|"
    r"\.pypirc\b|\.git-credentials\b|\.docker/config\.json|/etc/(?:passwd|shadow)\b|\bprivate[\s_-]key\b|"
    r"\bmcp\.json\b|\.cursor/|claude_desktop_config\.json|\bkeychain\b",
    _I,
)


MAX_EXCERPTS = 3  # matched words quoted per rule and field; the rest are counted


@dataclass(frozen=True)
class Hit:
    """A rule's matches in one added text: the matched words shown safely, where the first starts."""

    rule: str
    excerpts: tuple[str, ...]  # visible(): invisible characters as escapes, clipped; the first MAX_EXCERPTS
    start: int
    note: str = ""  # what kind of match, when the rule covers several (e-mail, host, base64, hex, ...)
    more: int = 0  # matches beyond the excerpts

    @property
    def excerpt(self) -> str:
        return self.excerpts[0]


def visible(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, every invisible or control character an escape (logsafe.escape_controls),
    newlines as ⏎, clipped."""
    out = escape_controls(text.replace("\n", "⏎"), lines=False)
    return out if len(out) <= limit else out[: limit - 1] + "…"


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def added_spans(old: str, new: str) -> list[tuple[int, int]]:
    """The character ranges of `new` that are not in `old`, by a word-level diff (whole words, so a
    changed letter marks its word)."""
    if not old:
        return [(0, len(new))] if new else []
    if old == new:
        return []
    a = [m.group() for m in _TOKEN.finditer(old)]
    b_matches = list(_TOKEN.finditer(new))
    b = [m.group() for m in b_matches]
    # The common head and tail first (most edits are one insertion): then difflib only on the middle,
    # and not at all past MAX_DIFF_WORK, where its quadratic worst case (a long, repetitive text a
    # server chooses) would stall the gate: then the whole middle counts as added.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    if not b_mid:
        return []
    if len(a_mid) * len(b_mid) > MAX_DIFF_WORK:
        return [(b_matches[head].start(), b_matches[len(b) - tail - 1].end())]
    spans: list[tuple[int, int]] = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False).get_opcodes():
        if op in ("insert", "replace") and j1 < j2:
            spans.append((b_matches[head + j1].start(), b_matches[head + j2 - 1].end()))
    return spans


def _touches(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(start < s_end and s_start < end for s_start, s_end in spans)


def _excerpt(text: str, start: int, end: int) -> str:
    return visible(text[start:end])


def _mixed_script(word: str) -> bool:
    scripts = set()
    for ch in word:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            scripts.add(name.split(" ", 1)[0] if name.startswith(("LATIN", "CYRILLIC", "GREEK")) else "OTHER")
    return "LATIN" in scripts and bool(scripts & {"CYRILLIC", "GREEK"})


def _invisible_note(run: str) -> str:
    """Which characters; Unicode tag characters also as the ASCII they smuggle (U+E0041 is `A`)."""
    codes = " ".join(f"U+{ord(c):04X}" for c in run[:4]) + (f" … {len(run)} characters" if len(run) > 4 else "")
    tags = "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)
    return codes + (f", tags spelling {visible(tags, 60)!r}" if tags else "")


def _looks_encoded(run: str) -> bool:
    """A base64 run, not an identifier or a path: mixed case and digits, few path separators."""
    body = run.rstrip("=")
    has = (any(c.isdigit() for c in body), any(c.isupper() for c in body), any(c.islower() for c in body))
    return all(has) and body.count("/") <= len(body) // 16 and body.count("_") + body.count("-") <= len(body) // 16


def find_hits(text: str) -> list[tuple[str, int, int, str]]:
    """Every rule match in `text`: (rule, start, end, note). Added or not is review_text's question."""
    hits: list[tuple[str, int, int, str]] = []
    hits.extend(("instruction", m.start(), m.end(), "") for m in _INSTRUCTION.finditer(text))
    if not text.isascii():  # invisible characters and other scripts are not ASCII: most texts skip both scans
        for m in _INVISIBLE_RUN.finditer(text):
            if not (m.end() - m.start() == 1 and emoji_part(text, m.start())):
                hits.append(("invisible", m.start(), m.end(), _invisible_note(m.group())))
        hits.extend(("homoglyph", m.start(), m.end(), "mixed scripts") for m in _WORD.finditer(text)
                    if not m.group().isascii() and _mixed_script(m.group()))
    urls = [(m.start(), m.end()) for m in _URL.finditer(text)]
    hits.extend(("url", s, e, "url") for s, e in urls)
    emails = [(m.start(), m.end()) for m in _EMAIL.finditer(text)]
    hits.extend(("url", s, e, "e-mail") for s, e in emails)
    for m in _HOST.finditer(text):
        if not _touches(m.start(), m.end(), urls + emails):
            hits.append(("url", m.start(), m.end(), "host"))
    for m in _BASE64.finditer(text):
        if _looks_encoded(m.group()) and not _touches(m.start(), m.end(), urls):
            hits.append(("encoded", m.start(), m.end(), "base64"))
    for m in _HEX.finditer(text):
        if not _touches(m.start(), m.end(), urls):
            hits.append(("encoded", m.start(), m.end(), "hex"))
    hits.extend(("sensitive", m.start(), m.end(), "") for m in _SENSITIVE.finditer(text))
    return hits


def addresses(text: str) -> set[str]:
    """The URLs, e-mail addresses and hosts in `text`, lower-cased: what a surface already points at."""
    found = {m.group().lower().rstrip(".,;:") for pattern in (_URL, _EMAIL, _HOST) for m in pattern.finditer(text)}
    found |= {m.group(1).lower() for m in re.finditer(r"://([^/\s:?#]+)", text)}  # a URL's host counts as known
    return found


def review_text(old: str, new: str, known: set[str] | frozenset[str] = frozenset()) -> list[Hit]:
    """The rule matches in what `new` adds to `old`: one Hit per rule, its distinct matched words.

    A match counts if it touches an added character and its text is not in `old` already (moved
    words are not new). A URL, e-mail or host counts only if not in `known` (the old surface's
    addresses() and its URLs' hosts): a docs link that was there, moved or reworded, is not new.
    """
    spans = added_spans(old, new)
    if not spans:
        return []
    out: list[Hit] = []
    found: dict[str, list[tuple[str, int, str]]] = {}  # rule -> (shown, start, note), in text order
    seen: set[tuple[str, str]] = set()
    old_folded = old.casefold()
    for rule, start, end, note in sorted(find_hits(new), key=lambda h: h[1]):
        if not _touches(start, end, spans):
            continue
        matched = new[start:end]
        if rule != "invisible" and matched.casefold() in old_folded:
            continue
        if rule == "url":
            word = matched.lower().rstrip(".,;:")
            host = re.match(r"[a-z][a-z0-9+.-]*://([^/\s:?#]+)", word)
            if word in known or (host is not None and host.group(1) in known):
                continue
        key = (rule, matched)
        if key in seen:
            continue
        seen.add(key)
        shown = _context(new, start, end) if rule == "invisible" else \
            _non_ascii_escaped(matched) if rule == "homoglyph" else _excerpt(new, start, end)
        found.setdefault(rule, []).append((shown, start, note))
    for rule, matches in found.items():
        notes = list(dict.fromkeys(n for _, _, n in matches if n))
        out.append(Hit(rule, tuple(m[0] for m in matches[:MAX_EXCERPTS]), matches[0][1], "; ".join(notes[:MAX_EXCERPTS]),
                       max(0, len(matches) - MAX_EXCERPTS)))
    grown = len(new) - len(old)  # growth, not churn: a rewrite of the same length is read as a rewrite
    if grown > OVERSIZE_CHARS:
        out.append(Hit("oversize", (visible(new[spans[0][0]:spans[0][0] + 60]),), spans[0][0], f"+{grown} characters"))
    return out


def _non_ascii_escaped(word: str) -> str:
    """A mixed-script word with its non-ASCII letters as escapes: `\\u0440\\u0430ypal`, not `раypal`."""
    return "".join(ch if ord(ch) < 0x80 else f"\\u{ord(ch):04x}" for ch in word)


def _context(text: str, start: int, end: int) -> str:
    """An invisible character with a few visible ones around it, so a reviewer can find it."""
    return visible(text[max(0, start - 12): end + 12])


def name_problem(name: str, by_skeleton: Mapping[str, Sequence[str]]) -> str | None:
    """Why a tool/prompt name is a homoglyph risk: not ASCII, or reads like another listed name
    (`by_skeleton`: skeletons() of the listing the name is in)."""
    odd = list(dict.fromkeys(ch for ch in name if not " " < ch < "\x7f"))
    if odd:
        return f"name {visible(name)} holds characters outside printable ASCII: " \
            f"{', '.join(f'U+{ord(c):04X}' for c in odd[:5])}"
    other = next((o for o in by_skeleton.get(confusable_skeleton(name), ()) if o != name), None)
    return None if other is None else f"name {visible(name)} reads like {visible(other)}"


def skeletons(names: Iterable[str]) -> dict[str, list[str]]:
    """Each confusable_skeleton of a listing with its names, in listing order. Built once per listing:
    comparing each name's skeleton with every other's was quadratic (a 10 000-tool list: 10^8 NFKC
    normalizations, a minute of `ci`)."""
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(confusable_skeleton(name), []).append(name)
    return out


_ASCII_LOOKALIKE = str.maketrans({"0": "o", "1": "l", "I": "l", "|": "l"})


def confusable_skeleton(name: str) -> str:
    """A name reduced to what a reader distinguishes at a glance (NFKC, case, 0/o, 1/l/I, rn/m)."""
    folded = unicodedata.normalize("NFKC", name).translate(_ASCII_LOOKALIKE).lower()
    return folded.replace("rn", "m").replace("vv", "w")
