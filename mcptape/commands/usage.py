"""What each command's `--help` says beyond its options: what it does, its exit codes, the variables it reads.

One table (USAGE), rendered by cli.py under every subcommand's options (`render_epilog`). It lives
here, not in the command modules, because `--help` must not import a command (rich, pydantic and
the rest are imported only when a command runs). The exit codes are DESIGN.md's, said the way
each command uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Usage:
    description: str
    exit_codes: tuple[tuple[str, str], ...]
    environment: tuple[tuple[str, str], ...] = ()


COULD_NOT_RUN = ("3", "could not run: a bad option or path, an unreadable file")
OTEL = ("OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_*",
        "with --otel: where the traces go (OTLP/HTTP), how the service is named, the SDK's other settings")
USAGE: dict[str, Usage] = {
    "rec": Usage(
        "Record a live session: a transparent stdio proxy (or an HTTP one with --listen/--upstream) between "
        "an MCP client and a server. stdout is the MCP wire; everything human goes to stderr.",
        (("0", "the client ended the session"), ("3", "the server exited mid-session, or rec could not record"),
         ("4", "a secret survived redaction: nothing was written"), ("129, 130, 143", "rec was interrupted")),
        (("(all)", "the server gets rec's whole environment; secret values in it are scrubbed from the tape"), OTEL),
    ),
    "play": Usage(
        "Serve a tape as an MCP server over stdio (or HTTP with --listen), offline: requests are answered "
        "by content from the tape, strictly unless --lenient.",
        (("0", "every request was answered from the tape"), ("1", "some requests had no recorded answer (misses)"),
         ("2", "the tape cannot be replayed"), COULD_NOT_RUN),
        (OTEL,),
    ),
    "diff": Usage(
        "Compare two tapes and name the first call that drifted, then the details.",
        (("0", "no drift"), ("1", "output drift: same calls, different results or messages"),
         ("2", "structural drift: surface, breaking schema, calls or error codes changed"),
         ("3", "could not run: a tape is missing, unreadable, or does not match its seal (--allow-edited)")),
        (("COLUMNS", "width of the report when stdout is not a terminal (default 160)"),),
    ),
    "import": Usage(
        "Turn an OTLP/JSON trace of an MCP session that carries its messages (exported with --otel-payloads) "
        "into a tape, redacted as rec redacts, so an incident becomes a replayable test.",
        (("0", "the tape was written"), ("3", "not such a trace, no messages in it, or several sessions and no --session"),
         ("4", "a secret survived redaction: nothing was written")),
        (("(all)", "secret values in the environment are scrubbed from the tape, as rec does"),),
    ),
    "sign": Usage(
        "Sign tapes with an SSH key as git signs commits (ssh-keygen -Y sign, namespace mcptape): "
        "TAPE.sig beside each, checked by `mcptape verify --signature`.",
        (("0", "every tape was signed"), ("3", "a tape does not match its seal, no key, or ssh-keygen failed")),
        (("(git config) user.signingkey", "the key when --key is not given"),),
    ),
    "verify": Usage(
        "Check that each tape is what mcptape wrote: its footer's SHA-256 (and a rec tape's seal lines) over "
        "every line before it. A tape cut short verifies up to its last complete event.",
        (("0", "every tape is sealed, cut short and verified, or an unedited format-1 tape"),
         ("3", "a tape does not match its seal (the first line that does not is named), or cannot be read; "
               "with --signature, or is not signed by an allowed signer")),
        (("(git config) gpg.ssh.allowedSignersFile", "the allowed signers when --allowed-signers is not given"),),
    ),
    "ls": Usage(
        "List the tapes under the paths: name, events, calls, protocol, whether complete, size.",
        (("0", "listed (an unreadable tape is listed as such)"), ("3", "a path does not exist")),
        (("COLUMNS", "width of the table when stdout is not a terminal (default 160)"),),
    ),
    "show": Usage(
        "Show one tape's events as a table: line, direction, kind, id, method, summary.",
        (("0", "shown"), ("3", "the tape is missing or unreadable")),
        (("COLUMNS", "width of the table when stdout is not a terminal (default 160)"),),
    ),
    "ci": Usage(
        "Run the sessions of mcptape.yml against live servers, compare each fresh tape with its golden "
        "tape, report, and exit with the worst verdict. --update-golden (-u) accepts the fresh tapes.",
        (("0", "no drift"), ("1", "output drift"), ("2", "structural drift, or a session has no golden tape"),
         ("3", "could not run: invalid config, a server failed to start, crashed or timed out"),
         ("4", "a secret survived redaction: nothing was written, nothing posted")),
        (("CI", "=true: --update-golden is refused unless --allow-update-in-ci"),
         ("${VAR} of the config", "interpolated in servers, sessions, client and golden_dir"),
         ("(servers)", SERVER_ENV), *GITHUB_JOB, OTEL,
         ("COLUMNS", "width of the report when stdout is not a terminal (default 160)")),
    ),
    "init": Usage(
        "Write a first mcptape.yml from a live server: list its tools, resources and prompts, call each "
        "read-only tool with arguments built from its inputSchema (calls that may change something are "
        "written commented out), run the session twice to find volatile values. Never overwrites a file.",
        (("0", "the config was written"),
         ("3", "no server given, the server could not be listed, or the file exists or cannot be written")),
        (("NAME of --env NAME", "passed to the server and written as ${NAME}"),
         ("${VAR} in --header", "interpolated for the listing, written as given (ci interpolates it)"),
         ("(servers)", SERVER_ENV)),
    ),
    "check": Usage(
        "Validate mcptape.yml as ci does before it starts a server (schema, sessions naming defined servers, "
        "variables, regexes, JSON paths, drift keys, paths), without starting any.",
        (("0", "valid: prints `ok: N sessions, M servers`"), ("3", "invalid: file:line, the field and the fix")),
        (("${VAR} of the config", "must be set, unless --allow-unset"),),
    ),
    "schema": Usage("Print the JSON Schema of mcptape.yml, as the package ships it.", (("0", "printed"),)),
    "comment": Usage(
        "Post or update the sticky PR comment from a body a ci run saved (the fork-PR pattern's second job).",
        (("0", "posted or updated"), ("3", "could not post: no PR, no token, an API error"),
         ("4", "a secret survived redaction: nothing was posted")),
        GITHUB_JOB[1:] + (("GITHUB_WORKSPACE", "where the saved body's paths are relative to"),),
    ),
    "merge": Usage(
        "Combine the JSON reports of sharded ci runs (--shard I/N) into one verdict, report and summary.",
        (("0", "no drift"), ("1", "output drift"), ("2", "structural drift"),
         ("3", "could not run: a report is unreadable, or the reports are not shards of one run"),
         ("4", "a secret survived redaction")),
        GITHUB_JOB,
    ),
}


def render_epilog(command: str) -> str:
    """The `exit codes:` and `environment:` tables of `command` (argparse prints them as written)."""
    usage = USAGE[command]
    environment = (*usage.environment, (DEBUG_VARIABLE, "=1: an internal error prints its traceback"))
    width = max(len(code) for code, _ in usage.exit_codes)
    lines = ["exit codes:", *(f"  {code:<{width}}  {meaning}" for code, meaning in usage.exit_codes), "", "environment:"]
    width = max(len(name) for name, _ in environment)
    lines += [f"  {name:<{width}}  {meaning}" for name, meaning in environment]
    return "\n".join(lines)
