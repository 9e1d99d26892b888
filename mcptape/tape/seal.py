"""Tape seals: the SHA-256 digests a tape of format 2 carries, and checking them.

Owns computing the digests while a tape is written (`Sealer`, used by format.py's writers) and
checking them on a file's bytes (`check`, for `mcptape verify` and for play, diff and ci before
they trust a tape). The lines themselves are format.py's, parsing them reader.py's.

    {"mcptape":"tape","format":2,...}                                header
    {"kind":"request",...}                                            events
    {"mcptape":"seal","events":2,"sha256":"9f86…","lines":"Qx3a 8_Rk"}   rec only: after each flush
    {"mcptape":"end","events":2,"sha256":"4a1c…","lines":"Qx3a 8_Rk"}     footer

A seal line and the footer carry `sha256`, the digest of every byte of the file before that
line: a running digest, so the writer pays one hash update per line and a whole tape is checked
with one hash call. `rec` streams its tape and may be killed at any moment, so after each batch
it flushes it writes a seal line in the same write: a tape cut short verifies up to its last
complete event, and an event line no seal covers is refused (removing a golden's footer does not
turn it into an unchecked "cut short" tape). Golden tapes are written whole and carry only the
footer, so a golden's diff in a PR changes the lines that changed and the one footer line.

The footer's `lines` holds four base64url characters per line before it (the first 24 bits of
the line's own SHA-256), a seal line's those of the lines since the seal line before it: not a
proof, the digest is, but what lets `verify` name the first line that changed instead of saying
only "something did". They are separated by spaces: run together they form one long random
token, which the secret detectors rightly take for a credential (an AWS secret key is 40 such
characters) and which would fail the tape's own verification closed.

Without a key a digest is not a signature: anyone can recompute it. What it gives is a content
address that attestations and `mcptape sign` sign, and a check that a tape is byte for byte what
mcptape wrote (which is what lets play send recorded bytes without parsing them). Format 1 tapes
carry a crc32 of the same bytes: still checked, never called sealed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.errors import TapeError

SEAL_FORMAT = 2  # the first tape format whose footer is a SHA-256 seal
DIGEST = "sha256"
LINES = "lines"
FOOTER_FIELDS = ("mcptape", "events", DIGEST, LINES, "crc32")  # computed by the writer, never copied
_SEAL_LINE = b'{"mcptape":"seal"'
_FOOTER_LINE = b'{"mcptape":"end"'


def fingerprint(line: bytes) -> str:
    """A line's (no newline) short fingerprint: 24 bits of its SHA-256 as four base64url characters."""
    return base64.urlsafe_b64encode(hashlib.sha256(line).digest()[:3]).decode("ascii")


class Sealer:
    """The running digest of a tape being written, line by line (each with its newline)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._prints: list[str] = []
        self._sealed = 0  # how many lines the last seal line covered (itself included)

    def add(self, data: bytes) -> None:
        """One line as written, newline included."""
        self._hash.update(data)
        self._prints.append(fingerprint(data[:-1]))

    def digest(self) -> str:
        return self._hash.hexdigest()

    def footer_fields(self) -> dict[str, str]:
        return {DIGEST: self.digest(), LINES: " ".join(self._prints)}

    def seal_line(self, events: int) -> bytes:
        """A seal line covering everything added so far; added itself, as it is written after them."""
        since = " ".join(self._prints[self._sealed:]).encode("ascii")
        data = b'{"mcptape":"seal","events":%d,"sha256":"%s","lines":"%s"}\n' % (
            events, self.digest().encode("ascii"), since)
        self.add(data)
        self._sealed = len(self._prints)
        return data


def is_seal_line(raw: bytes) -> bool:
    """A rec tape's seal line (not an event): readers skip it."""
    return raw.startswith(_SEAL_LINE)


@dataclass(frozen=True)
class Verdict:
    """What `check` found. `ok` False: `line` (1-based) is the first line that does not match and
    `problem` says how; True: `state` is "sealed", "cut" (cut short, verified up to `line`, its last
    complete event), or "unsealed" (format 1: crc32 matches or nothing to check)."""

    ok: bool
    state: str
    line: int | None = None
    problem: str = ""

    def describe(self, where: str) -> str:
        if not self.ok:
            return f"{where}:{self.line}: {self.problem}"
        if self.state == "sealed":
            return f"{where}: sealed (sha256 of every line matches)"
        if self.state == "cut":
            return f"{where}: cut short; verified up to line {self.line}, its last complete event"
        return f"{where}: format 1, not sealed ({self.problem})"


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def sealed_verbatim(data: bytes) -> bool:
    """The file is exactly as our writer wrote it: its last line is a footer whose digest (sha256;
    crc32 on format 1) matches every byte before it. One hash call: play's fast path."""
    end = len(data) - 1
    if end < 0 or data[end] != 0x0A:
        return False
    start = data.rfind(b"\n", 0, end) + 1
    last = data[start:end]
    if not last.startswith(_FOOTER_LINE):
        return False
    if b'"sha256":"' in last:
        footer = _parse(last)
        return footer is not None and footer.get(DIGEST) == hashlib.sha256(memoryview(data)[:start]).hexdigest()
    if b'"crc32":"' in last:
        footer = _parse(last)
        return footer is not None and footer.get("crc32") == f"{zlib.crc32(memoryview(data)[:start]):08x}"
    return False


def check(data: bytes) -> Verdict:
    """Check a tape file's seals (module doc). The header must already be one mcptape reads."""
    first = data.split(b"\n", 1)[0]
    header = _parse(first) or {}
    # A tape that carries seals is checked as sealed whatever its header says: turning a header's
    # format 2 into 1 must not turn its seal into a checksum nobody checks.
    if header.get("format") != SEAL_FORMAT and not _carries_seals(data):
        return _check_format1(data)
    if sealed_verbatim(data):
        return Verdict(True, "sealed")
    return _walk(data)


def _carries_seals(data: bytes) -> bool:
    end = data.rstrip(b"\n")
    last = end[end.rfind(b"\n") + 1:]
    return (last.startswith(_FOOTER_LINE) and b'"sha256":"' in last) or b"\n" + _SEAL_LINE in data


def _check_format1(data: bytes) -> Verdict:
    if sealed_verbatim(data):
        return Verdict(True, "unsealed", problem="its crc32 matches; re-record it to seal it")
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if raw.startswith(_FOOTER_LINE):
            footer = _parse(raw) or {}
            if "crc32" in footer:
                return Verdict(False, "edited", number, "the tape changed after it was written: its crc32 does "
                               "not match the lines before it (format 1 cannot name the line)")
            break
    return Verdict(True, "unsealed", problem="no checksum to check")


def _walk(data: bytes) -> Verdict:
    """The slow path: line by line, every seal line and the footer checked against the running digest."""
    running = hashlib.sha256()
    prints: list[str] = []
    sealed_upto = 0  # lines [0, sealed_upto) are covered by a seal that matched
    last_event = 0  # 1-based number of the last complete event line so far
    pieces = data.split(b"\n")
    complete = len(pieces) - 1  # the last piece has no newline: empty, or a line cut while written
    for k in range(complete):
        raw = pieces[k]
        number = k + 1
        if raw.startswith((_SEAL_LINE, _FOOTER_LINE)):
            line = _parse(raw) or {}
            expected = running.hexdigest()
            if raw.startswith(_FOOTER_LINE):
                if line.get(DIGEST) != expected:
                    return _mismatch(pieces, sealed_upto, number, line, prints)
                if any(p.strip() for p in pieces[number:]):
                    return Verdict(False, "edited", number + 1, "lines after the footer are not part of the "
                                   "tape (the file was appended to after it was written)")
                return Verdict(True, "sealed")
            if line.get(DIGEST) != expected:
                return _mismatch(pieces, sealed_upto, number, line, prints)
            sealed_upto = number
        elif raw.strip() and k > 0:
            last_event = number
        running.update(raw + b"\n")
        prints.append(fingerprint(raw))
    # No footer: cut short. Every complete line must be covered by a seal line after it.
    if last_event > sealed_upto:
        return Verdict(False, "edited", sealed_upto + 1 if sealed_upto else last_event,
                       "no seal covers this line and the lines after it (no footer, and no seal line after "
                       "them: the footer was removed, or the recorder was killed between writing them and "
                       "their seal)")
    return Verdict(True, "cut", line=last_event or 1)


def _mismatch(pieces: list[bytes], sealed_upto: int, number: int, seal: dict[str, Any],
              prints: list[str]) -> Verdict:
    """The first line that does not match: by the footer's fingerprints if there is a footer (it may
    be further down, after the seal line that failed), else by those of the seal line that failed
    (the lines since the last seal that matched), else the first line after that seal."""
    footer = seal if seal.get("mcptape") == "end" else _last_footer(pieces)
    start = 0
    if footer is not None and isinstance(footer.get(LINES), str):
        recorded = footer[LINES]
        if footer is not seal:
            stop = next(k for k in range(len(pieces) - 1, -1, -1) if pieces[k].startswith(_FOOTER_LINE))
            prints = [fingerprint(raw) for raw in pieces[:stop]]
    else:
        recorded, start = seal.get(LINES), sealed_upto
        prints = prints[start:]
    if isinstance(recorded, str):
        sealed = recorded.split()
        for k, mine in enumerate(prints):
            if k >= len(sealed) or sealed[k] != mine:
                return Verdict(False, "edited", start + k + 1, "this line is not the one sealed (changed, "
                               "inserted or removed after the tape was written)")
        if len(sealed) != len(prints):
            return Verdict(False, "edited", start + len(prints) + 1,
                           "lines were removed here after the tape was written")
    if DIGEST not in seal:
        return Verdict(False, "edited", number, "this seal carries no sha256")
    if isinstance(recorded, str):  # every line matches its fingerprint: the seal itself was edited
        return Verdict(False, "edited", number, "this seal's sha256 does not match the lines before it "
                       "(the seal was edited)")
    first = sealed_upto + 1
    if first < number - 1:
        return Verdict(False, "edited", first, f"lines {first}–{number - 1} do not match the seal on line "
                       f"{number} (one of them changed after the tape was written)")
    return Verdict(False, "edited", number - 1, "this line does not match the seal after it (changed after "
                   "the tape was written)")


def _last_footer(pieces: list[bytes]) -> dict[str, Any] | None:
    for raw in reversed(pieces):
        if raw.startswith(_FOOTER_LINE):
            return _parse(raw)
    return None


ALLOW_EDITED = "--allow-edited"
_REFUSED_HINT = (f"re-record it (`mcptape ci -u`, `mcptape rec`); if it was edited by hand on purpose, pass "
                 f"{ALLOW_EDITED} to read it anyway (its seal is then not checked)")


def require(path: str | os.PathLike[str], *, allow_edited: bool = False) -> str | None:
    """play, diff and ci before they trust a tape: a TapeError (exit 3) naming the first line that
    does not match its seal; with `allow_edited`, instead, the note saying what is read unverified.
    A file that cannot be read is left to the reader, which says what is wrong with it."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    verdict = check(data)
    if verdict.ok:
        return None
    where = verdict.describe(os.fspath(path))
    if allow_edited:
        return f"{ALLOW_EDITED}: {where}; read anyway, its content not verified"
    raise TapeError(f"{where}; refusing a tape that does not match its seal", hint=_REFUSED_HINT)
