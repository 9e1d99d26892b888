"""`mcptape diff A B [--json]`: read two tapes, diff them, print the verdict, exit 0/1/2 (3: unreadable).

Reading and printing only; the comparison is engine.py's, the rendering report/terminal.py's.
diff is not a wire command, so its report goes to stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

from mcptape.tape.format import read_tape


def run_diff(args: argparse.Namespace) -> int:
    from mcptape.diff.engine import diff_tapes

    # Parsing builds millions of acyclic objects; full GC passes over them only cost time.
    gc.disable()
    golden = read_tape(args.a)  # TapeError -> exit 3 in cli.py
    fresh = read_tape(args.b)
    result = diff_tapes(golden, fresh)
    if getattr(args, "json", False):
        data = result.to_dict()
        data["first_drift"] = result.first.one_line() if result.first is not None else None
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        from mcptape.report.terminal import make_console, render_diff

        render_diff(result, make_console(sys.stdout))
    return result.exit_code
