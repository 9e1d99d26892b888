"""`mcptape.diff` and `mcptape.run`: the verdicts of `mcptape diff` and `mcptape ci`, as values.

Owns nothing but the mapping of keyword arguments onto the commands' options: the comparison is
commands/diff.py's `compare`, the gate commands/ci.py's `gate`, and what they return are the
models the `--json` reports serialize (verdict/model.py's Verdict and RunReport: `to_dict()` is the
document `diff --json` and `ci --json` write). Nothing is printed, no report file is written, no
PR comment posted; what the command would warn about on stderr is a warning (notices.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from mcptape.api.notices import warn
from mcptape.commands import ci as ci_command
from mcptape.commands import diff as diff_command
from mcptape.errors import ConfigError, McptapeError
from mcptape.verdict.model import RunReport, Verdict


def diff(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    config: str | os.PathLike[str] | None = None,
    *,
    raw: bool = False,
    conformance: bool = False,
    allow_edited: bool = False,
) -> Verdict:
    """Compare tape `b` with tape `a` as `mcptape diff A B` does: the first drifted call, then the rest.

    Both tapes are normalized as `mcptape ci` normalizes a fresh tape and its golden (with
    `config`, that mcptape.yml's `normalize:` rules and `drift:` settings too); `raw` compares
    them as recorded; `conformance` adds the MCP schema check of `b`. The Verdict's `to_dict()`
    is the document `mcptape diff --json` writes. An unreadable tape or config raises (TapeError,
    ConfigError); drift is a verdict, never an exception.

    >>> verdict = mcptape.diff("tapes/arithmetic.tape.jsonl", "tapes/arithmetic.tape.jsonl")
    >>> verdict.verdict, verdict.exit_code, verdict.first
    ('same', 0, None)
    >>> drifted = mcptape.diff("tapes/arithmetic.tape.jsonl", "tapes/surface.tape.jsonl")
    >>> drifted.verdict, drifted.exit_code, drifted.first_drift()
    ('structural', 2, 'step 1 · tools/call add {"a":2,"b":3} · call removed (not in the fresh tape) (structural)')
    """
    options = diff_command.Options(golden=os.fspath(a), fresh=os.fspath(b), json=None, conformance=conformance,
                                   exiting=False, raw=raw, config=os.fspath(config) if config is not None else None,
                                   allow_edited=allow_edited)
    return diff_command.compare(options)


def run(
    config: str | os.PathLike[str] = "mcptape.yml",
    update_golden: bool = False,
    sessions: Sequence[str] | None = None,
    baseline: str | None = None,
    *,
    against: str | None = None,
    allow_update_in_ci: bool = False,
    allow_edited: bool = False,
    jobs: int | None = None,
    strength: bool = False,
) -> RunReport:
    """Run mcptape.yml's sessions and judge them as `mcptape ci` does: the RunReport `ci --json` writes.

    `sessions` selects sessions by name (all by default); `update_golden` writes the golden tapes
    (refused under CI=true unless `allow_update_in_ci`, as the command refuses it); `baseline`
    ("auto", "merge-base", "previous-tag" or a git ref) or `against` (a server of the config) gate
    against a live reference instead of the goldens; `strength` measures the gate on its goldens
    (`report.strength`, as `ci --strength`). The report's `exit_code` is the command's. An invalid
    config raises ConfigError; a session that could not run is a session with verdict "error" in the
    report, as in the command's; a gate weaker than the config's `drift.min_strength` cannot vouch for
    anything, so it raises McptapeError (the command's exit 3) rather than return a report that reads green.

    >>> report = mcptape.run("mcptape.yml", sessions=["arithmetic"])
    >>> report.exit_code, [(s.name, s.verdict) for s in report.sessions]
    (0, [('arithmetic', 'same')])
    """
    if isinstance(sessions, str):
        raise ConfigError(f"sessions={sessions!r}: give a list of session names, e.g. sessions=[{sessions!r}]")
    options = ci_command.Options(
        config=os.fspath(config), update_golden=update_golden, allow_update_in_ci=allow_update_in_ci,
        sessions=tuple(sessions or ()), jobs=jobs, shard=None, repeat=None, json=None, junit=None,
        summary=None, out_dir=None, baseline=baseline, against=against, allow_edited=allow_edited, strength=strength,
    )
    gated = ci_command.gate(options, warn=warn)
    assert gated is not None  # None is --repeat's, which this never asks
    if gated.weak is not None:
        raise McptapeError(gated.weak, hint="see docs/strength.md: what the gate lets through, and the rule that does")
    return gated.report


__all__ = ["diff", "run"]
