"""Redaction placeholders: the one grammar of `<REDACTED:kind#tag>`, `<HOME>`, `<USER>`, and what they mean when compared.

Tapes and reports are redacted before they are written (redact/), so every other module meets
placeholders as text: diff compares two redacted tapes, replay compares a redacted recording
with a live request. Both, and the redactor itself, read them through this module, which
depends on nothing but `re` (play must not import the redactor to match a recorded request).

    <REDACTED:github-token#1a2b3c4d>   a secret by kind, with a tag: the first 32 bits of a keyed
                                       hash of the value, so one secret keeps one placeholder
    <REDACTED:env.CALC_TOKEN>          a known secret, named after its source (no tag)
    <HOME>  <USER>                     who recorded
    <UUID>  <UUID#2>                   a tape's first, second, ... distinct UUID (normalize.py; the
                                       number is a tag too: play serves each as its own id)

The tag is not part of the value a placeholder stands for: a rotated secret is the same value,
a UUID numbered otherwise in another recording is the same volatile id (`strip_tags`, `untag`; diff). A recorded string holding placeholders is a pattern in which
each placeholder stands for any non-empty run of characters (`placeholder_pattern`; replay).
"""

from __future__ import annotations

import functools
import re

KIND = r"[A-Za-z0-9_.:@\-]{1,120}"  # a detector's kind or a known secret's source (`env.NAME`)
TAG = r"#[0-9a-f]{8}"
PLACEHOLDER_RE = re.compile(rf"<REDACTED:{KIND}(?:{TAG})?>|<HOME>|<USER>")
# Where an absolute directory may be replaced by its placeholder (`<HOME>`, normalize.py's
# `<CONFIG_DIR>`): as a path, at a path's start, not inside a name or a longer path, nor in a URL's
# authority (`mysql://root:PW@db` with HOME=/root, a root container's), but in a file:// URL's path.
PATH_START = r"(?:(?<![\w.\-~/])|(?<=file://))"
PATH_END = r"(?![\w.\-])"
# Our placeholders as report formats escape them: XML and HTML (JUnit, the markdown's <summary>
# lines) write `&lt;REDACTED:x&gt;`, HTML-safe JSON `\u003cREDACTED:x\u003e`. Escaped, a placeholder
# is still ours: `&` and `;` could otherwise read as a URL password or a cookie value.
ESCAPED_PLACEHOLDER_RE = re.compile(
    rf"(?:&lt;|&#0*60;|&#[xX]0*3[cC];|\\u003[cC])(?:REDACTED:{KIND}(?:{TAG})?|HOME|USER)"
    r"(?:&gt;|&#0*62;|&#[xX]0*3[eE];|\\u003[eE])"
)
TAG_MARK = "<REDACTED:"  # what every redaction placeholder that can carry a tag starts with
_TAGGED = re.compile(rf"({TAG_MARK}{KIND}){TAG}>")
UUID_MARK = "<UUID#"  # what a numbered UUID placeholder starts with
_NUMBERED_UUID = re.compile(r"<UUID#[1-9][0-9]{0,8}>")


class UuidNumbers:
    """A re.sub replacement for UUIDs: each distinct one (case aside) its own placeholder, in order of
    first appearance: `<UUID>` for the first (what every tape written before the numbers holds), then
    `<UUID#2>`, `<UUID#3>`, ... (normalize.py keeps one per normalizer; play serves each as its own id)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, m: re.Match[str]) -> str:
        key = m.group(0).lower()
        found = self._seen.get(key)
        if found is None:
            n = len(self._seen) + 1
            found = self._seen[key] = "<UUID>" if n == 1 else f"<UUID#{n}>"
        return found


def has_tag(text: str) -> bool:
    """A cheap test: False means `text` holds no tagged or numbered placeholder."""
    return TAG_MARK in text or UUID_MARK in text


def strip_tags(text: str) -> str:
    """Text with placeholder tags removed (`<REDACTED:x#1a2b3c4d>` -> `<REDACTED:x>`, `<UUID#2>` ->
    `<UUID>`), for comparisons that must not call a rotated token or a renumbered id drift."""
    if TAG_MARK in text:
        text = _TAGGED.sub(r"\1>", text)
    return _NUMBERED_UUID.sub("<UUID>", text) if UUID_MARK in text else text


def untag(text: str) -> str:
    """strip_tags for comparing and keying: only text holding a tagged placeholder pays for the regex."""
    return strip_tags(text) if has_tag(text) else text


def may_hold_placeholder(text: str) -> bool:
    """A cheap test: False means `text` holds no placeholder at all."""
    return TAG_MARK in text or "<HOME>" in text or "<USER>" in text


@functools.lru_cache(maxsize=4096)
def placeholder_pattern(recorded: str) -> re.Pattern[str] | None:
    """A recorded string with placeholders as a pattern: each placeholder stands for any non-empty
    run of characters, the rest is literal, the whole string must match. None without placeholders.

    Tapes are redacted before they are written, so a recorded request can hold
    `<REDACTED:github-token#1a2b3c4d>` where the live client sends the real token.
    """
    if not may_hold_placeholder(recorded):
        return None
    literals = PLACEHOLDER_RE.split(recorded)
    if len(literals) == 1:
        return None
    return re.compile("(.+?)".join(re.escape(part) for part in literals), re.DOTALL)


def fits(recorded: str, asked: str) -> bool | None:
    """None if `recorded` holds no placeholder, else whether `asked` fits it (placeholder_pattern)."""
    pattern = placeholder_pattern(recorded)
    if pattern is None:
        return None
    return pattern.fullmatch(asked) is not None
