"""Side-effect drift: files the server created, changed or deleted in its sandbox, golden vs fresh.

One session check (checks.py registers it). It reads the optional
`side_effect` events that live/sandbox.py records after each step (`{"kind": "side_effect",
"step": n, "changes": [{"path", "change", "size", "sha256"}]}`) and compares them per
(step, file): a side effect that is new, missing, or different (another change kind, size or
content hash) is structural by default — a tool that starts writing where it did not is the
drift reviewers fear most (`drift.fail_on: {side_effect: output}` relaxes it). Each finding
names the file and the step (and the call of that step) that caused it. Snapshots are
live/sandbox.py's; this module only compares what the tapes hold.
"""

from __future__ import annotations

from typing import Any

from mcptape.diff.calls import TapeCalls
from mcptape.verdict.model import Finding

KIND = "side_effect"  # calls.build_calls collects the indices of these events


def _effects(tc: TapeCalls) -> dict[tuple[Any, str], tuple[int, dict[str, Any]]]:
    """(step, path) -> (event index, change) for every side-effect change in the tape."""
    out: dict[tuple[Any, str], tuple[int, dict[str, Any]]] = {}
    for i in tc.side_effects:  # collected by calls.build_calls, in tape order
        event = tc.tape.events[i]
        for change in event.get("changes") or []:
            if isinstance(change, dict):
                out[(event.get("step"), str(change.get("path")))] = (i, change)
    return out


def _step_call(tc: TapeCalls, step: Any) -> str:
    """`step 3 (tools/call note)`: the step and the last call the client made in it."""
    if not isinstance(step, int):
        return "after the steps"
    label = ""
    for event in tc.tape.events:
        if event.get("step") == step and event.get("dir") == "c2s" and event.get("kind") == "request":
            params = (event.get("msg") or {}).get("params")
            name = params.get("name") or params.get("uri") if isinstance(params, dict) else None
            label = str(event.get("method")) + (f" {name}" if name else "")
    return f"step {step}" + (f" ({label})" if label else "")


def _what(change: dict[str, Any]) -> str:
    kind = str(change.get("change"))
    if kind == "deleted":
        return "deleted"
    sha = str(change.get("sha256") or "")[:12]
    return f"{kind} ({change.get('size')} bytes, sha256 {sha}…)"


def check_side_effects(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    gs, fs = _effects(g), _effects(f)
    if not gs and not fs:
        return []
    out: list[tuple[int, Finding]] = []
    end = len(f.tape.events)
    for key in sorted(set(gs) | set(fs), key=lambda k: (k[0] if isinstance(k[0], int) else 1 << 30, k[1])):
        step, path = key
        g_hit, f_hit = gs.get(key), fs.get(key)
        g_line = g.line(g_hit[0]) if g_hit else None
        f_line = f.line(f_hit[0]) if f_hit else None
        fpath = f"side_effects[{path}]"
        if g_hit is None and f_hit is not None:
            where = _step_call(f, step)
            out.append((f_hit[0], Finding.of("side_effect", "added", fpath,
                                             f"new side effect: {where} now touches {path}: {_what(f_hit[1])}",
                                             None, f_hit[1], fresh_line=f_line)))
        elif f_hit is None and g_hit is not None:
            where = _step_call(g, step)
            out.append((end, Finding.of("side_effect", "removed", fpath,
                                        f"missing side effect: {where} no longer touches {path} (golden: {_what(g_hit[1])})",
                                        g_hit[1], golden_line=g_line)))
        elif g_hit is not None and f_hit is not None and g_hit[1] != f_hit[1]:
            where = _step_call(f, step)
            out.append((f_hit[0], Finding.of("side_effect", "changed", fpath,
                                             f"different side effect: {where} on {path}: {_what(g_hit[1])} → {_what(f_hit[1])}",
                                             g_hit[1], f_hit[1], golden_line=g_line, fresh_line=f_line)))
    return out
