"""The outlet: the one place verified bytes leave mcptape — tapes, reports, the job summary, the PR comment, the terminal.

Secrets are scrubbed where content is made from tapes (ci's session pipeline redacts every
event, rec's writer every line), with a Redactor from redact.make_redactor; documents (markdown,
the PR comment, messages) are rendered plain and scrubbed here, once, on their way out. Every
byte that leaves passes an Outlet, which runs the same Redactor's separately built checker over
the exact bytes (`Redactor.verify`) and raises SecretLeak (exit 4) before anything is written,
printed or posted: a scrubber that missed something fails closed here. What was checked lately
is not checked twice when it is then written (`_checked`).

    verified(data)       bytes (or text) checked, returned as they are
    document(text)       text scrubbed and checked: a markdown document, a comment body, a message
    tape_line(event)     one tape line scrubbed, serialized and checked (rec's writers)
    write(path, data)    checked, then written atomically (tapes, reports, the summary, the comment body)
    write_document(path, text)  document(text), then written atomically (the markdown summary)
    append(path, text)   checked, then appended (the job summary, step outputs, play's live answers)
    show(text)           checked, then printed, framed so a CI log cannot take it for a command
    report(render)       a rich report rendered, checked, printed framed (`diff`, `show`, `ls`)
    output(target, data) `--json=FILE`: checked, then FILE written, or stdout for None
    say(text)            a message on stderr: scrubbed, checked, escaped and framed
    command(line)        a workflow command of ours, checked, printed as it is
    release()            files that leave together or not at all (Release: a session's, a run's reports)
    relay(fd, text)      a peer's text rec shows (the server's stderr, scrubbed as its tape line), checked

Nothing else in mcptape writes to a stream or a file (tests/test_architecture.py reads every
module for a write and allows these and the wire: the MCP bytes rec relays and play serves, and
the tape file rec's writer streams lines the outlet made into, tape/format.py's TapeWriter). A
command without a config speaks through `terminal()`: the secrets of its command line and
environment, home and user names kept (the output is the user's own).

Used by `mcptape ci` (fresh and golden tapes, reports, the terminal report), `merge`, `comment`,
`rec` (every tape line, the header, the server's stderr it shows) and github.py (summary,
annotations, outputs, the comment), each with one Outlet per run (`for_config`): the config's
known secrets, patterns and allow-list, so what the run scrubbed is what it checks.
"""

from __future__ import annotations

import functools
import io
import os
import select
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from mcptape.errors import WriteError
from mcptape.logsafe import ci_log_block, inert_json, safe_log, utf8
from mcptape.redact.redactor import Redactor, make_redactor
from mcptape.tape.atomic import write_atomic

if TYPE_CHECKING:
    from rich.console import Console

    from mcptape.config.load import LoadedConfig

Checked = TypeVar("Checked", str, bytes)
OWN_PATH = "<mcptape-path>"  # what one of mcptape's own paths reads as while a text is checked (Outlet.verified)


def config_redactor(loaded: LoadedConfig | None, known: Mapping[str, str] | None = None) -> Redactor:
    """The Redactor of a run of `loaded` (None: no config, the built-in detectors): its known
    secrets (plus `known`), its `redact:` patterns and allow-list. A fresh one per output."""
    if loaded is None:
        return make_redactor(known)
    return make_redactor({**loaded.secrets, **(known or {})}, loaded.config.redact)


# The command line of this run (cli.py sets it): its secrets are known to every message (safe_message).
_COMMAND_LINE: list[str] = []


def set_command_line(argv: Sequence[str]) -> None:
    """The command line of this run, whose secrets (policy.argv_secrets) no message may show."""
    _COMMAND_LINE[:] = list(argv)


# Whether this process's messages are checked with the rule set too (redact/rules.py). rec and
# play speak the MCP wire: the rule set's Go runtime stays off their processes (rec forks its
# writer; a wire waits for nothing), so their progress lines (`recording ... -> TAPE`, play's
# report) are checked by our own detectors and the known secrets; the text they quote was
# scrubbed with the rule set where it came from (a tape line by rec's writer, a client's request
# by replay/nearmiss.py). Every other message, and every file, report and document, gets both.
_MESSAGE_RULES = [True]


def wire_process(speaks: bool = True) -> None:
    """This process speaks the MCP wire (rec, play): its messages are checked without the rule set.
    `speaks=False` ends that where the process goes on to other commands (cli.main, in-process)."""
    _MESSAGE_RULES[0] = not speaks


@functools.lru_cache(maxsize=8)
def _message_redactor(argv: tuple[str, ...], env: tuple[tuple[str, str], ...],
                      known: tuple[tuple[str, str], ...], rules: bool = True) -> Redactor:
    from mcptape.redact.policy import command_secrets

    return Redactor(known={**command_secrets(list(argv), dict(env)), **dict(known)}, home=None, user=None, rules=rules)


def safe_message(text: str, argv: Sequence[str] | None = None, fallback: str = "",
                 known: Mapping[str, str] | None = None) -> str:
    """An error or usage message for stderr: scrubbed and verified, then made inert for a CI log.

    Messages quote what the user typed and what the config interpolated (a server command with
    `--token ghp_...`, a `${API_TOKEN}` value in the wrong field), so beyond the built-in
    detectors the known secrets are the command line's (`argv`, else this run's: by
    policy.argv_secrets), the environment's (policy.env_secrets: where `${VAR}` values come from)
    and `known` (a run's: its config's). Home and user names stay: the message is the user's own.
    `fallback` (or a withheld notice) if it cannot be checked.
    """
    try:
        redactor = _message_redactor(tuple(_COMMAND_LINE if argv is None else argv), tuple(sorted(os.environ.items())),
                                     tuple(sorted((known or {}).items())), _MESSAGE_RULES[0])
        text = redactor.guard(text, "message")
    except Exception:  # noqa: BLE001 - reporting an error must not crash: then say less
        text = fallback or "mcptape: error (message withheld: it could not be checked for secrets)\n"
    return safe_log(text)


def say(text: str, *, known: Mapping[str, str] | None = None, file: IO[str] | None = None, fallback: str = "") -> None:
    """A human line (or lines) on stderr, or `file`: scrubbed and verified (safe_message), escaped
    so no tape or peer text in it can act on a terminal, and in a GitHub job framed; `fallback`
    instead if it cannot be checked."""
    out = file if file is not None else sys.stderr
    out.write(safe_message(text if text.endswith("\n") else text + "\n", fallback=fallback, known=known))
    out.flush()


def terminal(known: Mapping[str, str] | None = None) -> Outlet:
    """The outlet of what a command shows its user (`diff`, `show`, `ls`, `play`): the secrets of
    its command line and environment (as its messages have) and `known` (a config's), the built-in
    detectors, and the home and user names left as they are: what it prints is the user's own,
    about their files (a tape's path names the home it is in)."""
    return Outlet(_message_redactor(tuple(_COMMAND_LINE), tuple(sorted(os.environ.items())),
                                    tuple(sorted((known or {}).items()))))


class Outlet:
    """Where verified bytes leave (module docstring); one per run, around the run's Redactor."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        # Where workflow commands go: stdout, unless stdout carries a document (`--json -`): the
        # runner reads commands from stderr as well, and stdout must stay one JSON document.
        self.commands_to: IO[str] | None = None
        # The bytes and texts checked last (by identity: a golden written twice, golden and
        # --out-dir; a document checked before anything is written, then written): checked once.
        self._checked: deque[str | bytes] = deque(maxlen=4)

    @classmethod
    def for_config(cls, loaded: LoadedConfig | None, known: Mapping[str, str] | None = None) -> Outlet:
        return cls(config_redactor(loaded, known))

    def verified(self, data: Checked, where: str, *, form: str = "lines", own: Sequence[str] = ()) -> Checked:
        """`data` once the checker found no secret in it; SecretLeak (nothing leaves) if it did.
        `form` is how the bytes read (Redactor.verify): "lines", or "view" for a review view.
        `own`: paths of mcptape's own making in the text (the runner's RUNNER_TEMP, where the
        comment body is saved), which the home-directory detector would read as a home: the
        text is checked with each of them taken out, everything around them as it is."""
        if own:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            for path in sorted(own, key=len, reverse=True):
                text = text.replace(path, OWN_PATH)
            self.redactor.verify(text, where, form=form)
        elif not any(data is seen for seen in self._checked):
            self.redactor.verify(data, where, form=form)
            self._checked.append(data)
        return data

    def release(self) -> Release:
        """Files that leave together or not at all (Release): one session's, one run's reports."""
        return Release(self)

    def document(self, text: str, where: str) -> str:
        """Text scrubbed and checked (Redactor.guard): a document or message about to leave. The
        one place a rendered document is scrubbed: renderers (report/) only render."""
        cleaned = self.redactor.guard(text, where)
        self._checked.append(cleaned)
        return cleaned

    def tape_line(self, event: Mapping[str, Any], where: str, text: str | None = None) -> bytes:
        """One tape line scrubbed, serialized and checked (Redactor.line_bytes); `text` is `dumps(event)` if known."""
        return self.redactor.line_bytes(event, where, text)

    def write(self, path: str | Path, data: bytes | str, *, what: str, where: str | None = None) -> None:
        """Check `data`, then write it atomically (tape/atomic.py: a WriteError names the path)."""
        where = where or f"{what} {path}"
        write_atomic(path, utf8(self.verified(data, where)) if isinstance(data, str) else self.verified(data, where),
                     what=what)

    def write_tape(self, path: str | Path, header: Mapping[str, Any], events: Sequence[Mapping[str, Any]], *, what: str,
                   **footer: Any) -> None:
        """A whole tape scrubbed and checked (Redactor.redact_tape), then written atomically."""
        data = self.redactor.redact_tape(header, events, where=f"{what} {path}", **footer)
        self._checked.append(data)
        self.write(path, data, what=what)

    def write_document(self, path: str | Path, text: str, *, what: str, where: str | None = None) -> None:
        """Scrub and check a rendered document (`document`), then write it atomically."""
        self.write(path, self.document(text, where or f"{what} {path}"), what=what)

    def append(self, path: str, text: str, *, what: str, own: Sequence[str] = ()) -> None:
        """Check `text` (`own`: mcptape's own paths in it, see `verified`), then append it."""
        self.verified(text, what, own=own)
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise WriteError(f"{path}: cannot write the {what}: {e.strerror}") from e

    def show(self, text: str, where: str, *, escape: bool = False, file: IO[str] | None = None) -> None:
        """Check `text`, then print it framed for a CI log (logsafe.ci_log_block); `escape` for text
        no renderer of ours has made safe already (logsafe.safe_log escapes what could act)."""
        self.verified(text, where)
        out = file if file is not None else sys.stdout
        out.write(safe_log(text) if escape else ci_log_block(text))
        out.flush()

    def say(self, text: str) -> None:
        """A message on stderr (module-level `say`), with this run's known secrets known to it too."""
        say(text, known=self.redactor.known)

    def report(self, render: Callable[[Console], None], file: IO[str] | None = None) -> None:
        """A rich report (report/terminal.py) rendered into text, checked, then printed on `file`
        (stdout), framed in a GitHub job so no tape text in it acts as a workflow command."""
        from mcptape.report.terminal import make_console  # rich: only commands that print a report pay for it

        target = file if file is not None else sys.stdout
        buffer = io.StringIO()
        render(make_console(buffer, terminal=target.isatty()))
        self.show(buffer.getvalue(), "terminal report", file=target)

    def relay(self, fd: int, text: str) -> None:
        """A peer's text on `fd` (rec's stderr): checked, escaped and framed as `say` does, written
        whole however the fd takes it (a terminal someone else set non-blocking)."""
        data = safe_log(self.verified(text, "the server's stderr")).encode("utf-8")
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                select.select([], [fd], [], 1.0)

    def output(self, target: str | None, data: bytes, *, what: str) -> None:
        """A report option's file (`--json=FILE`): `data` checked, then written to FILE atomically,
        or to stdout as one JSON document, inert in a CI log, when `target` is None."""
        release = self.release()
        release.output(target, data, what=what)
        release.write()

    def command(self, line: str, where: str, *, own: Sequence[str] = ()) -> None:
        """A workflow command of ours (`::error file=...::...`), checked, printed as it is."""
        self.verified(line, where, own=own)
        print(line, flush=True, file=self.commands_to if self.commands_to is not None else sys.stdout)


class Release:
    """Files that leave together or not at all: each is verified as it is added, and none is
    written until `write`, so a secret the last check finds (a review view, a sidecar) leaves
    nothing of the others behind. A session's fresh tape, its timing and its view, its golden and
    the golden's view go out as one release (ci/session.py)."""

    def __init__(self, outlet: Outlet) -> None:
        self.outlet = outlet
        self.files: list[tuple[Path | None, bytes, str]] = []  # None: stdout (bytes as they go there)
        self.written: list[Path] = []  # by `write`, in order: what a write that failed midway left

    def add(self, path: str | Path, data: bytes | str, *, what: str, form: str = "lines") -> None:
        """Verify `data` (SecretLeak: nothing of the release leaves), to be written to `path` by `write`."""
        where = f"{what} {path}"
        if isinstance(data, str):
            data = utf8(self.outlet.verified(data, where, form=form))
        else:
            data = self.outlet.verified(data, where, form=form)
        self.files.append((Path(path), data, what))

    def output(self, target: str | None, data: bytes, *, what: str) -> None:
        """`add`, or for None (stdout) one JSON document on stdout, inert in a CI log."""
        if target is not None:
            self.add(target, data, what=what)
            return
        checked = self.outlet.verified(data, f"{what} (stdout)")
        self.files.append((None, utf8(inert_json(checked.decode("utf-8"))), what))

    def show(self, text: str, *, what: str) -> None:
        """A report that goes to stdout as text (`--junit` alone), checked now, printed by `write`
        framed for a CI log as Outlet.show prints."""
        self.files.append((None, utf8(ci_log_block(self.outlet.verified(text, f"{what} (stdout)"))), what))

    def write(self) -> None:
        """Write every file, in the order added (tape/atomic.py: a WriteError names the path)."""
        for path, data, what in self.files:
            if path is None:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
                continue
            write_atomic(path, data, what=what)
            self.written.append(path)
