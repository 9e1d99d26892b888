"""Command line: argument parsing and exit codes, nothing else.

Each command lives in its own module of mcptape/commands/ (options, output, exit code) and is
imported only when chosen, so `mcptape --version` and `mcptape play` never pay for rich, ghapi,
jsonschema or pydantic. For `rec` and `play` stdout is the MCP wire: everything human goes to stderr.

The exit code is total: every way a command can end maps to the table of docs/design.md.
    McptapeError              its exit_code, one message (ConfigError, WriteError, ... see errors.py)
    OSError not translated    3, the path and the cause
    any other exception       3, `mcptape: internal error in <command>: <type>: <message>`
    a crash in another thread 3 at the end (at worst), the same one line when it happens
    a usage error (argparse)  3, not argparse's 2, which a CI system would read as structural drift
    KeyboardInterrupt         130, the shell's code for SIGINT
A traceback is printed only with MCPTAPE_DEBUG=1. Every message can quote a server, a tape or a
config value: it is redacted with the built-in detectors and made inert for a CI log.
The platform is checked before any command runs (`unsupported_platform`).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import NoReturn

from mcptape import __version__, environment
from mcptape.commands.usage import DEBUG_VARIABLE, USAGE, render_epilog
from mcptape.errors import EXIT_CODES, EXIT_COULD_NOT_RUN, McptapeError
from mcptape.replay.served_values import help_text as served_help

SUPPORTED_PLATFORMS = "Linux and macOS"

# Each command is a module of mcptape/commands/, imported only when chosen, so `mcptape --version`
# and `mcptape play` never pay for rich, ghapi, jsonschema or pydantic. A command module has
# `Options.from_args(namespace)`, its typed options, and `run(options) -> exit code`.
COMMANDS = {name: f"mcptape.commands.{name}" for name in ("rec", "play", "diff", "ls", "show", "ci", "init", "check", "schema", "comment", "merge", "fork", "verify", "sign")}
COMMANDS["import"] = "mcptape.commands.import_"  # `import` is a Python keyword: no module can be called that


def unsupported_platform(os_name: str | None = None, sys_platform: str | None = None) -> str | None:
    """Why mcptape cannot run on this platform, or None where it can (POSIX: Linux, macOS).

    The recorder and the session runner rely on POSIX process groups, signals and fork
    (os.killpg, signal.SIGKILL, os.fork, fcntl); on Windows they do not exist, and the commands
    would fail halfway with an AttributeError. Saying so at once is the honest outcome.
    """
    name = os.name if os_name is None else os_name
    platform = sys.platform if sys_platform is None else sys_platform
    if name == "posix" and platform != "win32":
        return None
    return (
        f"mcptape runs on {SUPPORTED_PLATFORMS} (POSIX) only, not on {platform}: it needs process groups, "
        "signals and fork. Use WSL or a Linux runner (runs-on: ubuntu-latest)."
    )


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error exits 3 (could not run): its own 2 reads as structural drift."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        # `unrecognized arguments: --token=ghp_...` quotes what was typed: scrubbed like any message.
        from mcptape.publish.outlet import safe_message

        self.exit(EXIT_COULD_NOT_RUN, safe_message(f"{self.prog}: error: {message}\n", _ARGV, f"{self.prog}: error\n"))


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps prose as argparse does, but prints a table (text with line breaks) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line + "\n" for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def _document(parsers: Mapping[str, argparse.ArgumentParser]) -> None:
    """Each subcommand's description, exit codes and environment, from commands/usage.py's table."""
    for name, sub_parser in parsers.items():
        if name not in USAGE:  # a command added without its row: tests/commands/test_usage.py says so, --help still works
            continue
        sub_parser.formatter_class = _HelpFormatter
        sub_parser.description = USAGE[name].description
        sub_parser.epilog = render_epilog(name)


_ALLOW_EDITED_HELP = ("read a tape that does not match its seal (edited by hand on purpose): the check that it "
                      "is what mcptape wrote is skipped, and said")


def _otel_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--otel", action="store_true",
                        help="export the session(s) as OpenTelemetry traces over OTLP/HTTP, configured by the "
                        "OTEL_* variables (needs `pip install 'mcptape[otel]'`)")
    parser.add_argument("--otel-payloads", action="store_true",
                        help="--otel with the messages on the spans, redacted as the tapes are")


def _allow_host_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="with --listen: also answer requests whose Host or Origin names NAME (a name, or an origin "
                        "URL); loopback names and the listen address are always allowed, any other is refused with 403 "
                        "(DNS-rebinding protection); `*` allows any; repeatable (or MCPTAPE_ALLOW_HOSTS=a,b)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mcptape",
        description="Record, replay and diff MCP sessions; gate MCP servers in CI.",
        epilog="exit codes: " + ", ".join(f"{code} {short}" for code, (short, _) in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=f"mcptape {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    # --- rec -------------------------------------------------------------------------------
    rec = sub.add_parser("rec", help="record a live session through a transparent proxy")
    rec.add_argument("--out", "-o", metavar="TAPE", help="tape file to write (default: tapes/NAME.tape.jsonl)")
    rec.add_argument("--name", help="session name stored in the tape header")
    rec.add_argument("--listen", metavar="HOST:PORT", help="record over HTTP: listen here (with --upstream)")
    rec.add_argument("--upstream", metavar="URL", help="record over HTTP: the server's MCP endpoint")
    _allow_host_option(rec)
    _otel_options(rec)
    rec.add_argument("server", nargs=argparse.REMAINDER, help="-- <server command...>")

    # --- play ------------------------------------------------------------------------------
    play = sub.add_parser("play", help="serve a tape as an MCP server (stdio), offline")
    play.add_argument("tape", help="tape file")
    play.add_argument(
        "--lenient", action="store_true",
        help="answer a near miss with the closest recording of the same method and tool (exit 1, said on stderr)",
    )
    play.add_argument("--listen", metavar="HOST:PORT", help="serve over streamable HTTP instead of stdio")
    _allow_host_option(play)
    play.add_argument(
        "--ignore-arg", action="append", default=[], metavar="PATH",
        help="leave this value out of matching: a key at any depth (timestamp) or a JSON path in params "
        "($.arguments.request_id); repeatable",
    )
    play.add_argument(
        "--match-on", choices=("params", "name"), default="params",
        help="params (default): a call matches a recording with the same arguments; name: the same tool, "
        "prompt or resource, whatever the arguments",
    )
    play.add_argument("--allow-reuse", action="store_true", help="a used recording may answer the same call again")
    play.add_argument(
        "--fallback", action="store_true",
        help="forward what the tape cannot answer to the live server given after `--`, recording it onto the tape",
    )
    play.add_argument(
        "--fallback-url", metavar="URL",
        help="like --fallback, for a live streamable HTTP server at URL (recorded through rec --listen)",
    )
    play.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    _otel_options(play)
    play.add_argument("--report", metavar="FILE", help="also write the replay report (misses, unused recordings) here as JSON")
    # The agent lab (replay/lab.py): pace, faults, live tools, served values.
    play.add_argument("--pace", metavar="recorded|xN",
                      help="answer after the recorded latency (recorded), or N times as fast (x2, x0.5); default: at once")
    play.add_argument("--fault", action="append", default=[], metavar="RULE",
                      help="inject a fault: selectors method=M, tool=NAME, call=N, p=P and one of delay=MS, no-answer, "
                      "error=CODE[:message], is-error[=text], malformed, close; repeatable (see the README's agent lab)")
    play.add_argument("--fault-seed", type=int, default=0, metavar="N", help="seed of the faults' p= draws (default 0)")
    play.add_argument("--live-tools", metavar="NAME,...",
                      help="send these tools' calls to the live server given after `--` (recorded); the rest from the tape")
    play.add_argument("--keep-placeholders", action="store_true",
                      help="send a golden's normalization placeholders as they are; by default play serves "
                      f"fixed valid values instead ({served_help()})")
    play.epilog = ("live fallback: mcptape play TAPE [options] --fallback -- <server command...>; "
                   "live tools: mcptape play TAPE --live-tools NAME,... -- <server command...>")
    play.set_defaults(server=[])  # the words after `--` (see main: argparse cannot take them after options)

    # --- fork ------------------------------------------------------------------------------
    fork = sub.add_parser("fork", help="write a tape whose answer at one call is replaced (an error the agent never saw live)")
    fork.add_argument("tape", help="the parent tape")
    fork.add_argument("--at", type=int, required=True, metavar="CALL", help="the call to change: the N-th client request (1-based)")
    change = fork.add_mutually_exclusive_group(required=True)
    change.add_argument("--result", metavar="@FILE|JSON", help="the new answer's result (a JSON file, or inline JSON)")
    change.add_argument("--error", metavar="CODE[:message]",
                        help="answer with this JSON-RPC error (a negative code joined: --error=-32000:quota)")
    change.add_argument("--drop", action="store_true", help="never answer the call (the client times out)")
    fork.add_argument("--cut", action="store_true", help="end the tape after the changed call (default: later exchanges kept)")
    fork.add_argument("-o", "--out", required=True, metavar="NEW", help="where to write the fork")

    # --- diff ------------------------------------------------------------------------------
    diff = sub.add_parser("diff", help="compare two tapes: first drifted call, exit 0/1/2")
    diff.add_argument("a", help="the reference tape (golden)")
    diff.add_argument("b", help="the tape to check (fresh)")
    diff.add_argument("--json", metavar="FILE", help="write the verdict as JSON here (- for stdout, instead of the report)")
    diff.add_argument("--html", metavar="FILE", help="write the verdict and both tapes as one self-contained HTML page here")
    diff.add_argument("-c", "--config", metavar="FILE",
                      help="apply this mcptape.yml's normalize: rules and drift: settings, as `mcptape ci` does")
    diff.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    diff.add_argument("--raw", action="store_true",
                      help="compare without normalization (no built-in or config rules, notifications where they landed)")
    diff.add_argument(
        "--conformance",
        action="store_true",
        help="also check every message of the fresh tape against the MCP schema of its protocol "
        "revision (structural findings; `mcptape ci` always does; costs 1-5 s to load the schema)",
    )

    # --- ls / show -------------------------------------------------------------------------
    ls = sub.add_parser("ls", help="list tapes")
    ls.add_argument("paths", nargs="*", default=["."], help="directories or tapes (default: .)")
    ls.add_argument("--json", metavar="FILE", help="write the list as JSON here (- for stdout, instead of the table)")
    show = sub.add_parser("show", help="one tape's messages as a table")
    show.add_argument("tape", help="tape file")
    show.add_argument("--full", action="store_true", help="do not shorten payloads")
    show.add_argument("--json", metavar="FILE", help="write the events as JSON here (- for stdout, instead of the table)")
    show.add_argument("--html", metavar="FILE",
                      help="write the tape as one self-contained HTML page here (filterable messages), instead of the table")

    verify = sub.add_parser("verify", help="check that tapes are what mcptape wrote (their seals): exit 0, or 3")
    verify.add_argument("tapes", nargs="+", metavar="TAPE", help="tape files")
    verify.add_argument("--signature", action="store_true",
                        help="also check each tape's SSH signature (TAPE.sig, from `mcptape sign`) against allowed signers")
    verify.add_argument("--allowed-signers", metavar="FILE",
                        help="allowed_signers file as git's (default: git config gpg.ssh.allowedSignersFile)")
    sign = sub.add_parser("sign", help="sign tapes with an SSH key, as git signs commits (TAPE.sig beside each)")
    sign.add_argument("tapes", nargs="+", metavar="TAPE", help="tape files (each must match its seal)")
    sign.add_argument("--key", metavar="FILE", help="SSH private key (default: git config user.signingkey)")

    imp = sub.add_parser("import", help="turn an OTLP/JSON trace of an MCP session (--otel-payloads) into a tape")
    imp.add_argument("trace", help="OTLP/JSON file (one document, or JSON lines as a collector's file exporter writes)")
    imp.add_argument("--out", "-o", metavar="TAPE", help="tape file to write (default: tapes/SESSION.tape.jsonl)")
    imp.add_argument("--name", help="session name stored in the tape header (default: the trace's)")
    imp.add_argument("--session", metavar="NAME", help="the session to import when the trace holds several")

    # --- ci --------------------------------------------------------------------------------
    ci = sub.add_parser("ci", help="run the sessions of mcptape.yml and compare with the golden tapes")
    ci.add_argument("-c", "--config", default="mcptape.yml", help="config file (default: mcptape.yml)")
    ci.add_argument("-u", "--update-golden", action="store_true", help="accept the fresh tapes as golden")
    ci.add_argument("--allow-update-in-ci", action="store_true", help="allow --update-golden when CI=true")
    ci.add_argument("--session", action="append", default=[], metavar="NAME", help="run only this session")
    ci.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="sessions in parallel (default: cores)")
    ci.add_argument("--shard", metavar="I/N", help="run the I-th of N deterministic shards of the sessions")
    ci.add_argument("--repeat", type=int, default=None, metavar="N", help="run each session N times and suggest normalize rules")
    ci.add_argument("--json", dest="json_report", metavar="FILE", help="write the JSON report here (- for stdout)")
    ci.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    ci.add_argument("--summary", metavar="FILE", help="write the markdown summary here")
    ci.add_argument("--sarif", metavar="FILE", help="write the security findings as SARIF here (GitHub code scanning)")
    ci.add_argument("--html", metavar="FILE", help="write the run as one self-contained HTML page here (no network needed to view it)")
    ci.add_argument("--out-dir", metavar="DIR", help="keep the fresh tapes here")
    ci.add_argument("--baseline", metavar="REF", help="no goldens: compare with the same sessions run at REF "
                    "(a ref, merge-base, previous-tag, or auto: goldens if there are, else merge-base)")
    ci.add_argument("--against", metavar="SERVER", help="no goldens: compare with another implementation, the "
                    "reference (a `servers:` name, a command or a URL)")
    ci.add_argument("--latency", type=int, default=None, metavar="N",
                    help="with --baseline/--against: N interleaved runs a side, latency regressions reported")
    ci.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    ci.add_argument("--strength", action="store_true",
                    help="add the gate's strength to the report, summary and comment: the share of changes derived "
                    "from the golden tapes it would fail on (offline; `mcptape check --strength` names each that passes)")
    _otel_options(ci)

    # --- init / check ----------------------------------------------------------------------
    init = sub.add_parser("init", help="write a first mcptape.yml from what a live server lists")
    init.add_argument("--url", help="list an HTTP server at this MCP endpoint instead of a command")
    init.add_argument("-o", "--out", default="mcptape.yml", metavar="FILE", help="config to write (default: mcptape.yml; never overwritten)")
    init.add_argument("--name", help="name of the server and its session (default: from the command)")
    init.add_argument("--env", "-e", action="append", default=[], metavar="NAME[=VALUE]",
                      help="a variable the server needs (repeatable); NAME alone passes this environment's value "
                      "and writes ${NAME}; secret values are always written as ${NAME}")
    init.add_argument("--header", "-H", action="append", default=[], metavar="'NAME: VALUE'",
                      help="an HTTP header for --url (repeatable); write a secret as ${VAR}, which ci interpolates")
    init.add_argument("--protocol", metavar="VERSION",
                      help="pin the protocol version (written to the server entry; default: auto, as ci)")
    init.add_argument("--safe", "--no-probe", dest="safe", action="store_true",
                      help="never probe: tools not annotated readOnlyHint are written commented out without being "
                      "called (by default init calls each one named like a query once, and keeps those that answer)")
    init.add_argument("--no-trial", action="store_true",
                      help="do not run the written session twice to find volatile values (normalize rules)")
    init.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                      help="seconds one step may take, the server's start included (default 30), for init's listing, "
                      "probes and trial runs; written as the session's step_timeout, so ci waits as long")
    init.add_argument("server", nargs=argparse.REMAINDER, help="-- <server command...>")
    check = sub.add_parser("check", help="validate mcptape.yml without starting any server")
    check.add_argument("-c", "--config", default="mcptape.yml", help="config file (default: mcptape.yml)")
    check.add_argument("--allow-unset", action="store_true",
                       help="an unset ${VAR} is named, not an error (for a pre-commit hook, which lacks CI's secrets)")
    check.add_argument("files", nargs="*", metavar="FILE", help="configs to check instead of -c's (as pre-commit passes them)")
    check.add_argument("--surface", action="store_true",
                       help="also list each server and review its whole surface as agents read it (starts the servers)")
    check.add_argument("--strength", action="store_true",
                       help="measure the gate, offline: changes derived from the golden tapes judged as ci judges, "
                       "the score, and each change that would pass with the rule that lets it through")
    check.add_argument("--json", dest="json_report", metavar="FILE",
                       help="with --strength: write the strength report as JSON here (- for stdout)")
    check.add_argument("--seed", type=int, default=None, metavar="N",
                       help="with --strength: seed of the draws among places a change could be made (default 0)")

    # --- schema / comment / merge ----------------------------------------------------------
    sub.add_parser("schema", help="print the JSON Schema of mcptape.yml")
    comment = sub.add_parser("comment", help="post or update the PR comment from a saved body")
    comment.add_argument("--body", required=True, metavar="FILE", help="JSON report or markdown body saved by a ci run")
    comment.add_argument("--pr", type=int, help="pull request number (default: from GITHUB_EVENT_PATH)")
    comment.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    comment.add_argument("--head-sha", metavar="SHA", help="refuse unless the PR's head is this commit (fork pattern)")
    comment.add_argument("--key", help="marker key (default: the config path of the report, or the body's marker)")
    merge = sub.add_parser("merge", help="combine JSON reports of sharded ci runs into one verdict")
    merge.add_argument("reports", nargs="+", help="JSON reports written by `mcptape ci --json`")
    merge.add_argument("-c", "--config", help="the config the shards ran with (default: the reports' config name, if it is here)")
    merge.add_argument("--json", dest="json_report", metavar="FILE", help="write the merged JSON report here (- for stdout)")
    merge.add_argument("--summary", metavar="FILE", help="write the merged markdown summary here")
    merge.add_argument("--html", metavar="FILE", help="write the merged run as one self-contained HTML page here")
    _document(sub.choices)
    return parser


def _debug() -> bool:
    return environment.flag(DEBUG_VARIABLE)


# The command line of this run, for the known secrets of its messages (outlet.safe_message).
_ARGV: list[str] = []


def _safe(text: str, fallback: str) -> str:
    """`text` with secrets scrubbed (an exception's message may quote a config value, the command
    line or a server's answer), made inert for a CI log; `fallback` if it cannot be checked."""
    from mcptape.publish.outlet import safe_message

    return safe_message(text, _ARGV, fallback)


def _report_crash(command: str, e: BaseException, *, where: str = "") -> None:
    """The one line of an unexpected exception (and its traceback with MCPTAPE_DEBUG=1)."""
    head = f"mcptape: internal error in {command}{where}: {type(e).__name__}"
    _print_error(e, f"{head}: {' '.join(str(e).split())}", head)


def _os_error(command: str, e: OSError) -> None:
    """An OSError no boundary translated: the path and the cause, still one line."""
    where = f"{os.fsdecode(e.filename)}: " if e.filename is not None else ""
    head = f"mcptape {command}: {type(e).__name__}"
    _print_error(e, f"mcptape {command}: {where}{e.strerror or e}", head)


def _print_error(e: BaseException, line: str, head: str) -> None:
    fallback = f"{head} (message withheld: it could not be checked for secrets)"
    if _debug():
        import traceback

        print(_safe("".join(traceback.format_exception(e)), "(traceback withheld)\n"), file=sys.stderr, end="")
        print(_safe(line + "\n", fallback + "\n"), file=sys.stderr, end="")
    else:
        hint = f"; {DEBUG_VARIABLE}=1 shows the traceback\n"
        print(_safe(line + hint, fallback + hint), file=sys.stderr, end="")


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run one command; its exit code. `exiting`: the process ends right after (console), so a
    command may leave the objects it built unfreed (see diff's run_diff)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    _ARGV[:] = arguments
    for stream in (sys.stdout, sys.stderr):
        # A lone surrogate a server sent (`"\\ud800"`) has no UTF-8 form: printed as `\\ud800`
        # (logsafe.utf8's rule) rather than ending the command in an internal error.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    problem = unsupported_platform()
    if problem is not None and arguments != ["--version"]:
        print(problem, file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    parser = build_parser()
    # `play TAPE [options] --fallback -- CMD...`: argparse cannot give a second positional after
    # options that follow the first, so play's server command (after `--`) is split off here.
    server: list[str] | None = None
    if arguments[:1] == ["play"] and "--" in arguments:
        at = arguments.index("--")
        arguments, server = arguments[:at], arguments[at + 1 :]
    args = parser.parse_args(arguments)
    if server is not None:
        args.server = server
    args.exiting = exiting
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_COULD_NOT_RUN
    command = args.command
    crashed: list[BaseException] = []
    previous_hook = threading.excepthook

    def thread_crashed(hook_args: threading.ExceptHookArgs) -> None:
        # A worker or reader thread died: say so in one line now, and make the run exit 3 at the end.
        if hook_args.exc_type is SystemExit or hook_args.exc_value is None:
            return
        crashed.append(hook_args.exc_value)
        name = hook_args.thread.name if hook_args.thread is not None else "a thread"
        _report_crash(command, hook_args.exc_value, where=f" (thread {name})")

    threading.excepthook = thread_crashed
    try:
        module = importlib.import_module(COMMANDS[command])
        code = int(module.run(module.Options.from_args(args)))
    except McptapeError as e:
        # Error messages can quote a server's stderr, a tape, the command line or an interpolated
        # config value: scrubbed and verified, and inert on a terminal and in a CI log.
        print(_safe(f"mcptape {command}: {e}\n", f"mcptape {command}: {type(e).__name__}\n"), file=sys.stderr, end="")
        code = e.exit_code
    except KeyboardInterrupt:
        print(f"mcptape {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        code = EXIT_COULD_NOT_RUN
    except OSError as e:
        _os_error(command, e)
        code = EXIT_COULD_NOT_RUN
    except Exception as e:  # noqa: BLE001 - the top level: a crash is never a verdict (docs/design.md)
        _report_crash(command, e)
        code = EXIT_COULD_NOT_RUN
    finally:
        if not exiting:  # in-process callers (tests) get their hook back; a process keeps ours to the end
            threading.excepthook = previous_hook
    if crashed:
        code = max(code, EXIT_COULD_NOT_RUN)
    return code


def console() -> int:
    """The `mcptape` console script and `python -m mcptape`."""
    return main(exiting=True)


if __name__ == "__main__":
    raise SystemExit(console())
