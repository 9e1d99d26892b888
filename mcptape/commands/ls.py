"""`mcptape ls [PATH...] [--json[=FILE]]`: the tapes under the paths (name, events, calls, protocol, complete, time, size).

`time` is the total of the calls' recorded latencies and the slowest call, for a tape that
carries timing (tape/timing.py; goldens never do); a fork (commands/fork.py) is marked with the
call it forked at.

A table on stdout, or with `--json` (on stdout; `--json=FILE` into FILE) a JSON list with the same facts, one object
per tape (`error` instead of the counts for one that cannot be read). A folder is a live thing: a
tape that goes away between finding it and reading it (another job's cleanup, a dangling link) is a
row that says so, and the rest are listed.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from mcptape.commands.grammar import STDOUT, Output, check_outputs
from mcptape.commands.output import print_report, terminal, write_output
from mcptape.diff.calls import build_calls
from mcptape.errors import TapeError
from mcptape.logsafe import utf8
from mcptape.report.terminal import rich_text
from mcptape.tape.format import TAPE_SUFFIX, Tape
from mcptape.tape.reader import read_tape
from mcptape.tape.timing import summary


@dataclass(frozen=True)
class Options:
    paths: tuple[str, ...]
    json: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(paths=tuple(args.paths or ["."]), json=args.json)

    def outputs(self) -> list[Output]:
        return [Output("--json", self.json)]


def _find_tapes(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(_tapes_under(p)))
        elif p.exists():
            found.append(p)
        else:
            raise TapeError(f"{p}: no such file or directory", hint="give directories or tape files to `mcptape ls`")
    return found


def _tapes_under(directory: Path) -> list[Path]:
    """The tapes under `directory`, skipping .git and node_modules. os.walk, not rglob: a folder that
    vanishes during the walk is skipped (os.walk ignores the error), where rglob's scandir would end
    the listing. Linked folders are followed, each real folder once (a link cycle ends there)."""
    out: list[Path] = []
    seen: set[str] = set()
    for root, dirs, files in os.walk(directory, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules")]
        out.extend(Path(root) / f for f in files if f.endswith(TAPE_SUFFIX))
    return out


def _size_of(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was found, or a dangling link: read_tape says which
        return None


def _listing(path: Path) -> dict[str, Any]:
    """One tape's row, as --json writes it."""
    row: dict[str, Any] = {"path": str(path), "bytes": _size_of(path)}
    try:
        tape = read_tape(path)
    except TapeError as e:
        return {"name": path.name, **row, "error": e.message}
    calls = sum(1 for c in build_calls(tape).calls if not c.notify)
    out = {"name": tape.name, **row, "events": len(tape.events), "calls": calls, "protocol": tape.protocol,
           "complete": tape.complete, "timing": summary(tape)}
    if "fork" in tape.header:
        out["fork"] = tape.header["fork"]
    return out


def _time_cell(tape: Tape) -> str:
    timing = summary(tape)
    if timing is None:
        return ""
    slowest = timing["slowest"]
    total = f"{timing['total_ms']:g} ms"
    return total if slowest is None else f"{total} (slowest {slowest['call']}: {slowest['latency_ms']:g} ms)"


def _name_cell(tape: Tape) -> str:
    fork = tape.header.get("fork")
    return tape.name if not isinstance(fork, dict) else f"{tape.name} (fork at call {fork.get('at')})"


def run(options: Options) -> int:
    """`mcptape ls [PATH...] [--json[=FILE]]`: the tapes under the paths."""
    check_outputs(options.outputs(), reads=options.paths)
    tapes = _find_tapes(list(options.paths))
    outlet = terminal()
    if options.json is not None:
        data = json.dumps([_listing(p) for p in tapes], indent=2, ensure_ascii=False) + "\n"
        write_output(options.json, utf8(data), what="tape list", outlet=outlet)
        if options.json == STDOUT:
            return 0
    if not tapes:
        print_report(lambda console: console.print(rich_text(f"no tapes (*.tape.jsonl) under {', '.join(options.paths)}")),
                     outlet)
        return 0
    table = Table()
    for col, justify in (("name", "left"), ("path", "left"), ("events", "right"), ("calls", "right"),
                         ("protocol", "left"), ("complete", "left"), ("time", "left"), ("size", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for path in tapes:
        size = _size(_size_of(path))
        try:
            tape = read_tape(path)
        except TapeError as e:
            table.add_row(rich_text(path.name), rich_text(str(path)), "", "", "", rich_text((f"unreadable: {e.message}", "red")), "", size)
            continue
        calls = sum(1 for c in build_calls(tape).calls if not c.notify)
        table.add_row(rich_text(_name_cell(tape)), rich_text(str(path)), str(len(tape.events)), str(calls), rich_text(tape.protocol or "?"),
                      rich_text(("yes", "green") if tape.complete else ("no (cut short)", "red")), rich_text(_time_cell(tape)), size)
    print_report(lambda console: console.print(table), outlet)
    return 0


def _size(n: int | None) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


