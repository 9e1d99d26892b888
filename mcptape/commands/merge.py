"""`mcptape merge REPORT... [-c CONFIG] [--json[=FILE]] [--summary[=FILE]] [--html=FILE]`: one verdict from sharded ci runs.

The merge itself is ci/merge.py's; this module reads the options and picks the exit code. The
merged report leaves as a run's does (commands/run_report.py, the path `mcptape ci` takes: the
terminal report, the files, and in a GitHub job the summary, annotations, outputs and comment).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from mcptape.ci.merge import load_report, merge_reports, missing_shards
from mcptape.commands.grammar import Output, check_outputs
from mcptape.commands.output import check_html
from mcptape.commands.run_report import ReportFiles, leave
from mcptape.config.load import LoadedConfig, load_config
from mcptape.errors import McptapeError
from mcptape.publish.outlet import Outlet
from mcptape.verdict.vocabulary import worst_exit


@dataclass(frozen=True)
class Options:
    reports: tuple[str, ...]
    config: str | None
    json: str | None  # the report options (commands/grammar.py: `-` is stdout)
    summary: str | None
    html: str | None = None  # --html=FILE: the merged run as one page, from the shards' kept tapes

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(reports=tuple(args.reports), config=args.config, json=args.json, summary=args.summary, html=args.html)


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


def run(options: Options) -> int:
    """`mcptape merge REPORT... [--json[=FILE]] [--summary[=FILE]]`: one verdict, summary and PR comment."""
    check_html(options.html)
    check_outputs([Output("--json", options.json), Output("--summary", options.summary), Output("--html", options.html)],
                  reads=[*options.reports, options.config])
    shards = [load_report(p) for p in options.reports]
    loaded, config_path = _load_config(options.config, shards[0].report.config)
    report = merge_reports(shards, loaded)
    gaps = missing_shards(shards, loaded)

    files = ReportFiles(json_report=options.json, summary=options.summary, html=options.html)
    left = leave(report, files, Outlet.for_config(loaded), name="merge", config_path=config_path,
                 config_dir=loaded.base_dir if loaded is not None else Path("."),
                 warnings=[f"{gap} (did that shard's job fail before writing its report?)" for gap in gaps])
    codes = [report.exit_code] + [s.stored_exit for s in shards if s.stored_exit is not None]
    return worst_exit([*codes, left])


