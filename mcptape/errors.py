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
    ├── ReplayMiss                    1  requests a tape could not answer (the library's replay, on leaving)
    ├── GitHubError                   3  a GitHub API call failed (which call, HTTP status, the fix)
    ├── WriteError                    3  a file could not be written (golden, fresh tape, report): path, cause
    ├── UsageError                    3  options that cannot be honoured together, an output onto an input: why, the fix
    └── SecretLeak                    4  a secret survived redaction; nothing was written

    McptapeWarning                       what a command says on stderr, the library says as a warning

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
    """Base of every error mcptape reports to a user: `message`, a `hint` (what to do next, or None)
    and the `exit_code` the command line exits with for it.

    >>> try:
    ...     mcptape.diff("tapes/missing.tape.jsonl", "tapes/arithmetic.tape.jsonl")
    ... except mcptape.McptapeError as e:
    ...     type(e).__name__, e.exit_code
    ('TapeError', 3)
    """

    exit_code: int = EXIT_COULD_NOT_RUN

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message: str = message
        self.hint: str | None = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(McptapeError):
    """mcptape.yml is invalid, or an option is; the message names file:line, the field and what would be valid.

    >>> try:
    ...     mcptape.replay("tapes/arithmetic.tape.jsonl", pace="slowly").__enter__()
    ... except mcptape.ConfigError as e:
    ...     e.hint
    'x2 replays twice as fast as recorded, x0.5 half as fast'
    """


class TapeError(McptapeError):
    """A tape cannot be read: missing, not JSONL, or written by an unknown format version.

    >>> try:
    ...     mcptape.replay("tapes/missing.tape.jsonl").__enter__()
    ... except mcptape.TapeError as e:
    ...     e.message
    'tapes/missing.tape.jsonl: no tape (record mode none plays only)'
    """


class ServerError(McptapeError):
    """A server failed to start, crashed or misbehaved so the session could not complete.

    >>> import asyncio, sys
    >>> async def initialize(endpoint: mcptape.Endpoint) -> None:
    ...     try:
    ...         async with endpoint.client_session() as session:
    ...             await session.initialize()
    ...     except Exception:
    ...         pass  # the server is gone: the client says so its own way
    >>> try:
    ...     with mcptape.record("gone.tape.jsonl", [sys.executable, "-c", "pass"]) as endpoint:
    ...         asyncio.run(initialize(endpoint))
    ... except mcptape.ServerError as e:
    ...     "rec exit 3" in e.message
    True
    """


class ServerTimeout(ServerError):
    """A request, step or session ran past its timeout (in a run, a session's verdict says so).

    >>> issubclass(mcptape.ServerTimeout, mcptape.ServerError), mcptape.ServerTimeout.exit_code
    (True, 3)
    """


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
    not run (exit 3), which is not drift.

    >>> try:
    ...     mcptape.replay("tapes/arithmetic.tape.jsonl", ignore_args=["$[unclosed"]).__enter__()
    ... except mcptape.ReplayError as e:
    ...     e.exit_code
    3
    """


class ReplayMiss(McptapeError):
    """Requests a replayed tape could not answer, or answered only with a --lenient substitute
    (play's exit 1). The client saw each as an error already; the library's `replay` raises this when
    its block ends without one of its own, as the pytest plugin fails a test that swallowed them.
    `misses` holds one line per request: the call, then why no recording matched.

    >>> import asyncio
    >>> async def add(endpoint: mcptape.Endpoint) -> None:
    ...     async with endpoint.client_session() as session:
    ...         await session.initialize()
    ...         try:
    ...             await session.call_tool("add", {"a": 2, "b": 4})  # not on the tape
    ...         except Exception:
    ...             pass  # the client saw the miss as an error answer, and went on
    >>> try:
    ...     with mcptape.replay("tapes/arithmetic.tape.jsonl", transport="memory") as endpoint:
    ...         asyncio.run(add(endpoint))
    ... except mcptape.ReplayMiss as e:
    ...     e.misses[0].split(": nearest")[0]
    'tools/call add {"a":2,"b":4}'
    """

    exit_code: int = EXIT_OUTPUT_DRIFT

    def __init__(self, message: str, *, misses: list[str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.misses: list[str] = misses


class GitHubError(McptapeError):
    """A GitHub API call failed: names the call, the HTTP status (`status`, None if none) and the fix."""

    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class WriteError(McptapeError):
    """A file could not be written (disk full, read-only, a directory in the way): names the path and the cause.

    >>> issubclass(mcptape.WriteError, mcptape.McptapeError), mcptape.WriteError.exit_code
    (True, 3)
    """


class UsageError(McptapeError):
    """Options that cannot be honoured together (never accepted and then ignored), or an output that
    would land on an input (commands/grammar.py): the reason and the fix."""


class SecretLeak(McptapeError):
    """A secret survived redaction. Nothing was written or posted; the message never holds the value.

    >>> mcptape.SecretLeak.exit_code  # what the command line exits with: a secret outranks everything
    4
    """

    exit_code: int = EXIT_SECRET


class McptapeWarning(UserWarning):
    """What a command says on stderr and carries on (a tape cut short, a tape played though edited,
    `--pace` on a tape without timing), said by the library through `warnings` instead.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with mcptape.replay("tapes/arithmetic.tape.jsonl", pace="recorded"):
    ...         pass
    >>> [w.category.__name__ for w in caught], "carries no timing" in str(caught[0].message)
    (['McptapeWarning'], True)
    """
