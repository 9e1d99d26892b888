"""The one exception tree of mcptape; every error that reaches the CLI belongs to it.

Each class carries the exit code of docs/design.md that it maps to, so cli.py turns any of them
into a message on stderr and that code, never a traceback::

    McptapeError                      (3, could not run)
    ├── ConfigError                   3  invalid mcptape.yml: file:line, field, the fix
    ├── TapeError                     3  unreadable or unknown-version tape
    ├── ServerError                   3  a server failed to start, crashed or hung
    │   ├── ServerTimeout             3  a request or session ran past its timeout
    │   └── RequestRefused            3  the wire refused one request (an HTTP 4xx answer to its POST)
    ├── ReplayError                   3  a tape that cannot be replayed (say why): could not run
    ├── GitHubError                   3  a GitHub API call failed (which call, HTTP status, the fix)
    ├── WriteError                    3  a file could not be written (golden, fresh tape, report): path, cause
    └── SecretLeak                    4  a secret survived redaction; nothing was written

Foreign exceptions are translated at the boundary where they occur, with `raise ... from e`.
Anything that still escapes a command (a bug, by definition) is caught by cli.py's top level and
reported in one line as an internal error, exit 3: a crash is never a verdict.
"""

from __future__ import annotations

# Exit codes shared by diff, play and ci (docs/design.md).
EXIT_OK = 0
EXIT_OUTPUT_DRIFT = 1
EXIT_STRUCTURAL_DRIFT = 2
EXIT_COULD_NOT_RUN = 3
EXIT_SECRET = 4

# What each code means, for every command that reports a verdict: `mcptape --help`, the README's and
# docs/design.md's tables (tests/commands/test_usage.py holds them to this one).
EXIT_CODES: dict[int, tuple[str, str]] = {  # code -> (short name, meaning)
    EXIT_OK: ("no drift", "no drift"),
    EXIT_OUTPUT_DRIFT: ("output drift", "output drift: same calls, different results, error messages or notifications; "
                        "compatible or cosmetic schema changes (an optional parameter added, a description reworded)"),
    EXIT_STRUCTURAL_DRIFT: ("structural drift", "structural drift: tools/resources/prompts added or removed, a breaking "
                            "schema change, a call added/removed, a result turned into an error, an error code changed, "
                            "no golden tape for a session"),
    EXIT_COULD_NOT_RUN: ("could not run", "could not run: invalid config, server failed to start, crashed or timed "
                         "out, unreadable tape"),
    EXIT_SECRET: ("a secret survived redaction", "a secret survived redaction: nothing was written, nothing posted"),
}


class McptapeError(Exception):
    """Base of every error mcptape reports to a user."""

    exit_code = EXIT_COULD_NOT_RUN

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(McptapeError):
    """mcptape.yml is invalid; the message names file:line, the field and what would be valid."""


class TapeError(McptapeError):
    """A tape cannot be read: missing, not JSONL, or written by an unknown format version."""


class ServerError(McptapeError):
    """A server failed to start, crashed or misbehaved so the session could not complete."""


class ServerTimeout(ServerError):
    """A request, step or session ran past its timeout."""


class RequestRefused(ServerError):
    """The transport refused one request outright (an HTTP 400/404/405/406 to its POST, with or without
    a JSON-RPC body): `request_id` is the refused request's id, `status` the HTTP status. The client
    may take it as an answer (auto's `server/discover` probe falls back to `initialize` on it)."""

    def __init__(self, message: str, *, request_id: object, status: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.request_id = request_id
        self.status = status


class ReplayError(McptapeError):
    """A tape cannot be replayed at all (as opposed to one request it cannot answer): play could
    not run (exit 3), which is not drift."""


class GitHubError(McptapeError):
    """A GitHub API call failed: names the call, the HTTP status (`status`, None if none) and the fix."""

    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class WriteError(McptapeError):
    """A file could not be written (disk full, read-only, a directory in the way): names the path and the cause."""


class SecretLeak(McptapeError):
    """A secret survived redaction. Nothing was written or posted; the message never holds the value."""

    exit_code = EXIT_SECRET
