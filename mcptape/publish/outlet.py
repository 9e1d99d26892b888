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
    command(line)        a workflow command of ours, checked, printed as it is

Used by `mcptape ci` (fresh and golden tapes, reports, the terminal report), `merge`, `comment`,
`rec` (every tape line, the header, the server's stderr it shows) and github.py (summary,
annotations, outputs, the comment), each with one Outlet per run (`for_config`): the config's
known secrets, patterns and allow-list, so what the run scrubbed is what it checks.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from mcptape.errors import WriteError
from mcptape.logsafe import ci_log_block, safe_log, utf8
from mcptape.redact.redactor import Redactor, make_redactor
from mcptape.tape.atomic import write_atomic

if TYPE_CHECKING:
    from mcptape.config.load import LoadedConfig

Checked = TypeVar("Checked", str, bytes)


def config_redactor(loaded: LoadedConfig | None, known: Mapping[str, str] | None = None) -> Redactor:
    """The Redactor of a run of `loaded` (None: no config, the built-in detectors): its known
    secrets (plus `known`), its `redact:` patterns and allow-list. A fresh one per output."""
    if loaded is None:
        return make_redactor(known)
    return make_redactor({**loaded.secrets, **(known or {})}, loaded.config.redact)


def safe_message(text: str, argv: Sequence[str] = (), fallback: str = "") -> str:
    """An error or usage message for stderr: scrubbed and verified, then made inert for a CI log.

    Messages quote what the user typed and what the config interpolated (a server command with
    `--token ghp_...`, a `${API_TOKEN}` value in the wrong field), so beyond the built-in
    detectors the known secrets are the command line's (`argv`, by policy.argv_secrets) and the
    environment's (policy.env_secrets: where `${VAR}` values come from). Home and user names stay:
    the message is the user's own. `fallback` (or a withheld notice) if it cannot be checked.
    """
    try:
        from mcptape.redact.policy import command_secrets

        known = command_secrets(list(argv), os.environ)
        text = Redactor(known=known, home=None, user=None).guard(text, "message")
    except Exception:  # noqa: BLE001 - reporting an error must not crash: then say less
        text = fallback or "mcptape: error (message withheld: it could not be checked for secrets)\n"
    return safe_log(text)


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

    def verified(self, data: Checked, where: str) -> Checked:
        """`data` once the checker found no secret in it; SecretLeak (nothing leaves) if it did."""
        if not any(data is seen for seen in self._checked):
            self.redactor.verify(data, where)
            self._checked.append(data)
        return data

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

    def write_document(self, path: str | Path, text: str, *, what: str, where: str | None = None) -> None:
        """Scrub and check a rendered document (`document`), then write it atomically."""
        self.write(path, self.document(text, where or f"{what} {path}"), what=what)

    def append(self, path: str, text: str, *, what: str, verify: bool = True) -> None:
        """Check `text` (unless the caller checked what in it could hold a secret: `verify=False`,
        for the runner's own paths, which the home-directory detector would flag), then append it."""
        if verify:
            self.verified(text, what)
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

    def command(self, line: str, where: str) -> None:
        """A workflow command of ours (`::error file=...::...`), checked, printed as it is."""
        self.verified(line, where)
        print(line, flush=True, file=self.commands_to if self.commands_to is not None else sys.stdout)
