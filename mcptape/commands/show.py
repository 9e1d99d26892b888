"""`mcptape show TAPE [--full]`: one row per event of a tape (line, direction, kind, id, method, summary)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from mcptape.commands.terminal import print_report
from mcptape.jsonrpc import dumps
from mcptape.report.terminal import message_summary, rich_text
from mcptape.tape.reader import read_tape


@dataclass(frozen=True)
class Options:
    tape: str
    full: bool

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tape=args.tape, full=bool(args.full))


def run(options: Options) -> int:
    """`mcptape show TAPE [--full]`: one row per event."""
    tape = read_tape(options.tape)
    header = tape.header
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
