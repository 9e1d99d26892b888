"""`mcptape show TAPE [--full] [--json FILE]`: one row per event of a tape (line, direction, kind, id, method, time, summary).

With `--json FILE` (`-`: stdout) the same as JSON: the tape's header facts, then per event its
line in the file and the event itself, whole (what the table shortens), and for a tape that
carries timing (tape/timing.py) each event's `at_ms` and a `timing` object: per call its latency,
per client message the gap since the previous one. In the table, the `ms` column holds an
answer's latency and, prefixed `+`, a client message's gap since the previous client message.
A fork (commands/fork.py) shows its parent and change in the title.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from mcptape.commands.terminal import JSON_STDOUT, print_report, write_output
from mcptape.jsonrpc import dumps
from mcptape.report.terminal import message_summary, rich_text
from mcptape.tape.reader import read_tape
from mcptape.tape.timing import call_times, client_gaps, event_times


@dataclass(frozen=True)
class Options:
    tape: str
    full: bool
    json: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tape=args.tape, full=bool(args.full), json=args.json)


def run(options: Options) -> int:
    """`mcptape show TAPE [--full] [--json FILE]`: one row per event."""
    tape = read_tape(options.tape)
    header = tape.header
    times = event_times(tape)
    calls = call_times(tape, times)
    gaps = client_gaps(tape, times)
    cell: dict[int, str] = {i: f"+{gap:g}" for i, gap in gaps}
    cell.update((c.answer, f"{c.latency_ms:g}") for c in calls if c.answer is not None and c.latency_ms is not None)
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
        write_output(options.json, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), what="tape")
        if options.json == JSON_STDOUT:
            return 0
    title = rich_text((tape.name, "bold"), f" · protocol {tape.protocol or '?'} · {len(tape.events)} events · "
                  f"{'complete' if tape.complete else 'cut short (no footer)'} · recorded by mcptape "
                  f"{header.get('version', '?')}"
                  + ("" if times is None else " · times in ms (answer: latency; +: gap since the last client message)")
                  + ("" if "fork" not in header else f" · fork of {header['fork'].get('parent')} at call "
                     f"{header['fork'].get('at')} ({header['fork'].get('change')})"))
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("line", justify="right")
    table.add_column("dir")
    table.add_column("kind")
    table.add_column("id")
    table.add_column("method")
    if times is not None:
        table.add_column("ms", justify="right")
    table.add_column("summary", overflow="fold" if options.full else "ellipsis")
    limit = None if options.full else 80
    for i, ev in enumerate(tape.events):
        table.add_row(
            str(i + 1),
            str(tape.line_of(i)),
            rich_text(str(ev.get("dir", ""))),
            rich_text((str(ev.get("kind")), "red" if ev.get("kind") in ("error", "garbage", "exit") else "")),
            rich_text(dumps(ev["id"]) if "id" in ev else ""),
            rich_text(str(ev.get("method", ""))),
            *([cell.get(i, "")] if times is not None else []),
            rich_text(message_summary(ev, limit)),
        )

    def render(console: Console) -> None:
        console.print(title, soft_wrap=True)
        console.print(table)

    print_report(render)
    return 0
