"""How commands speak to a person: a line on stderr, a report on stdout, a file an option names.

Every byte of it leaves through the outlet (publish/outlet.py), checked for secrets first: these
are the commands' names for it. `say` is a human line on stderr (for `rec` and `play` stdout is
the MCP wire): it may quote a tape or a peer, so it is scrubbed, escaped and, in a GitHub job,
framed. `print_report` renders a rich report (report/terminal.py) on stdout for `diff`, `ls` and
`show`, framed in a GitHub job as logsafe.ci_log_block says. `write_output` is what a report
option means in every command that has it (commands/grammar.py): FILE written atomically, or
stdout (`--json` alone, STDOUT); a command whose report goes to stdout prints its human report on
stderr instead (`report_stream`). `--html=FILE` is always a file (`check_html`), written through
the outlet (`write_page`). A command that reads no config passes `terminal()`'s outlet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from mcptape.commands.grammar import STDOUT
from mcptape.errors import EXIT_SECRET, ConfigError, SecretLeak
from mcptape.logsafe import utf8
from mcptape.publish import outlet as _outlet
from mcptape.publish.outlet import Outlet, terminal

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["STDOUT", "check_html", "print_report", "print_text", "report_stream", "say", "show", "stdout_or",
           "terminal", "write_output", "write_page"]


def say(text: str) -> None:
    """A human line on stderr, scrubbed, escaped and framed (module docstring)."""
    _outlet.say(text)


def show(text: str) -> None:
    """A line (or lines) of a command's own output on stdout: checked, escaped, framed in a GitHub job."""
    terminal().show(text if text.endswith("\n") else text + "\n", "terminal", escape=True)


def print_report(render: Callable[[Console], None], outlet: Outlet, file: IO[str] | None = None) -> None:
    """Render to `file` (stdout), checked by `outlet` and framed in a GitHub job (Outlet.report)."""
    outlet.report(render, file)


def print_text(text: str, outlet: Outlet) -> None:
    """Text already escaped by the caller, checked, on stdout; framed in a GitHub job."""
    outlet.show(text, "terminal report")


def stdout_or(target: str) -> str | None:
    """A report option's target as the outlet takes it: a path, or None for stdout (STDOUT)."""
    return None if target == STDOUT else target


def write_output(target: str, data: bytes, *, what: str, outlet: Outlet) -> None:
    """`--json=FILE` (or another report option): `data` checked by `outlet`, written to FILE
    atomically, or to stdout (`--json` alone) as one JSON document, inert in a CI log (Outlet.output)."""
    outlet.output(stdout_or(target), data, what=what)


def report_stream(*outputs: str | None) -> IO[str]:
    """Where the human report goes: stderr when one of the outputs is stdout (`--json -`), else stdout."""
    return sys.stderr if STDOUT in outputs else sys.stdout


def write_page(target: str, page: str, outlet: Outlet, name: str) -> int:
    """A page of `show`/`diff --html`, checked and written by `outlet`: 0, or EXIT_SECRET (nothing written)."""
    try:
        outlet.write(target, utf8(page), what="HTML page", where=f"HTML page {target}")
    except SecretLeak as e:
        outlet.say(f"mcptape {name}: {e}")
        return EXIT_SECRET
    return 0


def check_html(target: str | None) -> None:
    """`--html` names a file: a page on stdout would only scroll past (and could not be framed for
    a CI log the way JSON is), so stdout (`--html` alone, `--html=-`) is refused before anything runs."""
    if target == STDOUT:
        raise ConfigError("--html alone would write the page to stdout; the page is written to a file",
                          hint="name one: --html=report.html")
