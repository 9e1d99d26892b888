"""The conformance gate: a fresh recording's MCP-schema violations as drifts, judged against the golden's.

Owns turning conformance.check's findings into the gate's verdict: the project's drift settings
applied (`drift.conformance` is their severity, `fail_on`, `ignore`), a violation the golden tape
holds too known (info) so only new ones count, and the drifts placed among diff's own
(`diff_checked`: diff/engine.diff_tapes with `Placed`). It sits above diff/, which knows nothing
of it.

The check itself (check.py) imports mcp_types' pydantic models of two revisions, pydantic and
jsonschema: most of what `mcptape ci` imports before its first server starts (about three
quarters, measured with -X importtime), and no session needs it before it has recorded. So it is
imported on demand (`loaded`), and ci's run_in_pool has the main thread `load` it while the
sessions' servers start; a worker that reaches its check first waits for that import to finish,
so the module is whole in sys.modules and no worker thread does a first import (two threads
importing one module at once can hand one of them a partially initialized module).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcptape.diff.calls import Call
from mcptape.diff.checks import Checks
from mcptape.diff.compare import Placed, Policy, comparable, diff_tapes, no_cyclic_gc
from mcptape.tape.format import Tape
from mcptape.verdict.model import CallRef, DiffResult, Drift, Finding

if TYPE_CHECKING:
    from mcptape.config.models import DriftSettings

_LOADING = threading.Event()  # a main thread will import the check (load)
_LOADED = threading.Event()  # ... and has: sys.modules holds it whole (or the import failed)


def load() -> None:
    """Import the check, in the main thread; workers waiting for it (loaded) go on after."""
    _LOADING.set()
    try:
        import mcptape.conformance.check  # noqa: F401  (mcp_types, pydantic, jsonschema)
    finally:
        _LOADED.set()


def will_load() -> None:
    """Say the main thread will `load` the check soon: workers that need it before then wait."""
    _LOADING.set()


def loaded() -> ModuleType:
    """The check module, once it is imported: imported here on the main thread, waited for on a
    worker thread (a worker that would make the first import is a programming error, said at once)."""
    if not _LOADED.is_set():
        if threading.current_thread() is threading.main_thread():
            load()
        elif not _LOADING.is_set():
            raise RuntimeError("a conformance check ran on a worker thread before the main thread said it would load it")
        else:
            _LOADED.wait()
    import mcptape.conformance.check as check

    return check


def diff_checked(golden: Tape, fresh: Tape, drift: DriftSettings | None = None, *, as_sent: Tape | None = None,
                 checked: list[tuple[int, Finding]] | None = None, checks: Checks | None = None) -> DiffResult:
    """diff_tapes with the fresh recording's conformance drifts placed among the diff's own.

    The fresh tape is checked against the MCP schema of its protocol revision at the severity
    `drift.conformance` (default structural); a violation the golden tape holds too is known (info).
    `as_sent` is the fresh recording before normalization, events in the same order (ci): it is
    the one checked then, since a normalize rule may rewrite a schema (`$..day_of_week` also hits
    an outputSchema's property of that name) into something the server never sent. `checked` is
    that tape's `check`, if the caller has it already (conformance_drifts).
    """
    sent = as_sent or fresh
    with no_cyclic_gc():
        drifts = conformance_drifts(sent, drift, baseline=comparable(golden), checked=checked)
    return diff_tapes(golden, fresh, drift, placed=Placed(sent, drifts), checks=checks)


def check(tape: Tape, drift: DriftSettings | None = None) -> list[tuple[int, Finding]]:
    """check.check_tape_placed on one tape at the severity `drift.conformance`: the findings
    conformance_drifts judges, for a caller that judges one recording twice (ci's --update-golden:
    against the old golden, and alone for the notes), so it is checked once."""
    placed: list[tuple[int, Finding]] = loaded().check_tape_placed(
        tape, severity=drift.conformance if drift is not None else "structural", cap=False)
    return placed


def conformance_drifts(tape: Tape, drift: DriftSettings | None = None, *, baseline: Tape | None = None,
                       checked: list[tuple[int, Finding]] | None = None) -> list[tuple[int, Drift]]:
    """check.check_tape_placed on one tape, as (event index, Drift) per message, the project's
    drift settings applied (severity `drift.conformance`, `fail_on`, `ignore` with method/name
    matched against the message's call). Builds the mcp-types models: 1-5 s once per process.

    `baseline` (the golden tape) makes the check a baseline one, as the conformance suite's list
    of expected failures is: a violation the golden tape holds too (the same rule broken at the
    same place of the same call, a listed tool, prompt or resource named by its name or URI, not
    its position in the list) is known, reported at severity info with "known:" and does not
    fail the run; only new ones count. Each finding is judged before a message's findings are
    capped for the report (_shown), so neither a reordered list nor one more bad tool relabels
    a known violation as new. So an unchanged server whose schemas break the MCP schema
    checks green, and the day it breaks another rule, that rule is drift.

    `checked`: the tape's `check`, made once by a caller that judges it more than once; its
    findings are copied here, since judging them changes them (severity, message, line)."""
    check_tape_placed = loaded().check_tape_placed
    policy = Policy.from_settings(drift)
    known = _conformance_keys(baseline, check_tape_placed(baseline, cap=False)) if baseline is not None else set()
    placed = check(tape, drift) if checked is None else [(pos, copy.copy(f)) for pos, f in checked]
    groups: dict[tuple[int, bool], list[Finding]] = {}
    for pos, finding in placed:
        if finding.fresh_line is None and finding.kind != "version":
            finding.fresh_line = tape.line_of(pos)
        groups.setdefault((pos, finding.kind == "version"), []).append(finding)
    out: list[tuple[int, Drift]] = []
    for (pos, whole_tape), findings in groups.items():
        call = None if whole_tape else _message_call(tape, pos)
        kept = policy.apply(findings, call)
        for finding in kept:
            if finding.kind != "version" and _conformance_key(tape, pos, finding) in known:
                finding.severity = "info"
                finding.message = f"known: {finding.message} (the golden tape breaks it too)"
        kept = _shown(kept)
        if kept:
            ref = None
            if call is not None:
                step = tape.events[pos].get("step")
                ref = CallRef(call.method, call.name, call.arguments, step if isinstance(step, int) else None)
            out.append((pos, Drift(ref, kept)))
    return out


def _shown(findings: list[Finding]) -> list[Finding]:
    """One message's findings as the report shows them: new ones before known ones, at most
    check.MAX_PER_MESSAGE, the last shown one counting the rest. Capped only after each finding was
    judged, so a violation is known or new by itself, never by its rank or by a count of others."""
    check = loaded()
    if len(findings) <= check.MAX_PER_MESSAGE:
        return findings
    ordered = sorted(findings, key=lambda f: f.message.startswith("known: "))
    last = copy.copy(ordered[check.MAX_PER_MESSAGE - 1])
    last.message = check.more_problems(last.message, len(ordered) - check.MAX_PER_MESSAGE)
    return [*ordered[: check.MAX_PER_MESSAGE - 1], last]


_LINE_PREFIX = re.compile(r"\A\d+:")
# A listed item's place in a list answer (`result.tools[3]`): its identity is its name (a resource's
# URI), not its index, which moves when the server reorders or adds items.
_LISTED = re.compile(r"\A(result\.(tools|prompts|resources|resourceTemplates))\[(\d+)\]")
_LISTED_ID = {"tools": "name", "prompts": "name", "resources": "uri", "resourceTemplates": "uriTemplate"}
# The revision a rule is quoted from ("(MCP 2025-06-18, tools/call result)"): the same rule broken
# at the same place is the same violation when the client asked another revision (docs/diff.md).
_REVISION = re.compile(r"\bMCP \d{4}-\d{2}-\d{2}\b")


def _conformance_key(tape: Tape, pos: int, finding: Finding) -> tuple[Any, ...]:
    """What makes two conformance findings the same violation, whichever tape and line: the
    message (direction, kind, method, tool/prompt/URI), the place in it and the rule broken."""
    ev = tape.events[pos] if 0 <= pos < len(tape.events) else {}
    call = _message_call(tape, pos)
    return (ev.get("dir"), ev.get("kind"), ev.get("method"), call.name if call is not None else None,
            _owned_path(ev.get("msg"), _LINE_PREFIX.sub("", finding.path)),
            _MORE.sub("", _REVISION.sub("MCP", finding.message)), finding.kind)


_MORE = re.compile(r" \(and \d+ more problems in this message\)")


def _owned_path(msg: Any, path: str) -> str:
    """`result.tools[3].inputSchema` as `result.tools[name="search"].inputSchema`: the place a
    violation is at, named by the tool (prompt, resource) it belongs to (_LISTED)."""
    match = _LISTED.match(path)
    if match is None or not isinstance(msg, dict) or not isinstance(msg.get("result"), dict):
        return path
    items = msg["result"].get(match.group(2))
    index = int(match.group(3))
    item = items[index] if isinstance(items, list) and index < len(items) else None
    key = _LISTED_ID[match.group(2)]
    if not isinstance(item, dict) or not isinstance(item.get(key), str):
        return path
    return f"{match.group(1)}[{key}={json.dumps(item[key])}]{path[match.end():]}"


def _conformance_keys(tape: Tape, placed: list[tuple[int, Finding]]) -> set[tuple[Any, ...]]:
    return {_conformance_key(tape, pos, f) for pos, f in placed if f.kind != "version"}


def _message_call(tape: Tape, pos: int) -> Call | None:
    """The call a message belongs to, as far as the message itself says (for ignore rules and the report)."""
    ev = tape.events[pos] if 0 <= pos < len(tape.events) else {}
    method = ev.get("method")
    msg = ev.get("msg")
    if not isinstance(method, str) or not isinstance(msg, dict):
        return None
    if ev.get("kind") in ("request", "notification"):
        return Call(-1, method, msg.get("params"), ev.get("kind") == "notification", pos)
    return Call(-1, method, ev.get("params"), False, None, answer_event=pos, answer=msg)
