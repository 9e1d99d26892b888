"""Command line: argument parsing and exit codes, nothing else.

Each command lives in its own module and is imported only when chosen, so `mcptape --version`
and `mcptape play` never pay for rich, ghapi, jsonschema or pydantic. For `rec` and `play`
stdout is the MCP wire: everything human goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mcptape import __version__
from mcptape.errors import EXIT_COULD_NOT_RUN, McptapeError
from mcptape.logsafe import safe_log

# command -> "module:function"; the function takes the parsed args and returns an exit code.
COMMANDS = {
    "rec": "mcptape.proxy:run_rec",
    "play": "mcptape.replay:run_play",
    "diff": "mcptape.diff:run_diff",
    "ls": "mcptape.report.terminal:run_ls",
    "show": "mcptape.report.terminal:run_show",
    "ci": "mcptape.ci:run_ci",
    "schema": "mcptape.config:run_schema",
    "comment": "mcptape.github:run_comment",
    "merge": "mcptape.merge:run_merge",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcptape",
        description="Record, replay and diff MCP sessions; gate MCP servers in CI.",
        epilog="exit codes: 0 no drift, 1 output drift, 2 structural drift, 3 could not run, "
        "4 a secret survived redaction",
    )
    parser.add_argument("--version", action="version", version=f"mcptape {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # --- rec -------------------------------------------------------------------------------
    rec = sub.add_parser("rec", help="record a live session through a transparent proxy")
    rec.add_argument("--out", "-o", metavar="TAPE", help="tape file to write (default: tapes/NAME.tape.jsonl)")
    rec.add_argument("--name", help="session name stored in the tape header")
    rec.add_argument("--listen", metavar="HOST:PORT", help="record over HTTP: listen here (with --upstream)")
    rec.add_argument("--upstream", metavar="URL", help="record over HTTP: the server's MCP endpoint")
    rec.add_argument("server", nargs=argparse.REMAINDER, help="-- <server command...>")

    # --- play ------------------------------------------------------------------------------
    play = sub.add_parser("play", help="serve a tape as an MCP server (stdio), offline")
    play.add_argument("tape", help="tape file")
    play.add_argument("--lenient", action="store_true", help="answer near misses with the closest recording")
    play.add_argument("--listen", metavar="HOST:PORT", help="serve over streamable HTTP instead of stdio")

    # --- diff ------------------------------------------------------------------------------
    diff = sub.add_parser("diff", help="compare two tapes: first drifted call, exit 0/1/2")
    diff.add_argument("a", help="the reference tape (golden)")
    diff.add_argument("b", help="the tape to check (fresh)")
    diff.add_argument("--json", action="store_true", help="print the verdict as JSON")
    diff.add_argument(
        "--conformance",
        action="store_true",
        help="also check every message of the fresh tape against the MCP schema of its protocol "
        "revision (structural findings; `mcptape ci` always does; costs 1-5 s to load the schema)",
    )

    # --- ls / show -------------------------------------------------------------------------
    ls = sub.add_parser("ls", help="list tapes")
    ls.add_argument("paths", nargs="*", default=["."], help="directories or tapes (default: .)")
    show = sub.add_parser("show", help="one tape's messages as a table")
    show.add_argument("tape", help="tape file")
    show.add_argument("--full", action="store_true", help="do not shorten payloads")

    # --- ci --------------------------------------------------------------------------------
    ci = sub.add_parser("ci", help="run the sessions of mcptape.yml and compare with the golden tapes")
    ci.add_argument("-c", "--config", default="mcptape.yml", help="config file (default: mcptape.yml)")
    ci.add_argument("--update-golden", action="store_true", help="accept the fresh tapes as golden")
    ci.add_argument("--allow-update-in-ci", action="store_true", help="allow --update-golden when CI=true")
    ci.add_argument("--session", action="append", default=[], metavar="NAME", help="run only this session")
    ci.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="sessions in parallel (default: cores)")
    ci.add_argument("--shard", metavar="I/N", help="run the I-th of N deterministic shards of the sessions")
    ci.add_argument("--repeat", type=int, default=None, metavar="N", help="run each session N times and suggest normalize rules")
    ci.add_argument("--json", dest="json_report", metavar="FILE", help="write the JSON report here")
    ci.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    ci.add_argument("--summary", metavar="FILE", help="write the markdown summary here")
    ci.add_argument("--out-dir", metavar="DIR", help="keep the fresh tapes here")

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
    merge.add_argument("--json", dest="json_report", metavar="FILE", help="write the merged JSON report here")
    merge.add_argument("--summary", metavar="FILE", help="write the merged markdown summary here")
    return parser


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run one command; its exit code. `exiting`: the process ends right after (console), so a
    command may leave the objects it built unfreed (see diff's run_diff)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.exiting = exiting
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_COULD_NOT_RUN
    module_name, func_name = COMMANDS[args.command].split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        return int(func(args))
    except McptapeError as e:
        # Error messages can quote a server's stderr or a tape: keep them inert on a terminal and in a CI log.
        print(safe_log(f"mcptape {args.command}: {e}\n"), file=sys.stderr, end="")
        return e.exit_code
    except KeyboardInterrupt:
        print(f"mcptape {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_COULD_NOT_RUN


def console() -> int:
    """The `mcptape` console script and `python -m mcptape`."""
    return main(exiting=True)


if __name__ == "__main__":
    raise SystemExit(console())
