"""Merging shards: the JSON reports of sharded `mcptape ci` runs put back together as one verdict.

Owns checking shard reports (each readable, all from one config and one mode, no session judged
twice, every shard present) and putting their sessions back together in the config's order, so
the merged report is the one an unsharded run would have written. The verdict of each session
stays session.py's and diff/'s; reading a report file is report/json_report.py's; the command
(`mcptape merge`: output, publishing, exit code) is commands/merge.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.ci.selection import parse_shard, select_sessions
from mcptape.errors import EXIT_SECRET, ConfigError, McptapeError
from mcptape.report.json_report import read_report
from mcptape.verdict.model import RunReport, SessionResult

REPORT_HINT = "pass the files `mcptape ci --shard I/N --json FILE` wrote, one per shard"


@dataclass
class ShardReport:
    path: str
    report: RunReport
    shard: tuple[int, int] | None  # (I, N) from the report's `shard` field; None for an unsharded run
    stored_exit: int | None  # the exit code the shard's report says it ended with


def load_report(path: str) -> ShardReport:
    """One shard's JSON report; any problem is an McptapeError (exit 3) naming the file."""
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
        compared=shards[0].report.compared,  # every shard compared with the same reference
        comparison=[line for shard in shards for line in shard.report.comparison],
        strength=shards[0].report.strength,  # every shard measured the whole gate (strength/)
    )


__all__ = ["load_report", "merge_reports", "missing_shards"]
