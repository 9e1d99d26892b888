"""`mcptape diff A B [--json] [--conformance]`: read two tapes, diff them, print the verdict, exit 0/1/2 (3: unreadable).

Reading and printing only: the pair of tapes is tape/reader.py's `read_pair`, the comparison
diff/engine.py's, the rendering report/terminal.py's. diff is not a wire command, so its report
goes to stdout. rich is imported only to print the terminal report (`--json` does without it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from mcptape.commands.terminal import print_report
from mcptape.diff.engine import diff_tapes
from mcptape.logsafe import ci_log_block, escape_controls
from mcptape.tape.events import recording_notes
from mcptape.tape.reader import read_pair


@dataclass(frozen=True)
class Options:
    golden: str
    fresh: str
    json: bool
    conformance: bool
    exiting: bool  # the process ends right after (the console script): see run

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(golden=args.a, fresh=args.b, json=bool(args.json), conformance=bool(args.conformance),
                   exiting=bool(getattr(args, "exiting", False)))


def run(options: Options) -> int:
    # Parsing builds millions of acyclic objects; full GC passes over them only cost time.
    gc.disable()
    golden, fresh = read_pair(options.golden, options.fresh)  # TapeError -> exit 3 in cli.py
    result = diff_tapes(golden, fresh, conformance=options.conformance)
    # A limit mcptape hit while recording either tape (a message nested too deep) shaped how it
    # was compared: said with the verdict, never left to the tapes alone.
    notes = [f"{side} tape: {line}" for side, tape in (("golden", golden), ("fresh", fresh))
             for line in recording_notes(tape.events)]
    if options.json:
        data = result.to_dict()
        data["first_drift"] = result.first.one_line() if result.first is not None else None
        data["notes"] = notes
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        sys.stdout.write(ci_log_block(escape_controls(text, json=True)))
    else:
        from mcptape.report.terminal import note_lines, render_diff  # rich, for this report only

        def render(console: Any) -> None:
            render_diff(result, console)
            note_lines(notes, console)

        print_report(render)
    if options.exiting:
        # The process ends here. Both tapes and the diff are millions of small objects; freeing
        # them one by one was 0.2 s of a 1.8 s diff of two 100k-event tapes. The OS takes the
        # memory back at once, so the output is flushed and the process leaves without it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(result.exit_code)
    return result.exit_code
