"""`mcptape merge`: combine the JSON reports of sharded `mcptape ci` runs into one verdict.

Owns reading and checking shard reports (each readable, all from one config and one mode, no
session judged twice, every shard present) and putting their sessions back together in the
config's order, so the merged report is the one an unsharded run would have written. The
verdict of each session stays ci.py's and diff/'s; rendering is report/'s (terminal through
report.terminal.render_run_text, markdown through render_summary); publishing (job summary, annotations,
the one PR comment) is github.py's. Every byte written passes ci.session.emit, the same redaction
choke point `mcptape ci` writes through.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.errors import EXIT_SECRET, ConfigError, McptapeError, SecretLeak
from mcptape.logsafe import ci_log_block
from mcptape.report.model import VERDICT_EXIT, RunReport, SessionResult, worst_exit

REPORT_HINT = "pass the files `mcptape ci --shard I/N --json FILE` wrote, one per shard"


@dataclass
class ShardReport:
    path: str
    report: RunReport
    shard: tuple[int, int] | None  # (I, N) from the report's `shard` field; None for an unsharded run
    stored_exit: int | None  # the exit code the shard's report says it ended with


def read_report(path: str, hint: str) -> tuple[RunReport, dict[str, Any]]:
    """A JSON report `mcptape ci --json` wrote (the report and its raw data), checked as far as a
    reader relies on it; any problem is an McptapeError (exit 3) naming the file, with `hint`.
    Reports travel between jobs (shards, the fork pattern's artifact): they are untrusted input."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise McptapeError(f"{path}: cannot read the report: {e.strerror or e}", hint=hint) from e
    except UnicodeDecodeError as e:
        raise McptapeError(f"{path}: not a JSON report (not UTF-8 text)", hint=hint) from e
    try:
        data = json.loads(text)
    except ValueError as e:
        raise McptapeError(f"{path}: not a JSON report: {e}", hint=hint) from e
    except RecursionError as e:  # a report mcptape wrote nests a few levels; this one is not one
        raise McptapeError(f"{path}: not a JSON report: nested too deep to read", hint=hint) from e
    if not isinstance(data, dict) or "mcptape_report" not in data:
        raise McptapeError(f'{path}: not an mcptape JSON report (no "mcptape_report" field)', hint=hint)
    if data["mcptape_report"] != 1:
        raise McptapeError(
            f"{path}: report format {data['mcptape_report']!r} is not one this mcptape reads (1)",
            hint="use the mcptape version that wrote the report",
        )
    try:
        if not isinstance(data.get("sessions", []), list):
            raise ValueError('"sessions" is not a list')
        report = RunReport.from_dict(data)
        for s in report.sessions:
            if s.verdict not in VERDICT_EXIT:
                raise ValueError(f"session {s.name!r} has an unknown verdict {s.verdict!r}")
            if not isinstance(s.name, str) or not s.name:
                raise ValueError("a session without a name")
        if not isinstance(report.config, str):
            raise ValueError('"config" is not a string')
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise McptapeError(f"{path}: not a valid mcptape JSON report: {what}", hint=hint) from e
    return report, data


def load_report(path: str) -> ShardReport:
    """One shard's JSON report; any problem is an McptapeError (exit 3) naming the file."""
    from mcptape.ci.selection import parse_shard

    report, data = read_report(path, REPORT_HINT)
    shard = None
    if report.shard is not None:
        try:
            shard = parse_shard(str(report.shard))
        except ConfigError as e:
            raise McptapeError(f'{path}: invalid "shard" field {report.shard!r}', hint=REPORT_HINT) from e
    stored = data.get("exit_code")
    known = isinstance(stored, int) and not isinstance(stored, bool) and 0 <= stored <= EXIT_SECRET
    return ShardReport(path, report, shard, stored if known else None)


def _load_config(args: argparse.Namespace, config_name: str) -> tuple[Any, str]:
    """(LoadedConfig or None, the config path to publish under).

    `--config` must load. Without it, the reports' own config name is tried relative to the
    working directory (where `mcptape ci` ran with its default `-c mcptape.yml`); when that is
    not there the merge still works, ordering sessions by name and scrubbing with the built-in
    detectors only.
    """
    from mcptape.config.load import load_config

    given = getattr(args, "config", None)
    if given:
        loaded = load_config(given)
        if os.path.basename(loaded.path) != config_name:
            raise McptapeError(
                f"the reports were written for config {config_name}, not --config {given}",
                hint="pass the config the shards ran with",
            )
        return loaded, str(given)
    if Path(config_name).is_file():
        return load_config(config_name), config_name
    return None, config_name


def check_same_run(shards: list[ShardReport]) -> None:
    """All reports must come from one config, one mode and one split (N)."""
    configs = {s.report.config for s in shards}
    if len(configs) > 1:
        listing = ", ".join(f"{s.path}: {s.report.config}" for s in shards)
        raise McptapeError(
            f"the reports come from different configs ({listing})",
            hint="merge the shards of one config at a time",
        )
    modes = {s.report.updated_golden for s in shards}
    if len(modes) > 1:
        updating = ", ".join(s.path for s in shards if s.report.updated_golden)
        raise McptapeError(
            f"some reports come from `--update-golden` runs ({updating}) and some do not",
            hint="merge the reports of one run",
        )
    totals = {s.shard[1] for s in shards if s.shard is not None}
    if len(totals) > 1:
        listing = ", ".join(f"{s.path}: {s.report.shard}" for s in shards if s.shard is not None)
        raise McptapeError(
            f"the reports come from different splits ({listing})",
            hint="run every shard with the same N in --shard I/N",
        )


def check_overlap(shards: list[ShardReport]) -> None:
    """A session judged by two reports (or one shard given twice) would count twice: refuse."""
    paths: set[Path] = set()
    for s in shards:
        resolved = Path(s.path).resolve()
        if resolved in paths:
            raise McptapeError(f"{s.path} is given twice", hint="pass each shard's report once")
        paths.add(resolved)
    seen: dict[str, str] = {}
    for s in shards:
        for session in s.report.sessions:
            if session.name in seen:
                raise McptapeError(
                    f"session {session.name} is in both {seen[session.name]} and {s.path}",
                    hint="pass each shard's report once, all from one `--shard I/N` split",
                )
            seen[session.name] = s.path
    by_index: dict[tuple[int, int], str] = {}
    for s in shards:
        if s.shard is None:
            if len(shards) > 1:
                raise McptapeError(
                    f"{s.path} is an unsharded run; it cannot be merged with other reports",
                    hint="merge only reports written with --shard I/N",
                )
            continue
        if s.shard in by_index:
            raise McptapeError(
                f"shard {s.report.shard} is given twice: {by_index[s.shard]} and {s.path}",
                hint="pass each shard's report once",
            )
        by_index[s.shard] = s.path


def missing_shards(shards: list[ShardReport], loaded: Any) -> list[str]:
    """One line per shard of the split that no report covers, naming its sessions when the config is known."""
    totals = {s.shard[1] for s in shards if s.shard is not None}
    if not totals:
        return []
    total = totals.pop()
    have = {s.shard[0] for s in shards if s.shard is not None}
    lines = []
    for index in range(1, total + 1):
        if index in have:
            continue
        line = f"shard {index}/{total} is missing"
        if loaded is not None:
            from mcptape.ci.selection import select_sessions

            names = [s.name for s in select_sessions(loaded, [], f"{index}/{total}")]
            line += f": its sessions ({', '.join(names) or 'none'}) are not in the merged verdict"
        else:
            line += ": its sessions are not in the merged verdict"
        lines.append(line)
    return lines


def merge_reports(shards: list[ShardReport], loaded: Any = None) -> RunReport:
    """The one report of all shards: sessions in the config's order (by name without a config)."""
    check_same_run(shards)
    check_overlap(shards)
    sessions: list[SessionResult] = [session for s in shards for session in s.report.sessions]
    if loaded is not None:
        order = {s.name: i for i, s in enumerate(loaded.config.sessions)}
        unknown = [s.name for s in sessions if s.name not in order]
        if unknown:
            raise McptapeError(
                f"the reports hold sessions that {loaded.path} does not have: {', '.join(unknown)}",
                hint="the shards ran with a different config; pass that one with --config",
            )
        sessions.sort(key=lambda s: order[s.name])
    else:
        sessions.sort(key=lambda s: s.name)
    orphans = sorted({o for s in shards for o in s.report.orphans})
    return RunReport(
        config=shards[0].report.config,
        sessions=sessions,
        orphans=orphans,
        updated_golden=shards[0].report.updated_golden,
        shard=None,
    )


def _warn(message: str) -> None:
    print(f"mcptape merge: warning: {message}", file=sys.stderr)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from mcptape.github import command

        print(command("warning", message, title="mcptape merge"), flush=True)


def run_merge(args: argparse.Namespace) -> int:
    """`mcptape merge REPORT... [--json FILE] [--summary FILE]`: one verdict, summary and PR comment."""
    from mcptape.ci.session import emit, make_redactor
    from mcptape.redact.redactor import Redactor
    from mcptape.report.terminal import render_run_text
    from mcptape.tape.atomic import write_atomic

    shards = [load_report(p) for p in args.reports]
    loaded, config_path = _load_config(args, shards[0].report.config)
    report = merge_reports(shards, loaded)
    gaps = missing_shards(shards, loaded)

    outlet = make_redactor(loaded) if loaded is not None else Redactor()
    try:
        text = render_run_text(report)
        sys.stdout.write(ci_log_block(emit(outlet, text.encode("utf-8"), "terminal report").decode("utf-8")))
        sys.stdout.flush()
        if args.json_report:
            data = json.dumps(report.to_dict(), indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
            write_atomic(args.json_report, emit(outlet, data, f"JSON report {args.json_report}"), what="JSON report")
        if args.summary:
            from mcptape.report.markdown import render_summary

            data = render_summary(report, redactor=outlet).encode("utf-8")
            write_atomic(args.summary, emit(outlet, data, f"summary {args.summary}"), what="markdown summary")
    except SecretLeak as e:
        print(f"mcptape merge: {e}", file=sys.stderr)
        return EXIT_SECRET
    for gap in gaps:
        _warn(gap + " (did that shard's job fail before writing its report?)")

    codes = [report.exit_code] + [s.stored_exit for s in shards if s.stored_exit is not None]
    return worst_exit([worst_exit(codes), _publish(report, config_path, args.json_report)])


def _publish(report: RunReport, config_path: str, report_path: str | None) -> int:
    """In a GitHub Actions job: the merged summary, annotations and the one PR comment."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return 0
    from mcptape.github import publish_run

    try:
        publish_run(report, config_path=config_path, report_path=report_path)
    except McptapeError as e:
        print(f"mcptape merge: publishing to GitHub failed: {e}", file=sys.stderr)
        return e.exit_code
    return 0


__all__ = ["load_report", "merge_reports", "missing_shards", "read_report", "run_merge"]
