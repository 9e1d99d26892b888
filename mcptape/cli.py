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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import mcptape.environment as environment
from mcptape.commands.grammar import Deprecated, ReportOption, read_words
from mcptape.commands.usage import DEBUG_VARIABLE, USAGE, render_epilog
from mcptape.errors import EXIT_CODES, EXIT_COULD_NOT_RUN, McptapeError
from mcptape.replay.served_values import help_text as served_help
from mcptape.version import __version__

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
        # `unrecognized arguments: --token=ghp_...` quotes what was typed: scrubbed like any message.
        usage = self.format_usage()
        _say(f"{usage}{self.prog}: error: {message}\n", f"{usage}{self.prog}: error\n")
        raise SystemExit(EXIT_COULD_NOT_RUN)


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps prose as argparse does, but prints a table (text with line breaks) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line + "\n" for line in text.splitlines())
        return super()._fill_text(text, width, indent)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, ReportOption):  # `--json[=FILE]`: alone to stdout (commands/grammar.py)
            form = "=FILE" if action.file_only else "[=FILE]"
            return ", ".join(f"{flag}{form}" for flag in action.option_strings)
        return super()._format_action_invocation(action)

    def _format_usage(self, usage: str | None, actions: Any, groups: Any, prefix: str | None) -> str:
        return _report_usage(super()._format_usage(usage, actions, groups, prefix), actions)


def _report_usage(text: str, actions: Any) -> str:
    """The usage line with each report option as `--json[=FILE]`, the way it is typed."""
    for action in actions:
        if isinstance(action, ReportOption):
            for flag in action.option_strings:
                text = text.replace(f"[{flag} FILE]", f"[{flag}=FILE]" if action.file_only else f"[{flag}[=FILE]]")
    return text


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


def _report(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, what: str,
            on_stdout: str | None = "") -> None:
    """A report the command can write (commands/grammar.py's ReportOption): `FLAG` alone to stdout,
    `FLAG=FILE` to FILE; `on_stdout=None`: a file only (a page), `FLAG` alone is refused."""
    if on_stdout is None:
        parser.add_argument(flag, action=ReportOption, file_only=True, help=f"{what}: =FILE, into FILE (always a file)")
        return
    parser.add_argument(flag, action=ReportOption,
                        help=f"{what}: alone, on stdout{f' ({on_stdout})' if on_stdout else ''}; =FILE, into FILE")


def _otel_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--otel", action="store_true",
                        help="export the session(s) as OpenTelemetry traces over OTLP/HTTP, configured by the "
                        "OTEL_* variables (needs `pip install 'mcptape[otel]'`)")
    parser.add_argument("--otel-payloads", action="store_true",
                        help="--otel with the messages on the spans, redacted as the tapes are (implies --otel)")


def _allow_host_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="with --listen: also answer requests whose Host or Origin names NAME (a name, or an origin "
                        "URL); loopback names and the listen address are always allowed, any other is refused with 403 "
                        "(DNS-rebinding protection); `*` allows any; repeatable (or MCPTAPE_ALLOW_HOSTS=a,b)")


def build_parser(parser_class: type[argparse.ArgumentParser] | None = None) -> argparse.ArgumentParser:
    """Every command's flags, in groups by what they are for (a flag only one mode uses sits under
    that mode). A flag is declared here with `add_argument`; a report with `_report`; a spelling
    kept one release after a rename with `action=Deprecated` (commands/grammar.py)."""
    cls = parser_class or _Parser
    parser = cls(
        prog="mcptape",
        description="Record, replay and diff MCP sessions; gate MCP servers in CI.",
        epilog="exit codes: " + ", ".join(f"{code} {short}" for code, (short, _) in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=f"mcptape {__version__}")
    parser.set_defaults(deprecated=())  # the lines a Deprecated spelling leaves for stderr
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=cls)

    # --- rec -------------------------------------------------------------------------------
    rec = sub.add_parser("rec", help="record a live session through a transparent proxy")
    rec.add_argument("--out", "-o", metavar="TAPE", help="tape file to write (default: tapes/NAME.tape.jsonl; never "
                     "written over an existing file)")
    rec.add_argument("--name", help="session name stored in the tape header")
    rec_http = rec.add_argument_group("over HTTP (instead of a command after --)")
    rec_http.add_argument("--listen", metavar="HOST:PORT", help="listen here for the client (needs --upstream)")
    rec_http.add_argument("--upstream", metavar="URL", help="the server's MCP endpoint (needs --listen)")
    _allow_host_option(rec_http)
    _otel_options(rec.add_argument_group("traces (stdio only)"))
    rec.add_argument("server", nargs=argparse.REMAINDER, help="-- <server command...>")

    # --- play ------------------------------------------------------------------------------
    play = sub.add_parser("play", help="serve a tape as an MCP server (stdio), offline")
    play.add_argument("tape", help="tape file")
    matching = play.add_argument_group("matching")
    matching.add_argument(
        "--lenient", action="store_true",
        help="answer a near miss with the closest recording of the same method and tool (exit 1, said on stderr)",
    )
    matching.add_argument(
        "--ignore-arg", action="append", default=[], metavar="PATH",
        help="leave this value out of matching: a key at any depth (timestamp) or a JSON path in params "
        "($.arguments.request_id); repeatable",
    )
    matching.add_argument(
        "--match-on", choices=("params", "name"), default="params",
        help="params (default): a call matches a recording with the same arguments; name: the same tool, "
        "prompt or resource, whatever the arguments",
    )
    matching.add_argument("--allow-reuse", action="store_true", help="a used recording may answer the same call again")
    matching.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    matching.add_argument("--keep-placeholders", action="store_true",
                          help="send a golden's normalization placeholders as they are; by default play serves "
                          f"fixed valid values instead ({served_help()})")
    play_http = play.add_argument_group("over HTTP (instead of stdio)")
    play_http.add_argument("--listen", metavar="HOST:PORT", help="serve over streamable HTTP instead of stdio")
    _allow_host_option(play_http)
    live = play.add_argument_group("the live server (its command after --, or --fallback-url)")
    live.add_argument(
        "--fallback", action="store_true",
        help="forward what the tape cannot answer to the live server given after `--`, recording it onto the tape",
    )
    live.add_argument(
        "--fallback-url", metavar="URL",
        help="like --fallback, for a live streamable HTTP server at URL (recorded through rec --listen)",
    )
    live.add_argument("--live-tools", metavar="NAME,...",
                      help="send these tools' calls to the live server (recorded); the rest from the tape")
    # The agent lab (replay/lab.py): pace, faults, live tools, served values.
    lab = play.add_argument_group("agent lab")
    lab.add_argument("--pace", metavar="recorded|xN",
                     help="answer after the recorded latency (recorded), or N times as fast (x2, x0.5); default: at once")
    lab.add_argument("--fault", action="append", default=[], metavar="RULE",
                     help="inject a fault: selectors method=M, tool=NAME, call=N, p=P and one of delay=MS, no-answer, "
                     "error=CODE[:message], is-error[=text], malformed, close; repeatable (see the README's agent lab)")
    lab.add_argument("--fault-seed", type=int, default=None, metavar="N",
                     help="seed of the faults' p= draws (default 0; needs --fault)")
    play_out = play.add_argument_group("reports")
    _report(play_out, "--json", "the replay report (misses, unused recordings) as JSON", "with --listen only: stdio play's stdout is the wire")
    play_out.add_argument("--report", action=Deprecated, instead="--json", report=True, dest="json", metavar="FILE")
    _otel_options(play_out)
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
                        help="answer with this JSON-RPC error (--error -32000:quota)")
    change.add_argument("--drop", action="store_true", help="never answer the call (the client times out)")
    fork.add_argument("--cut", action="store_true", help="end the tape after the changed call (default: later exchanges kept)")
    fork.add_argument("-o", "--out", required=True, metavar="NEW", help="where to write the fork (a new file)")

    # --- diff ------------------------------------------------------------------------------
    diff = sub.add_parser("diff", help="compare two tapes: first drifted call, exit 0/1/2")
    diff.add_argument("a", help="the reference tape (golden)")
    diff.add_argument("b", help="the tape to check (fresh)")
    diff.add_argument("-c", "--config", metavar="FILE",
                      help="apply this mcptape.yml's normalize: rules and drift: settings, as `mcptape ci` does")
    diff.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    diff.add_argument("--raw", action="store_true",
                      help="compare without normalization (no built-in or config rules, notifications where they "
                      "landed); -c's drift: settings still apply")
    diff.add_argument(
        "--conformance",
        action="store_true",
        help="also check every message of the fresh tape against the MCP schema of its protocol "
        "revision (structural findings; `mcptape ci` always does; costs 1-5 s to load the schema)",
    )
    _report(diff, "--json", "the verdict as JSON", "instead of the report")
    _report(diff, "--html", "the verdict and both tapes as one self-contained HTML page", None)

    # --- ls / show -------------------------------------------------------------------------
    ls = sub.add_parser("ls", help="list tapes")
    ls.add_argument("paths", nargs="*", default=["."], help="directories or tapes (default: .)")
    _report(ls, "--json", "the list as JSON", "instead of the table")
    show = sub.add_parser("show", help="one tape's messages as a table")
    show.add_argument("tape", help="tape file")
    show.add_argument("--full", action="store_true", help="do not shorten payloads (JSON never does)")
    _report(show, "--json", "the events as JSON", "instead of the table")
    _report(show, "--html", "the tape as one self-contained HTML page (filterable messages), instead of the table",
            None)

    verify = sub.add_parser("verify", help="check that tapes are what mcptape wrote (their seals): exit 0, or 3")
    verify.add_argument("tapes", nargs="+", metavar="TAPE", help="tape files")
    signed = verify.add_argument_group("signatures")
    signed.add_argument("--signature", action="store_true",
                        help="also check each tape's SSH signature (TAPE.sig, from `mcptape sign`) against allowed signers")
    signed.add_argument("--allowed-signers", metavar="FILE",
                        help="allowed_signers file as git's (default: git config gpg.ssh.allowedSignersFile); "
                        "implies --signature")
    sign = sub.add_parser("sign", help="sign tapes with an SSH key, as git signs commits (TAPE.sig beside each)")
    sign.add_argument("tapes", nargs="+", metavar="TAPE", help="tape files (each must match its seal)")
    sign.add_argument("--key", metavar="FILE", help="SSH private key (default: git config user.signingkey)")

    imp = sub.add_parser("import", help="turn an OTLP/JSON trace of an MCP session (--otel-payloads) into a tape")
    imp.add_argument("trace", help="OTLP/JSON file (one document, or JSON lines as a collector's file exporter writes)")
    imp.add_argument("--out", "-o", metavar="TAPE", help="tape file to write (default: tapes/SESSION.tape.jsonl; "
                     "never written over an existing file)")
    imp.add_argument("--name", help="session name stored in the tape header (default: the trace's)")
    imp.add_argument("--session", metavar="NAME", help="the session to import when the trace holds several")

    # --- ci --------------------------------------------------------------------------------
    # The mode (golden, baseline, against, repeat) and which options each one takes: ci/modes.py.
    ci = sub.add_parser("ci", help="run the sessions of mcptape.yml and compare with the golden tapes")
    ci.add_argument("-c", "--config", default="mcptape.yml", help="config file (default: mcptape.yml)")
    which = ci.add_argument_group("which sessions (every mode)")
    which.add_argument("--session", action="append", default=[], metavar="NAME", help="run only this session (repeatable)")
    which.add_argument("--shard", metavar="I/N", help="run the I-th of N deterministic shards of the sessions")
    which.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="sessions in parallel (default: cores)")
    golden = ci.add_argument_group("golden mode (the default): compare with the golden tapes")
    golden.add_argument("-u", "--update-golden", action="store_true", help="accept the fresh tapes as golden")
    golden.add_argument("--allow-update-in-ci", action="store_true", help="allow --update-golden when CI=true (with -u)")
    golden.add_argument("--allow-edited", action="store_true", help=_ALLOW_EDITED_HELP)
    golden.add_argument("--strength", action="store_true",
                        help="add the gate's strength to the report, summary and comment: the share of changes derived "
                        "from the golden tapes it would fail on (offline; `mcptape check --strength` names each that passes)")
    reference = ci.add_argument_group("baseline and against modes: no goldens, a live reference")
    reference.add_argument("--baseline", metavar="REF", help="compare with the same sessions run at REF "
                           "(a ref, merge-base, previous-tag, or auto: goldens if there are, else merge-base)")
    reference.add_argument("--against", metavar="SERVER", help="compare with another implementation, the "
                           "reference (a `servers:` name, a command or a URL)")
    reference.add_argument("--reference-runs", type=int, default=None, metavar="N",
                           help="runs of the reference, to learn what varies between them (default: the config's "
                           "baseline.runs, 2)")
    reference.add_argument("--latency", type=int, default=None, metavar="N",
                           help="N interleaved runs a side, latency regressions reported")
    repeat = ci.add_argument_group("repeat mode: find volatile values")
    repeat.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="run each session N times and suggest the normalize rules that make it stable")
    ci_out = ci.add_argument_group("reports (golden, baseline and against modes)")
    _report(ci_out, "--json", "the JSON report", "the terminal report moves to stderr")
    _report(ci_out, "--junit", "a JUnit XML report")
    _report(ci_out, "--summary", "the markdown summary")
    _report(ci_out, "--sarif", "the security findings as SARIF (GitHub code scanning)")
    _report(ci_out, "--html", "the run as one self-contained HTML page (no network needed to view it)", None)
    ci_out.add_argument("--out-dir", metavar="DIR", help="keep the fresh tapes here (never the golden directory)")
    _otel_options(ci_out)

    # --- init / check ----------------------------------------------------------------------
    init = sub.add_parser("init", help="write a first mcptape.yml from what a live server lists")
    init.add_argument("-o", "--out", default="mcptape.yml", metavar="FILE", help="config to write (default: mcptape.yml; never overwritten)")
    init.add_argument("--name", help="name of the server and its session (default: from the command)")
    init.add_argument("--protocol", metavar="VERSION",
                      help="pin the protocol version (written to the server entry; default: auto, as ci)")
    init.add_argument("--no-probe", action="store_true",
                      help="never probe: tools not annotated readOnlyHint are written commented out without being "
                      "called (by default init calls each one named like a query once, and keeps those that answer)")
    init.add_argument("--safe", action=Deprecated, instead="--no-probe", dest="no_probe", nargs=0, const=True)
    init.add_argument("--no-trial", action="store_true",
                      help="do not run the written session twice to find volatile values (normalize rules)")
    init.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                      help="seconds one step may take, the server's start included (default 30), for init's listing, "
                      "probes and trial runs; written as the session's step_timeout, so ci waits as long")
    init_stdio = init.add_argument_group("a server started by a command (after --)")
    init_stdio.add_argument("--env", "-e", action="append", default=[], metavar="NAME[=VALUE]",
                            help="a variable the server needs (repeatable); NAME alone passes this environment's value "
                            "and writes ${NAME}; secret values are always written as ${NAME}")
    init_http = init.add_argument_group("an HTTP server (a command after -- starts it, if given)")
    init_http.add_argument("--url", help="list the HTTP server at this MCP endpoint")
    init_http.add_argument("--header", "-H", action="append", default=[], metavar="'NAME: VALUE'",
                           help="an HTTP header for --url (repeatable); write a secret as ${VAR}, which ci interpolates")
    init.add_argument("server", nargs=argparse.REMAINDER, help="-- <server command...>")
    check = sub.add_parser("check", help="validate mcptape.yml without starting any server")
    check.add_argument("-c", "--config", default=None, help="config file (default: mcptape.yml, unless FILEs are given)")
    check.add_argument("--allow-unset", action="store_true",
                       help="an unset ${VAR} is named, not an error (for a pre-commit hook, which lacks CI's secrets)")
    check.add_argument("files", nargs="*", metavar="FILE", help="configs to check, as pre-commit passes them (with -c's)")
    check.add_argument("--surface", action="store_true",
                       help="also list each server and review its whole surface as agents read it (starts the servers)")
    strength = check.add_argument_group("the gate's strength")
    strength.add_argument("--strength", action="store_true",
                          help="measure the gate, offline: changes derived from the golden tapes judged as ci judges, "
                          "the score, and each change that would pass with the rule that lets it through")
    _report(strength, "--json", "with --strength: the strength report as JSON", "the text moves to stderr")
    strength.add_argument("--seed", type=int, default=None, metavar="N",
                          help="with --strength: seed of the draws among places a change could be made (default 0)")

    # --- schema / comment / merge ----------------------------------------------------------
    sub.add_parser("schema", help="print the JSON Schema of mcptape.yml")
    comment = sub.add_parser("comment", help="post or update the PR comment from a saved body")
    comment.add_argument("--body", required=True, metavar="FILE", help="JSON report or markdown body saved by a ci run")
    comment.add_argument("--pr", type=int, help="pull request number (default: from GITHUB_EVENT_PATH)")
    comment.add_argument("--repo", help="owner/name (default: GITHUB_REPOSITORY)")
    comment.add_argument("--head-sha", metavar="SHA", help="refuse unless the PR's head is this commit (fork pattern)")
    comment.add_argument("--marker", metavar="KEY", help="the comment's marker key (default: the config path of the "
                         "report, or the body's marker)")
    comment.add_argument("--key", action=Deprecated, instead="--marker", dest="marker", metavar="KEY")
    merge = sub.add_parser("merge", help="combine JSON reports of sharded ci runs into one verdict")
    merge.add_argument("reports", nargs="+", help="JSON reports written by `mcptape ci --json=FILE`")
    merge.add_argument("-c", "--config", help="the config the shards ran with (default: the reports' config name, if it is here)")
    _report(merge, "--json", "the merged JSON report", "the terminal report moves to stderr")
    _report(merge, "--summary", "the merged markdown summary")
    _report(merge, "--html", "the merged run as one self-contained HTML page", None)
    _document(sub.choices)
    return parser


class _Unparsed(Exception):
    """A trial parse that argparse refused (commands/grammar.py reads the words again)."""


class _TrialParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unparsed(message)


def _command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # argparse keeps no public map
    found: argparse.ArgumentParser = sub.choices[command]
    return found


def _trial(command: str) -> Callable[[list[str]], list[str] | None]:
    """The words of `command` that argparse would have no place for, None if they do not parse."""

    def trial(words: list[str]) -> list[str] | None:
        if "-h" in words or "--help" in words:
            return None  # the help is printed once, by the real parse
        try:
            _, extras = build_parser(_TrialParser).parse_known_args([command, *words])
        except _Unparsed:
            return None
        return extras

    return trial


def _debug() -> bool:
    return environment.flag(DEBUG_VARIABLE)


# The command line of this run, for the known secrets of its messages (outlet.safe_message).
_ARGV: list[str] = []


def _refuse_platform(problem: str) -> None:
    """The one line written without the outlet: on a platform mcptape does not run on, nothing of
    it can be imported (Windows paths break the redactor's), and the sentence is ours alone."""
    print(problem, file=sys.stderr)


def _say(text: str, fallback: str) -> None:
    """`text` on stderr through the outlet: scrubbed of the command line's and the environment's
    secrets (an exception's message may quote a config value, the command line or a server's
    answer), made inert for a CI log; `fallback` if it cannot be checked."""
    from mcptape.publish.outlet import say, set_command_line

    set_command_line(_ARGV)
    say(text, fallback=fallback)


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

        _say("".join(traceback.format_exception(e)), "(traceback withheld)\n")
        _say(line + "\n", fallback + "\n")
    else:
        hint = f"; {DEBUG_VARIABLE}=1 shows the traceback\n"
        _say(line + hint, fallback + hint)


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
        _refuse_platform(problem)
        return EXIT_COULD_NOT_RUN
    parser = build_parser()
    # `play TAPE [options] --fallback -- CMD...`: argparse cannot give a second positional after
    # options that follow the first, so play's server command (after `--`) is split off here.
    server: list[str] | None = None
    if arguments[:1] == ["play"] and "--" in arguments:
        at = arguments.index("--")
        arguments, server = arguments[:at], arguments[at + 1 :]
    notes: list[str] = []
    if arguments and arguments[0] in COMMANDS:
        # The grammar argparse cannot say (commands/grammar.py): `--json` alone is stdout, a value
        # may start with a dash, an old spelling still works this release.
        read = read_words(_command_parser(parser, arguments[0]), arguments[1:], _trial(arguments[0]))
        arguments, notes = [arguments[0], *read.words], read.notes
    args = parser.parse_args(arguments)
    if server is not None:
        args.server = server
    args.exiting = exiting
    if not args.command:
        _say(parser.format_help(), parser.format_usage())
        return EXIT_COULD_NOT_RUN
    command = args.command
    for note in [*notes, *args.deprecated]:
        _say(f"mcptape {command}: {note}\n", f"mcptape {command}: warning: a deprecated spelling\n")
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
        _say(f"mcptape {command}: {e}\n", f"mcptape {command}: {type(e).__name__}\n")
        code = e.exit_code
    except KeyboardInterrupt:
        _say(f"mcptape {command}: interrupted", f"mcptape {command}: interrupted")
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
            from mcptape.publish.outlet import wire_process

            wire_process(False)  # and a `play` does not leave the next command's messages unchecked
    if crashed:
        code = max(code, EXIT_COULD_NOT_RUN)
    return code


def console() -> int:
    """The `mcptape` console script and `python -m mcptape`."""
    return main(exiting=True)


if __name__ == "__main__":
    raise SystemExit(console())
