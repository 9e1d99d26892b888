"""Reading tapes: the one reader every command uses, whole, in pairs, or streamed.

    read_tape(path)     a Tape, every line parsed (show, ls, ci's goldens, merge ...)
    read_pair(a, b)     two tapes, the fresh one sharing the golden's event objects (diff)
    TapeStream(path)    header, footer and up-front checks now, events as they are needed (play)

An unreadable file, a line that does not parse, a header of another format version: a TapeError
(exit 3) naming the file and line, the same message from every form. A missing footer is not an
error (the tape was cut short: `Tape.complete`); lines after a footer are not part of the tape.

Event lines are parsed as one JSON array where they can be (`parse_lines`): the C scanner then
shares each key string across all events instead of allocating it per line, which reads a
100k-event tape in about three quarters of the time and memory.

Reading a pair (`read_pair`): a fresh tape is mostly the golden one line for line. Both files
are split into lines first; the fresh lines byte-identical to the golden's event lines at the
same place from the start (the common prefix) and from the end (the common suffix, the footer
aside: it counts the events) are the golden's parsed events, found by C-speed list compares.
So are the lines in between that equal the golden's at the same distance from the suffix (in
runs, stepping over changed lines: a call inserted early shifts everything after it), and then
any line equal to one of the golden event lines left over. Only the rest is parsed. So an
unchanged or slightly changed tape costs one parse, not two, and identical events are then the
same objects, which makes every later comparison of them an identity check. Anything unusual
about the fresh tape (cut short, a line that does not parse, no valid header) is left to
`parse_tape`, errors included.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from mcptape import __version__
from mcptape.errors import TapeError
from mcptape.sequences import common_prefix, common_suffix, equal_back
from mcptape.tape.format import FORMAT_VERSION, Tape


def written_verbatim(data: bytes) -> bool:
    """The tape file `data` is exactly as our writer wrote it: its last line is a footer whose
    crc32 matches every byte before that line (see module doc)."""
    end = len(data) - 1
    if end < 0 or data[end] != 0x0A:
        return False
    start = data.rfind(b"\n", 0, end) + 1
    last = data[start:end]
    if not last.startswith(b'{"mcptape":"end"') or b'"crc32":"' not in last:
        return False
    footer = _parse_line(last)
    return footer is not None and footer.get("crc32") == f"{zlib.crc32(memoryview(data)[:start]):08x}"


@dataclass
class TapeLines:
    """A tape file split into its non-blank lines, not parsed yet: what `parse_tape` reads, and
    what diff/command.py compares between two tapes before parsing only the lines that differ."""

    path: Path
    raws: list[bytes]
    numbers: Sequence[int]  # 1-based line number in the file of each line in `raws`
    cut_short: bool  # the last line has no newline: the recorder died while writing it


def read_lines(path: str | os.PathLike[str]) -> TapeLines:
    """A tape file's lines, for `parse_tape`; an unreadable file is a TapeError already."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TapeError(f"{p}: cannot read tape: {e.strerror or e}") from e
    pieces = data.split(b"\n")
    cut_short = not data.endswith(b"\n")
    del data
    raws = [raw for raw in pieces if raw.strip()]
    numbers: Sequence[int]
    if raws == pieces[:len(raws)]:  # blank lines only at the end (the usual case): no list to build
        numbers = range(1, len(raws) + 1)
    else:
        numbers = [n for n, raw in enumerate(pieces, start=1) if raw.strip()]
    return TapeLines(p, raws, numbers, cut_short)


def read_tape(path: str | os.PathLike[str]) -> Tape:
    """Read a tape; a missing footer is allowed (cut short), an unknown format version is not."""
    return parse_tape(read_lines(path))


def parse_tape(lines: TapeLines) -> Tape:
    """The tape `read_tape` reads, from its lines.

    The event lines are parsed as one JSON array on purpose: the C scanner then shares each
    key string across all events instead of allocating it per line, which reads a 100k-event
    tape in about three quarters of the time and memory. A tape that does not parse that way
    (cut short, corrupt) is read again line by line to say where.
    """
    p = lines.path
    if not lines.raws:
        raise TapeError(f"{p}: empty file, not a tape", hint="record one with `mcptape rec`")
    tape = Tape(header=_check_header(p, lines.numbers[0], _parse_line(lines.raws[0])), events=[], path=p)
    body = lines.raws[1:]
    numbers = lines.numbers[1:]
    parsed = parse_lines(body)
    if parsed is None:
        parsed = []
        for i, raw in enumerate(body):
            obj = _parse_line(raw)
            if obj is None:
                if i == len(body) - 1 and lines.cut_short:
                    numbers = numbers[:i]
                    break
                raise TapeError(f"{p}:{numbers[i]}: line is not a JSON object mcptape can read (corrupt, or nested "
                                "deeper than JSON readers go)", hint="the tape is corrupt; re-record it")
            parsed.append(obj)
    fill_events(tape, numbers, parsed)
    return tape


def footer_index(parsed: Sequence[dict[str, Any]]) -> int:
    """Where the first footer is among parsed lines; len(parsed) if there is none."""
    try:
        return [obj.get("mcptape") for obj in parsed].index("end")
    except ValueError:
        return len(parsed)


def fill_events(tape: Tape, numbers: Sequence[int], parsed: list[dict[str, Any]], end: int | None = None) -> None:
    """Put parsed event lines into `tape` with their line numbers, up to and including the footer.

    `end` is where the footer is (`footer_index`), for a caller that knows it more cheaply;
    the lines after a footer are not part of the tape.
    """
    if len(numbers) != len(parsed):
        raise ValueError(f"{len(numbers)} line numbers for {len(parsed)} parsed lines")
    if end is None:
        end = footer_index(parsed)
    if end < len(parsed):
        tape.footer = parsed[end]
    tape.events.extend(parsed[:end])
    tape.event_lines.extend(numbers[:end])


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # RecursionError: edited by hand
        return None
    return obj if isinstance(obj, dict) else None


def parse_lines(raws: list[bytes]) -> list[dict[str, Any]] | None:
    """Lines parsed as one JSON array (key strings shared), or None unless each is exactly one object."""
    if not raws:
        return []
    # The brackets go onto the first and last line: the tape's bytes are copied once, not three
    # times; and decoded as json.loads would, but without keeping those bytes while parsing.
    parts = [b"[" + raws[0] + b"]"] if len(raws) == 1 else [b"[" + raws[0], *raws[1:-1], raws[-1] + b"]"]
    array = b",".join(parts)
    del parts
    try:
        text = array.decode(json.detect_encoding(array), "surrogatepass")
        del array
        parsed = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # the line-by-line read says where
        return None
    if not isinstance(parsed, list) or len(parsed) != len(raws):
        return None  # e.g. a line holding "1,2" would shift every line after it
    return parsed if all(map(isinstance, parsed, repeat(dict))) else None


def _check_header(p: Path, number: int, header: dict[str, Any] | None) -> dict[str, Any]:
    if header is None or header.get("mcptape") != "tape":
        raise TapeError(
            f"{p}:{number}: not an mcptape tape (the first line must be the tape header)",
            hint="record one with `mcptape rec` or `mcptape ci --update-golden`",
        )
    fmt = header.get("format")
    if fmt != FORMAT_VERSION:
        raise TapeError(
            f"{p}: tape format {fmt!r} is not one this mcptape ({__version__}) reads (format {FORMAT_VERSION})",
            hint=f"re-record it with mcptape {__version__}, or use the mcptape version "
            f"{header.get('version', '?')} that wrote it",
        )
    return header



# Changed lines stepped over when placing the fresh lines by position; beyond, a dictionary of
# the golden's lines finds the rest wherever they are.
MAX_STEPS = 64


def read_pair(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> tuple[Tape, Tape]:
    """Both tapes, the fresh one (b) sharing the golden's (a) event objects for identical lines."""
    golden_lines = read_lines(a)
    golden = parse_tape(golden_lines)
    lines = read_lines(b)
    header = _parse_line(lines.raws[0]) if lines.raws and not lines.cut_short else None
    if header is None or header.get("mcptape") != "tape" or header.get("format") != FORMAT_VERSION:
        return golden, parse_tape(lines)  # empty, cut short while writing, not a tape: parse_tape says
    found, missing = _place(golden.events, golden_lines.raws[1:1 + len(golden.events)], lines.raws[1:])
    del golden_lines  # the golden's lines: parsing the rest of the fresh tape can reuse their memory
    end = len(found)
    if missing:
        parsed = parse_lines([lines.raws[1 + k] for k in missing])  # one JSON array, as parse_tape does
        if parsed is None:
            return golden, parse_tape(lines)  # a line that does not parse: parse_tape says where
        for k, ev in zip(missing, parsed, strict=True):
            found[k] = ev
        first = footer_index(parsed)  # only a line parsed here can be the footer: the others are events
        if first < len(parsed):
            end = missing[first]
    fresh = Tape(header=header, events=[], path=lines.path)
    fill_events(fresh, lines.numbers[1:], [ev for ev in found if ev is not None], end)
    return golden, fresh


def _place(
    events: list[dict[str, Any]], known: list[bytes], body: list[bytes]
) -> tuple[list[dict[str, Any] | None], list[int]]:
    """For each fresh line (`body`), the golden event whose line (`known[i]` is event i's) it
    equals (module docstring), else None; and where the Nones are: the lines to parse."""
    n = len(body)
    start = common_prefix(known, body)
    # The last line is usually the footer, which differs whenever the number of events does:
    # the common suffix is looked for before it, and the line itself with the ones in between.
    last = n - 1 if start < n else n
    size = common_suffix(known, body[:last], min(len(known), last) - start)
    stop = last - size  # body[stop:last] are the golden's last `size` events
    found: list[dict[str, Any] | None] = [*events[:start], *[None] * (n - start)]
    found[stop:last] = events[len(events) - size:]
    # In between, from the end: runs of lines equal at the same distance from the suffix (a line
    # inserted or removed early shifts the rest), stepping over a changed line at a time.
    i, j = len(known) - size, stop  # the golden's and the fresh lines before these are not placed yet
    stepped_g: list[int] = []
    stepped_f: list[int] = []
    while True:
        run = equal_back(known, body, i, j, min(i, j) - start)
        found[j - run:j] = events[i - run:i]
        i, j = i - run, j - run
        if i == start or j == start or len(stepped_f) == MAX_STEPS:
            break
        i, j = i - 1, j - 1
        stepped_g.append(i)
        stepped_f.append(j)
    # The lines not placed: each one equal to a golden event line not placed either is that event.
    by_line = dict(zip(known[start:i], events[start:i], strict=True))
    by_line.update((known[k], events[k]) for k in stepped_g)
    missing: list[int] = []
    for k in [*range(start, j), *reversed(stepped_f), *range(last, n)]:
        ev = by_line.get(body[k])
        if ev is None:
            missing.append(k)
        else:
            found[k] = ev
    return found, missing
