"""`mcptape diff A B [--json] [--conformance]`: read two tapes, diff them, print the verdict, exit 0/1/2 (3: unreadable).

Reading and printing only; the comparison is engine.py's, the rendering report/terminal.py's.
diff is not a wire command, so its report goes to stdout.

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
tape/format.py's `parse_tape`, errors included.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any

from mcptape.diff.values import common_prefix, common_suffix, equal_back
from mcptape.logsafe import ci_log_block, escape_controls
from mcptape.tape.events import recording_notes
from mcptape.tape.format import (
    FORMAT_VERSION,
    Tape,
    _parse_line,
    fill_events,
    footer_index,
    parse_lines,
    parse_tape,
    read_lines,
)

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


def run_diff(args: argparse.Namespace) -> int:
    from mcptape.diff.engine import diff_tapes

    # Parsing builds millions of acyclic objects; full GC passes over them only cost time.
    gc.disable()
    golden, fresh = read_pair(args.a, args.b)  # TapeError -> exit 3 in cli.py
    result = diff_tapes(golden, fresh, conformance=bool(getattr(args, "conformance", False)))
    # A limit mcptape hit while recording either tape (a message nested too deep) shaped how it
    # was compared: said with the verdict, never left to the tapes alone.
    notes = [f"{side} tape: {line}" for side, tape in (("golden", golden), ("fresh", fresh))
             for line in recording_notes(tape.events)]
    if getattr(args, "json", False):
        data = result.to_dict()
        data["first_drift"] = result.first.one_line() if result.first is not None else None
        data["notes"] = notes
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        sys.stdout.write(ci_log_block(escape_controls(text, json=True)))
    else:
        from mcptape.report.terminal import note_lines, print_report, render_diff

        def render(console: Any) -> None:
            render_diff(result, console)
            note_lines(notes, console)

        print_report(render)
    if getattr(args, "exiting", False):
        # The process ends here. Both tapes and the diff are millions of small objects; freeing
        # them one by one was 0.2 s of a 1.8 s diff of two 100k-event tapes. The OS takes the
        # memory back at once, so the output is flushed and the process leaves without it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(result.exit_code)
    return result.exit_code
