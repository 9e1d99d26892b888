"""`mcptape show TAPE [--full] [--json FILE]`: one row per event of a tape (line, direction, kind, id, method, summary).

With `--json FILE` (`-`: stdout) the same as JSON: the tape's header facts, then per event its
line in the file and the event itself, whole (what the table shortens).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from mcptape.commands.terminal import JSON_STDOUT, print_report, write_output
from mcptape.jsonrpc import dumps
from mcptape.logsafe import utf8
from mcptape.report.terminal import message_summary, rich_text
from mcptape.tape.reader import read_tape


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
    if options.json is not None:
        doc = {"name": tape.name, "protocol": tape.protocol, "complete": tape.complete,
               "recorded_by": header.get("version"),
               "events": [{"index": i + 1, "line": tape.line_of(i), "event": ev} for i, ev in enumerate(tape.events)]}
        write_output(options.json, utf8(json.dumps(doc, indent=2, ensure_ascii=False) + "\n"), what="tape")
        if options.json == JSON_STDOUT:
            return 0
    title = rich_text((tape.name, "bold"), f" · protocol {tape.protocol or '?'} · {len(tape.events)} events · "
                  f"{'complete' if tape.complete else 'cut short (no footer)'} · recorded by mcptape "
                  f"{header.get('version', '?')}")
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("line", justify="right")
    table.add_column("dir")
    table.add_column("kind")
    table.add_column("id")
    table.add_column("method")
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
            rich_text(message_summary(ev, limit)),
        )

    def render(console: Console) -> None:
        console.print(title, soft_wrap=True)
        console.print(table)

    print_report(render)
    return 0
