"""How commands speak to a person: a line on stderr, a report on stdout.

`say` is a human line on stderr (for `rec` and `play` stdout is the MCP wire): it may quote a
tape or a peer, so it is escaped and, in a GitHub job, framed (logsafe.safe_log). `print_report`
renders a rich report (report/terminal.py) on stdout for `diff`, `ls` and `show`, framed in a
GitHub job as logsafe.ci_log_block says. What a command writes that must be verified first goes
through the outlet (publish/outlet.py) instead. `write_output` is what a report option means in every
command that has it (commands/grammar.py): FILE written atomically, or stdout (`--json` alone,
STDOUT); a command whose report goes to stdout prints its human report on stderr instead (`report_stream`). `--html=FILE`
is always a file (`check_html`), written through the outlet (`write_page`).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

import mcptape.environment as environment
from mcptape.commands.grammar import STDOUT
from mcptape.errors import EXIT_SECRET, ConfigError, SecretLeak
from mcptape.logsafe import ci_log_block, inert_json, safe_log, utf8
from mcptape.tape.atomic import write_atomic

if TYPE_CHECKING:
    from rich.console import Console

    from mcptape.publish.outlet import Outlet



def say(text: str) -> None:
    """A human line on stderr, escaped and framed (module docstring)."""
    print(safe_log(text), file=sys.stderr, flush=True)


def print_report(render: Callable[[Console], None], file: IO[str] | None = None) -> None:
    """Render to `file` (stdout); in a GitHub job through a buffer and logsafe.ci_log_block, so
    no tape text in it acts as a workflow command."""
    from mcptape.report.terminal import make_console  # rich: only commands that print a report pay for it

    target = file if file is not None else sys.stdout
    if not environment.on_github_actions():
        render(make_console(target))
        return
    buffer = io.StringIO()
    render(make_console(buffer))
    target.write(ci_log_block(buffer.getvalue()))


def print_text(text: str) -> None:
    """Text already escaped by the caller, on stdout; framed in a GitHub job (logsafe.ci_log_block)."""
    sys.stdout.write(ci_log_block(text) if environment.on_github_actions() else text)


def write_output(target: str, data: bytes, *, what: str, outlet: Outlet | None = None) -> None:
    """`--json=FILE` (or another report option): `data`, checked by `outlet` when there is one, written
    to FILE atomically, or to stdout (`--json` alone)."""
    if outlet is not None:
        data = outlet.verified(data, f"{what} {target}")
    if target == STDOUT:
        data = utf8(inert_json(data.decode("utf-8")))  # one JSON document, never framed, yet inert
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        write_atomic(target, data, what=what)


def report_stream(*outputs: str | None) -> IO[str]:
    """Where the human report goes: stderr when one of the outputs is stdout (`--json -`), else stdout."""
    return sys.stderr if STDOUT in outputs else sys.stdout


def write_page(target: str, page: str, outlet: Outlet, name: str) -> int:
    """A page of `show`/`diff --html`, checked and written by `outlet`: 0, or EXIT_SECRET (nothing written)."""
    try:
        outlet.write(target, utf8(page), what="HTML page", where=f"HTML page {target}")
    except SecretLeak as e:
        print(f"mcptape {name}: {e}", file=sys.stderr)
        return EXIT_SECRET
    return 0


def check_html(target: str | None) -> None:
    """`--html` names a file: a page on stdout would only scroll past (and could not be framed for
    a CI log the way JSON is), so stdout (`--html` alone, `--html=-`) is refused before anything runs."""
    if target == STDOUT:
        raise ConfigError("--html alone would write the page to stdout; the page is written to a file",
                          hint="name one: --html=report.html")
