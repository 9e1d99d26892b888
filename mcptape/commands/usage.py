"""What each command's `--help` says beyond its options: what it does, its exit codes, the variables it reads.

One table (USAGE), rendered by cli.py under every subcommand's options (`render_epilog`). It lives
here, not in the command modules, because `--help` must not import a command (rich, pydantic and
the rest are imported only when a command runs). The exit codes are errors.py's (the
codes, or the error class whose code a row means), said the way each command uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcptape.errors import (
    EXIT_COULD_NOT_RUN,
    EXIT_OK,
    EXIT_OUTPUT_DRIFT,
    EXIT_SECRET,
    EXIT_STRUCTURAL_DRIFT,
    McptapeError,
    ReplayError,
)

DEBUG_VARIABLE = "MCPTAPE_DEBUG"
# transports/stdio.py's ENV_ALLOWLIST, said for a reader (tests/test_cli.py holds them equal).
SERVER_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT", "PYTHONIOENCODING")
SERVER_ENV = f"only {', '.join(SERVER_ALLOWLIST)} and the config's env: reach a server"
GITHUB_JOB = (
    ("GITHUB_ACTIONS", "=true: job summary, annotations, step outputs and the PR comment"),
    ("GITHUB_TOKEN, MCPTAPE_GITHUB_TOKEN", "the token the PR comment is posted with (MCPTAPE_ first)"),
    ("GITHUB_EVENT_PATH, GITHUB_REPOSITORY", "which pull request to comment on"),
    ("GITHUB_STEP_SUMMARY, GITHUB_OUTPUT", "where the job summary and the step outputs go"),
    ("GITHUB_API_URL", "the GitHub API (default https://api.github.com)"),
)


# An exit code as a help text names it: a code of errors.py, the error class whose code it is (so
# the help says what the command really exits with), or a text for signals.
ExitCode = int | str | type[McptapeError]


@dataclass(frozen=True)
class Usage:
    description: str
    exit_codes: tuple[tuple[ExitCode, str], ...]
    environment: tuple[tuple[str, str], ...] = ()


def exit_code_text(code: ExitCode) -> str:
    return code if isinstance(code, str) else str(code if isinstance(code, int) else code.exit_code)


COULD_NOT_RUN = (EXIT_COULD_NOT_RUN, "could not run: a bad option or path, an unreadable file")
OTEL = ("OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_*",
        "with --otel: where the traces go (OTLP/HTTP), how the service is named, the SDK's other settings")
USAGE: dict[str, Usage] = {
    "rec": Usage(
        "Record a live session: a transparent stdio proxy (or an HTTP one with --listen/--upstream) between "
        "an MCP client and a server. stdout is the MCP wire; everything human goes to stderr.",
        ((EXIT_OK, "the client ended the session"), (EXIT_COULD_NOT_RUN, "the server exited mid-session, or rec could not record"),
         (EXIT_SECRET, "a secret survived redaction: nothing was written"), ("129, 130, 143", "rec was interrupted")),
        (("(all)", "the server gets rec's whole environment; secret values in it are scrubbed from the tape"), OTEL),
    ),
    "play": Usage(
        "Serve a tape as an MCP server over stdio (or HTTP with --listen), offline: requests are answered "
        "by content from the tape, strictly unless --lenient.",
        ((EXIT_OK, "every request was answered from the tape"), (EXIT_OUTPUT_DRIFT, "some requests had no recorded answer (misses)"),
         (ReplayError, "the tape cannot be replayed"), COULD_NOT_RUN),
        (OTEL,),
    ),
    "diff": Usage(
        "Compare two tapes and name the first call that drifted, then the details.",
        ((EXIT_OK, "no drift"), (EXIT_OUTPUT_DRIFT, "output drift: same calls, different results or messages"),
         (EXIT_STRUCTURAL_DRIFT, "structural drift: surface, breaking schema, calls or error codes changed"),
         (EXIT_COULD_NOT_RUN, "could not run: a tape is missing, unreadable, or does not match its seal (--allow-edited)")),
        (("COLUMNS", "width of the report when stdout is not a terminal (default 160)"),),
    ),
    "import": Usage(
        "Turn an OTLP/JSON trace of an MCP session that carries its messages (exported with --otel-payloads) "
        "into a tape, redacted as rec redacts, so an incident becomes a replayable test.",
        ((EXIT_OK, "the tape was written"), (EXIT_COULD_NOT_RUN, "not such a trace, no messages in it, or several sessions and no --session"),
         (EXIT_SECRET, "a secret survived redaction: nothing was written")),
        (("(all)", "secret values in the environment are scrubbed from the tape, as rec does"),),
    ),
    "sign": Usage(
        "Sign tapes with an SSH key as git signs commits (ssh-keygen -Y sign, namespace mcptape): "
        "TAPE.sig beside each, checked by `mcptape verify --signature`.",
        ((EXIT_OK, "every tape was signed"), (EXIT_COULD_NOT_RUN, "a tape does not match its seal, no key, or ssh-keygen failed")),
        (("(git config) user.signingkey", "the key when --key is not given"),),
    ),
    "verify": Usage(
        "Check that each tape is what mcptape wrote: its footer's SHA-256 (and a rec tape's seal lines) over "
        "every line before it. A tape cut short verifies up to its last complete event.",
        ((EXIT_OK, "every tape is sealed, cut short and verified, or an unedited format-1 tape"),
         (EXIT_COULD_NOT_RUN, "a tape does not match its seal (the first line that does not is named), or cannot be read; "
               "with --signature, or is not signed by an allowed signer")),
        (("(git config) gpg.ssh.allowedSignersFile", "the allowed signers when --allowed-signers is not given"),),
    ),
    "ls": Usage(
        "List the tapes under the paths: name, events, calls, protocol, whether complete, size.",
        ((EXIT_OK, "listed (an unreadable tape is listed as such)"), (EXIT_COULD_NOT_RUN, "a path does not exist")),
        (("COLUMNS", "width of the table when stdout is not a terminal (default 160)"),),
    ),
    "show": Usage(
        "Show one tape's events as a table: line, direction, kind, id, method, summary.",
        ((EXIT_OK, "shown"), (EXIT_COULD_NOT_RUN, "the tape is missing or unreadable")),
        (("COLUMNS", "width of the table when stdout is not a terminal (default 160)"),),
    ),
    "ci": Usage(
        "Run the sessions of mcptape.yml against live servers, compare each fresh tape with its golden "
        "tape, report, and exit with the worst verdict. --update-golden (-u) accepts the fresh tapes.",
        ((EXIT_OK, "no drift"), (EXIT_OUTPUT_DRIFT, "output drift"), (EXIT_STRUCTURAL_DRIFT, "structural drift, or a session has no golden tape"),
         (EXIT_COULD_NOT_RUN, "could not run: invalid config, a server failed to start, crashed or timed out"),
         (EXIT_SECRET, "a secret survived redaction: nothing was written, nothing posted")),
        (("CI", "=true: --update-golden is refused unless --allow-update-in-ci"),
         ("${VAR} of the config", "interpolated in servers, sessions, client and golden_dir"),
         ("(servers)", SERVER_ENV), *GITHUB_JOB, OTEL,
         ("COLUMNS", "width of the report when stdout is not a terminal (default 160)")),
    ),
    "init": Usage(
        "Write a first mcptape.yml from a live server: list its tools, resources and prompts, call each "
        "read-only tool with arguments built from its inputSchema (calls that may change something are "
        "written commented out), run the session twice to find volatile values (a call that differs where no "
        "rule helps is commented out, with why). `--url URL -- CMD` starts an HTTP server with CMD, written as "
        "`start:`. Never overwrites a file.",
        ((EXIT_OK, "the config was written"),
         (EXIT_COULD_NOT_RUN, "no server given, the server could not be listed, or the file exists or cannot be written")),
        (("NAME of --env NAME", "passed to the server and written as ${NAME}"),
         ("${VAR} in --header", "interpolated for the listing, written as given (ci interpolates it)"),
         ("(servers)", SERVER_ENV)),
    ),
    "check": Usage(
        "Validate mcptape.yml as ci does before it starts a server (schema, sessions naming defined servers, "
        "variables, regexes, JSON paths, drift keys, paths), without starting any. --strength: measure the gate "
        "on its golden tapes, offline (the changes it would let through, and the rule that lets each through).",
        ((EXIT_OK, "valid: prints `ok: N sessions, M servers` (--strength: and the gate reaches drift.min_strength)"),
         (EXIT_COULD_NOT_RUN, "invalid: file:line, the field and the fix; --strength: a gate under drift.min_strength, "
          "or no golden tape to measure")),
        (("${VAR} of the config", "must be set, unless --allow-unset"),),
    ),
    "schema": Usage("Print the JSON Schema of mcptape.yml, as the package ships it.", ((EXIT_OK, "printed"),)),
    "comment": Usage(
        "Post or update the sticky PR comment from a body a ci run saved (the fork-PR pattern's second job).",
        ((EXIT_OK, "posted or updated"), (EXIT_COULD_NOT_RUN, "could not post: no PR, no token, an API error"),
         (EXIT_SECRET, "a secret survived redaction: nothing was posted")),
        GITHUB_JOB[1:] + (("GITHUB_WORKSPACE", "where the saved body's paths are relative to"),),
    ),
    "fork": Usage(
        "Write a fork of a tape: the answer at one call replaced by a result or an error, or dropped, later "
        "exchanges kept (or --cut). Its header names the parent and the change; `diff PARENT FORK` reads "
        "\"fork at call N\".",
        ((EXIT_OK, "the fork was written"), COULD_NOT_RUN, (EXIT_SECRET, "a secret survived redaction: nothing was written")),
    ),
    "merge": Usage(
        "Combine the JSON reports of sharded ci runs (--shard I/N) into one verdict, report and summary.",
        ((EXIT_OK, "no drift"), (EXIT_OUTPUT_DRIFT, "output drift"), (EXIT_STRUCTURAL_DRIFT, "structural drift"),
         (EXIT_COULD_NOT_RUN, "could not run: a report is unreadable, or the reports are not shards of one run"),
         (EXIT_SECRET, "a secret survived redaction")),
        GITHUB_JOB,
    ),
}


def render_epilog(command: str) -> str:
    """The `exit codes:` and `environment:` tables of `command` (argparse prints them as written)."""
    usage = USAGE[command]
    environment = (*usage.environment, (DEBUG_VARIABLE, "=1: an internal error prints its traceback"))
    codes = [(exit_code_text(code), meaning) for code, meaning in usage.exit_codes]
    width = max(len(code) for code, _ in codes)
    lines = ["exit codes:", *(f"  {code:<{width}}  {meaning}" for code, meaning in codes), "", "environment:"]
    width = max(len(name) for name, _ in environment)
    lines += [f"  {name:<{width}}  {meaning}" for name, meaning in environment]
    return "\n".join(lines)
