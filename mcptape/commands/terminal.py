"""How commands speak to a person: a line on stderr, a report on stdout.

`say` is a human line on stderr (for `rec` and `play` stdout is the MCP wire): it may quote a
tape or a peer, so it is escaped and, in a GitHub job, framed (logsafe.safe_log). `print_report`
renders a rich report (report/terminal.py) on stdout for `diff`, `ls` and `show`, framed in a
GitHub job as logsafe.ci_log_block says. What a command writes that must be verified first goes
through the outlet (outlet.py) instead.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from mcptape.logsafe import ci_log_block, safe_log

if TYPE_CHECKING:
    from rich.console import Console


def say(text: str) -> None:
    """A human line on stderr, escaped and framed (module docstring)."""
    print(safe_log(text), file=sys.stderr, flush=True)


def print_report(render: Callable[[Console], None], file: IO[str] | None = None) -> None:
    """Render to `file` (stdout); in a GitHub job through a buffer and logsafe.ci_log_block, so
    no tape text in it acts as a workflow command."""
    from mcptape.report.terminal import make_console  # rich: only commands that print a report pay for it

    target = file if file is not None else sys.stdout
    if os.environ.get("GITHUB_ACTIONS") != "true":
        render(make_console(target))
        return
    buffer = io.StringIO()
    render(make_console(buffer))
    target.write(ci_log_block(buffer.getvalue()))
