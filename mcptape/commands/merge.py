"""`mcptape merge REPORT... [-c CONFIG] [--json FILE] [--summary FILE]`: one verdict from sharded ci runs.

The merge itself is ci/merge.py's; this module reads the options, writes the merged report,
summary and terminal report through the outlet (outlet.py: the same redaction `mcptape ci`
writes through), publishes in a GitHub job (github.py) and picks the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mcptape import environment
from mcptape.ci.merge import load_report, merge_reports, missing_shards
from mcptape.commands.terminal import JSON_STDOUT, report_stream, write_output
from mcptape.config.load import LoadedConfig, load_config
from mcptape.errors import EXIT_SECRET, McptapeError, SecretLeak
from mcptape.github import command, publish_run
from mcptape.outlet import Outlet
from mcptape.report.json_report import report_bytes
from mcptape.report.markdown import render_summary
from mcptape.report.model import RunReport
from mcptape.report.terminal import render_run_text
from mcptape.verdict import worst_exit


@dataclass(frozen=True)
class Options:
    reports: tuple[str, ...]
    config: str | None
    json_report: str | None
    summary: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(reports=tuple(args.reports), config=args.config, json_report=args.json_report, summary=args.summary)


def _load_config(given: str | None, config_name: str) -> tuple[LoadedConfig | None, str]:
    """(LoadedConfig or None, the config path to publish under).

    `--config` must load. Without it, the reports' own config name is tried relative to the
    working directory (where `mcptape ci` ran with its default `-c mcptape.yml`); when that is
    not there the merge still works, ordering sessions by name and scrubbing with the built-in
    detectors only.
    """
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


def _warn(message: str, commands_to: IO[str]) -> None:
    print(f"mcptape merge: warning: {message}", file=sys.stderr)
    if environment.on_github_actions():
        print(command("warning", message, title="mcptape merge"), flush=True, file=commands_to)


def run(options: Options) -> int:
    """`mcptape merge REPORT... [--json FILE] [--summary FILE]`: one verdict, summary and PR comment."""
    shards = [load_report(p) for p in options.reports]
    loaded, config_path = _load_config(options.config, shards[0].report.config)
    report = merge_reports(shards, loaded)
    gaps = missing_shards(shards, loaded)

    outlet = Outlet.for_config(loaded)
    outlet.commands_to = report_stream(options.json_report)
    try:
        outlet.show(render_run_text(report), "terminal report", file=report_stream(options.json_report))
        if options.json_report:
            write_output(options.json_report, report_bytes(report), what="JSON report", outlet=outlet)
        if options.summary:
            outlet.write_document(options.summary, render_summary(report), what="markdown summary",
                                  where=f"summary {options.summary}")
    except SecretLeak as e:
        print(f"mcptape merge: {e}", file=sys.stderr)
        return EXIT_SECRET
    for gap in gaps:
        _warn(gap + " (did that shard's job fail before writing its report?)", report_stream(options.json_report))

    codes = [report.exit_code] + [s.stored_exit for s in shards if s.stored_exit is not None]
    report_path = None if options.json_report == JSON_STDOUT else options.json_report
    return worst_exit([worst_exit(codes), _publish(report, config_path, report_path, outlet)])


def _publish(report: RunReport, config_path: str, report_path: str | None, outlet: Outlet) -> int:
    """In a GitHub Actions job: the merged summary, annotations and the one PR comment."""
    if not environment.on_github_actions():
        return 0
    try:
        publish_run(report, config_path=config_path, report_path=report_path, outlet=outlet)
    except McptapeError as e:
        print(f"mcptape merge: publishing to GitHub failed: {e}", file=sys.stderr)
        return e.exit_code
    return 0


