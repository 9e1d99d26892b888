"""SARIF 2.1.0 of a run's security findings, for GitHub's code-scanning view (`mcptape ci --sarif FILE`).

One result per `security` finding (diff/surface_review.py) that fails the run or is reported
(severity structural → level error, output → warning, info → note), located at the golden
tape's line of the answer it is about — the file a reviewer would change back — and one rule
per kind, with the explanation verdict.SECURITY_KINDS gives it. Other drift is not a
code-scanning alert: it is the PR comment's. A partial fingerprint (session, kind, path, the
words) lets code scanning follow an alert across commits even when the tape's lines move.
Where paths are relative to: the caller's `root` (the checkout, GITHUB_WORKSPACE in a job).
Messages pass logsafe.escape_controls (code scanning shows them as they are, hidden characters
and all). The run's property bag carries each server's context cost and coverage: not alerts,
but what every report gives.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcptape.logsafe import escape_controls, utf8
from mcptape.report import surface_notes
from mcptape.verdict.model import RunReport
from mcptape.verdict.vocabulary import SECURITY_KINDS
from mcptape.version import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"structural": "error", "output": "warning", "info": "note"}
INFORMATION_URI = "https://github.com/mcptape/mcptape"


def sarif_log(report: RunReport, *, config_dir: Path, root: Path,
              session_lines: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The SARIF log of `report`: golden tapes (relative to `config_dir`) named relative to `root`.
    A session compared with a live reference has no golden tape (ci/baseline.py): its findings
    point at the session in the config, at its line in `session_lines` (by name)."""
    kinds = list(SECURITY_KINDS)
    rules = [{
        "id": f"mcptape/security.{kind}",
        "name": f"security.{kind}",
        "shortDescription": {"text": explanation},
        "fullDescription": {"text": f"{explanation}. mcptape reviews only what a change adds to the text agents read; "
                                    f"relax it with `drift.fail_on: {{security.{kind}: info}}` in mcptape.yml."},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["security", "mcp"]},
    } for kind, explanation in SECURITY_KINDS.items()]
    results: list[dict[str, Any]] = []
    for session in report.sessions:
        for drift in session.diff.drifts if session.diff is not None else []:
            for finding in drift.findings:
                if finding.category != "security" or finding.kind not in SECURITY_KINDS:
                    continue
                location: dict[str, Any] = {"physicalLocation": _place(report, session.name, session.golden,
                                                                       finding.golden_line, config_dir, root,
                                                                       session_lines or {})}
                digest = hashlib.sha256("\0".join(
                    (session.name, str(finding.kind), finding.path, json.dumps(finding.after, sort_keys=True))
                ).encode("utf-8")).hexdigest()
                results.append({
                    "ruleId": f"mcptape/security.{finding.kind}",
                    "ruleIndex": kinds.index(finding.kind),
                    "level": LEVEL[finding.severity],
                    "message": {"text": escape_controls(f"{session.name}: {finding.message}")},
                    "locations": [location],
                    "partialFingerprints": {"mcptapeFinding/v1": digest[:32]},
                })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mcptape", "version": __version__, "informationUri": INFORMATION_URI,
                                "rules": rules}},
            "results": results,
            # Not alerts: each server's context cost and coverage, for a reader of the log (SARIF's property bag).
            "properties": {"mcptape": {"surface": surface_notes.surface_data(report)}},
        }],
    }


def _place(report: RunReport, session: str, golden: str | None, line: int | None, config_dir: Path, root: Path,
           session_lines: Mapping[str, int]) -> dict[str, Any]:
    """Where a finding points: the golden tape's line of the answer, or (no golden tape: a live
    reference) the session in the config, never a directory nor a line of a tape not on disk."""
    if golden:
        return {"artifactLocation": {"uri": _uri(config_dir / golden, root)}, "region": {"startLine": line or 1}}
    at = session_lines.get(session) or session_lines.get(session.split("@", 1)[0]) or 1  # an era: its session's line
    return {"artifactLocation": {"uri": _uri(config_dir / report.config, root)}, "region": {"startLine": at}}


def _uri(path: Path, root: Path) -> str:
    """A file as a URI relative to `root` (forward slashes)."""
    try:
        return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    except ValueError:  # another drive (Windows): absolute is all there is
        return path.resolve().as_uri()


def sarif_bytes(report: RunReport, *, config_dir: Path, root: Path, session_lines: Mapping[str, int] | None = None) -> bytes:
    """The SARIF file: UTF-8 JSON whose strings hold nothing that acts or hides (`\\u` escapes, the same values)."""
    log = sarif_log(report, config_dir=config_dir, root=root, session_lines=session_lines)
    return utf8(escape_controls(json.dumps(log, indent=2, ensure_ascii=False), json=True) + "\n")
