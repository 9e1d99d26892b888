"""`mcptape show TAPE [--full] [--json[=FILE]] [--html=FILE]`: one row per event of a tape (line, direction, kind, id, method, summary).

With `--json` (on stdout; `--json=FILE` into FILE) the same as JSON: the tape's header facts, then per event its
line in the file and the event itself, whole (what the table shortens). A tape that carries timing
(tape/timing.py) gets an `ms` column (an answer's latency; `+N` the gap since the last client
message) and, in JSON, each event's `at_ms` and the calls' latencies; a fork names its parent.
A tape of several HTTP sessions (rec --listen, tape/format.py's format 3) gets a `session` column:
ids repeat from one session to the next, so an id alone does not say which request an answer is for.

With `--html=FILE` the tape is one self-contained page instead of the table (report/html.py: every
message, filterable by direction, kind, method and tool, server requests under the call they came
in, each task's status path), checked by the outlet (built-in detectors) before it is written.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from mcptape.commands.grammar import STDOUT, Output, check_outputs
from mcptape.commands.output import check_html, print_report, print_text, write_output, write_page
from mcptape.jsonrpc import dumps
from mcptape.logsafe import escape_controls, utf8
from mcptape.publish.outlet import Outlet
from mcptape.report.html import render_tape
from mcptape.report.terminal import message_summary, rich_text
from mcptape.tape.format import SESSIONS_FORMAT, Tape
from mcptape.tape.reader import read_tape, stream_tape_events
from mcptape.tape.timing import call_times, client_gaps, event_times


@dataclass(frozen=True)
class Options:
    tape: str
    full: bool
    json: str | None = None
    html: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tape=args.tape, full=args.full, json=args.json, html=args.html)


# Above this many events the table is printed in pieces as the tape is read (stream_tape_events):
# one rich table of 600 000 rows took 45 s and 500 MB before it printed its first line.
STREAM_EVENTS = 5000
STREAM_ROWS = 2000


def run(options: Options) -> int:
    """`mcptape show TAPE [--full] [--json[=FILE]] [--html=FILE]`: one row per event."""
    check_html(options.html)
    check_outputs([Output("--json", options.json), Output("--html", options.html)], reads=[options.tape])
    if options.html is not None:
        tape = read_tape(options.tape)
        code = write_page(options.html, render_tape(tape, path=options.tape), Outlet.for_config(None), "show")
        if code or options.json is None:
            return code
    if options.json is None:
        tape, count, events = stream_tape_events(options.tape)
        if count > STREAM_EVENTS:
            _show_streamed(options, tape, count, events)
            return 0
        tape.events.extend(ev for _, ev in events)
    else:
        tape = read_tape(options.tape)
    header = tape.header
    times = event_times(tape)
    calls = call_times(tape, times)
    gaps = client_gaps(tape, times)
    if options.json is not None:
        doc = {"name": tape.name, "protocol": tape.protocol, "complete": tape.complete,
               "recorded_by": header.get("version"),
               "events": [{"index": i + 1, "line": tape.line_of(i), "event": ev,
                           **({"at_ms": times[i]} if times is not None else {})} for i, ev in enumerate(tape.events)]}
        if "fork" in header:
            doc["fork"] = header["fork"]
        if times is not None:
            doc["timing"] = {"unit": "ms", "calls": [c.to_dict() for c in calls],
                             "client_gaps": [{"event": i + 1, "gap_ms": gap} for i, gap in gaps]}
        write_output(options.json, utf8(json.dumps(doc, indent=2, ensure_ascii=False) + "\n"), what="tape")
        if options.json == STDOUT:
            return 0
    ms: dict[int, str] | None = None
    if times is not None:
        ms = {i: f"+{gap:g}" for i, gap in gaps}
        ms.update((c.answer, f"{c.latency_ms:g}") for c in calls if c.answer is not None and c.latency_ms is not None)
    sessions = _has_sessions(tape)
    table = _table(options, timed=ms is not None, sessions=sessions)
    for i, ev in enumerate(tape.events):
        _add_row(table, options, i, tape.line_of(i), ev, None if ms is None else ms.get(i, ""), sessions=sessions)
    title = _title(tape, len(tape.events), timed=ms is not None)

    def render(console: Console) -> None:
        console.print(title, soft_wrap=True)
        console.print(table)

    print_report(render)
    return 0


def _has_sessions(tape: Tape) -> bool:
    return tape.header.get("format") == SESSIONS_FORMAT


def _session_cell(ev: dict[str, Any]) -> str:
    session = ev.get("session")
    return str(session) if isinstance(session, int) else ""


def _title(tape: Tape, count: int, *, timed: bool = False) -> Any:
    header = tape.header
    fork = header.get("fork")
    return rich_text((tape.name, "bold"), f" · protocol {tape.protocol or '?'} · {count} events · "
                     f"{'complete' if tape.complete else 'cut short (no footer)'} · recorded by mcptape "
                     f"{header.get('version', '?')}"
                     + (" · times in ms (answer: latency; +: gap since the last client message)" if timed else "")
                     + (f" · fork of {fork.get('parent')} at call {fork.get('at')} ({fork.get('change')})"
                        if isinstance(fork, dict) else ""))


def _table(options: Options, widths: dict[str, int] | None = None, *, header: bool = True, timed: bool = False,
           sessions: bool = False) -> Table:
    table = Table(show_header=header)
    columns = [("#", "right"), ("line", "right"), *([("session", "right")] if sessions else []), ("dir", "left"),
               ("kind", "left"), ("id", "left"), ("method", "left")]
    for name, justify in columns + ([("ms", "right")] if timed else []):
        width = (widths or {}).get(name)
        table.add_column(name, justify=justify, width=width, min_width=width, no_wrap=widths is not None)  # type: ignore[arg-type]
    table.add_column("summary", overflow="fold" if options.full else "ellipsis")
    return table


def _add_row(table: Table, options: Options, i: int, line: int, ev: dict[str, Any], ms: str | None = None, *,
             sessions: bool = False) -> None:
    table.add_row(
        str(i + 1),
        str(line),
        *([_session_cell(ev)] if sessions else []),
        rich_text(str(ev.get("dir", ""))),
        rich_text((str(ev.get("kind")), "red" if ev.get("kind") in ("error", "garbage", "exit") else "")),
        rich_text(dumps(ev["id"]) if "id" in ev else ""),
        rich_text(str(ev.get("method", ""))),
        *([] if ms is None else [ms]),
        rich_text(message_summary(ev, None if options.full else 80)),
    )


def _show_streamed(options: Options, tape: Tape, count: int,
                   events: Iterator[tuple[int, dict[str, Any]]]) -> None:
    """A long tape's rows, printed as it is read, STREAM_ROWS at a time: plain aligned columns
    (rich lays out ~1000 rows a second; this is the table's content at the speed of the reader),
    escaped as every rendering of tape text is, framed in a GitHub job (print_report)."""
    title = _title(tape, count)
    print_report(lambda console: console.print(title, soft_wrap=True))
    digits = len(str(count))
    sessions = _has_sessions(tape)
    widths = (digits, digits + 1, *((7,) if sessions else ()), 3, 12, 8, 28)
    head = ("#", "line", *(("session",) if sessions else ()), "dir", "kind", "id", "method", "summary")
    rows = ["  ".join(f"{h:>{w}}" if k < 2 else f"{h:<{w}}" for k, (h, w) in enumerate(zip(head, widths, strict=False)))
            + "  summary"]
    limit = None if options.full else 80
    for i, (line, ev) in enumerate(events):
        cells = (*((_session_cell(ev),) if sessions else ()), str(ev.get("dir", "")), str(ev.get("kind")),
                 dumps(ev["id"]) if "id" in ev else "", str(ev.get("method", "")))
        rows.append(f"{i + 1:>{digits}}  {line:>{digits + 1}}  "
                    + "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths[2:], strict=True))
                    + "  " + message_summary(ev, limit).replace("\n", " "))
        if len(rows) >= STREAM_ROWS:
            _print_rows(rows)
            rows = []
    if rows:
        _print_rows(rows)


def _print_rows(rows: list[str]) -> None:
    print_text(escape_controls("\n".join(rows)) + "\n")
