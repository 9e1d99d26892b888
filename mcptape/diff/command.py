"""`mcptape diff A B [--json] [--conformance]`: read two tapes, diff them, print the verdict, exit 0/1/2 (3: unreadable).

Reading and printing only; the comparison is engine.py's, the rendering report/terminal.py's.
diff is not a wire command, so its report goes to stdout.

Reading a pair (`read_pair`): a fresh tape is mostly the golden one line for line, so after
tape/format.py's `read_tape` has parsed the golden tape, each fresh line that is byte-identical
to a golden event line reuses that parsed event instead of being parsed again. That halves
reading time and memory on big tapes, and identical events are then the same objects, which
makes every later comparison of them an identity check. Anything unusual about the fresh tape
(unreadable, cut short, a line that does not parse) is left to `read_tape`, errors included.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcptape.tape.format import FORMAT_VERSION, Tape, fill_events, parse_lines, read_tape


def read_pair(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> tuple[Tape, Tape]:
    """Both tapes, the fresh one (b) sharing the golden's (a) event objects for identical lines."""
    golden = read_tape(a)
    try:
        fresh = _share(golden, a, b)
    except (OSError, IndexError, ValueError):
        fresh = None
    return golden, fresh if fresh is not None else read_tape(b)


def _share(golden: Tape, a: str | os.PathLike[str], b: str | os.PathLike[str]) -> Tape | None:
    """read_tape(b), reusing the golden's parsed events for identical lines; None where read_tape must decide."""
    data = Path(b).read_bytes()
    if not data.endswith(b"\n"):
        return None  # cut short while writing: read_tape knows what to keep
    body = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
    del data
    if not body:
        return None
    try:
        header = json.loads(body[0][1])
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("mcptape") != "tape" or header.get("format") != FORMAT_VERSION:
        return None
    body = body[1:]
    lines = Path(a).read_bytes().split(b"\n")
    by_line = {lines[n - 1]: ev for n, ev in zip(golden.event_lines, golden.events, strict=True)}
    del lines
    shared: list[dict[str, Any] | None] = [by_line.get(raw) for _, raw in body]
    del by_line  # before parsing the rest: peak memory stays that of one parsed tape and a half
    misses = [raw for (_, raw), ev in zip(body, shared, strict=True) if ev is None]
    if misses:
        parsed = parse_lines(misses)  # one JSON array, as read_tape does
        del misses
        if parsed is None:
            return None
        it = iter(parsed)
        shared = [ev if ev is not None else next(it) for ev in shared]
    tape = Tape(header=header, events=[], path=Path(b))
    fill_events(tape, body, [ev for ev in shared if ev is not None])
    return tape


def run_diff(args: argparse.Namespace) -> int:
    from mcptape.diff.engine import diff_tapes

    # Parsing builds millions of acyclic objects; full GC passes over them only cost time.
    gc.disable()
    golden, fresh = read_pair(args.a, args.b)  # TapeError -> exit 3 in cli.py
    result = diff_tapes(golden, fresh, conformance=bool(getattr(args, "conformance", False)))
    if getattr(args, "json", False):
        data = result.to_dict()
        data["first_drift"] = result.first.one_line() if result.first is not None else None
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        from mcptape.report.terminal import make_console, render_diff

        render_diff(result, make_console(sys.stdout))
    return result.exit_code
