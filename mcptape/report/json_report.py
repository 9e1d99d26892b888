"""The JSON report file (`mcptape ci --json`): written by ci and merge, read back by merge and comment.

The format is verdict/model.py's (`RunReport.to_dict`/`from_dict`); this module owns the file:
its bytes (`report_bytes`, one serialization for every writer) and reading one back, checked as
far as a reader relies on it (`read_report`). Reports travel between jobs (shards, the fork
pattern's artifact): they are untrusted input, and any problem is an McptapeError (exit 3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcptape.errors import McptapeError
from mcptape.logsafe import escape_controls, utf8
from mcptape.verdict.model import RunReport
from mcptape.verdict.vocabulary import VERDICT_EXIT


def report_bytes(report: RunReport) -> bytes:
    """The JSON report as written: indented, UTF-8, a final newline; what could act or hide in its
    strings as `\\u` escapes (logsafe.escape_controls: the same values, and a reader of the file sees
    them)."""
    return utf8(escape_controls(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), json=True)) + b"\n"


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
