"""Forks: a tape whose answer at one call is replaced, and the lineage its header keeps.

Owns the fork's rule and its record. `fork_tape` makes the fork of a parent tape at call N (the
N-th client request, 1-based, as `show`'s timing and play's `--fault call=N` count): its answer
is replaced by a given result, a JSON-RPC error, or dropped (the call is never answered, so a
replaying client times out). Later exchanges are kept by default: matching is by content, so an
agent that takes another path after the changed answer simply leaves them unused, and one that
goes on as recorded still finds them; `cut=True` ends the tape after the changed call instead
(an agent's fallback path then finds nothing recorded for calls it never made live).

The header carries the lineage, so any reader (`ls`, `show`, `diff`) knows what the tape is:

    "fork": {"parent": "calc.tape.jsonl", "parent_crc32": "5d9c3a0e", "at": 3,
             "call": "tools/call add", "change": "error -32000: boom", "later": "kept"}

`is_fork_of(parent, fork)` says whether a fork is exactly its parent with that one change, which
is how `diff` reads "fork at call N" instead of drift. Timing (tape/timing.py) follows the events.
"""

from __future__ import annotations

from typing import Any

from mcptape.errors import ConfigError
from mcptape.jsonrpc import canonical
from mcptape.tape.format import Event, Tape
from mcptape.tape.timing import TIMING_KEY, call_times, footer_times

FORK_KEY = "fork"


def fork_answer(tape: Tape, at: int) -> tuple[int, int | None, str]:
    """(request event index, answer event index or None, label) of call `at` (1-based)."""
    calls = call_times(tape)
    if not 1 <= at <= len(calls):
        raise ConfigError(f"--at {at}: {tape.path or tape.name} holds {len(calls)} call(s); give 1 to {len(calls)}",
                          hint="`mcptape show TAPE` lists them")
    call = calls[at - 1]
    return call.request, call.answer, call.label


def fork_tape(
    parent: Tape, at: int, *, result: Any = None, error: tuple[int, str] | None = None, drop: bool = False,
    cut: bool = False, parent_name: str | None = None,
) -> tuple[dict[str, Any], list[Event], dict[str, Any]]:
    """The fork's header, events and footer fields (see the module docstring); exactly one change."""
    if sum((result is not None, error is not None, drop)) != 1:
        raise ConfigError("a fork changes one thing: give exactly one of --result, --error, --drop")
    request, answer, label = fork_answer(parent, at)
    msg_id = parent.events[request].get("id")
    new: Event | None = None
    if error is not None:
        code, message = error
        change = f"error {code}: {message}"
        new = {"kind": "error", "dir": "s2c", "id": msg_id, "method": parent.events[request].get("method"),
               "msg": {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}}
    elif result is not None:
        change = "result replaced"
        new = {"kind": "response", "dir": "s2c", "id": msg_id, "method": parent.events[request].get("method"),
               "msg": {"jsonrpc": "2.0", "id": msg_id, "result": result}}
    else:
        change = "answer dropped"
    params = (parent.events[request].get("msg") or {}).get("params")
    if new is not None and params is not None:
        new = {**{k: new[k] for k in ("kind", "dir", "id", "method")}, "params": params, "msg": new["msg"]}
    events = list(parent.events)
    times = footer_times(parent.footer)
    times = None if times is None else times + [None] * (len(events) - len(times))
    where = answer if answer is not None else request + 1  # an unanswered call: the new answer follows it
    replaced = [new] if new is not None else []
    end = len(events) if not cut else where + (1 if answer is not None else 0)
    events = events[:where] + replaced + events[where + (1 if answer is not None else 0):end]
    if times is not None:
        times = times[:where] + [times[answer] if answer is not None else None] * len(replaced) \
            + times[where + (1 if answer is not None else 0):end]
    header = {k: v for k, v in parent.header.items() if k != FORK_KEY}
    header[FORK_KEY] = {
        "parent": parent_name or (parent.path.name if parent.path else parent.name),
        "parent_crc32": (parent.footer or {}).get("crc32"),
        "at": at,
        "call": label,
        "change": change,
        "later": "cut" if cut else "kept",
    }
    footer: dict[str, Any] = {}
    if times is not None:
        footer[TIMING_KEY] = {"unit": "ms", "at": times}
    return header, events, footer


def is_fork_of(parent: Tape, fork: Tape) -> dict[str, Any] | None:
    """The fork's lineage if `fork` is exactly `parent` with its declared change; else None."""
    lineage = fork.header.get(FORK_KEY)
    if not isinstance(lineage, dict) or not isinstance(lineage.get("at"), int):
        return None
    crc = (parent.footer or {}).get("crc32")
    if crc is not None and lineage.get("parent_crc32") not in (None, crc):
        return None  # forked from another tape (or from this one before it changed)
    try:
        request, answer, _ = fork_answer(parent, lineage["at"])
    except ConfigError:
        return None
    where = answer if answer is not None else request + 1
    skip = 1 if answer is not None else 0
    dropped = lineage.get("change") == "answer dropped"
    head = parent.events[:where]
    tail = parent.events[where + skip:] if lineage.get("later") != "cut" else []
    expected_len = len(head) + (0 if dropped else 1) + len(tail)
    if len(fork.events) != expected_len:
        return None
    got_head = fork.events[:where]
    got_tail = fork.events[where + (0 if dropped else 1):]
    same = [canonical(e) for e in head] == [canonical(e) for e in got_head] and \
        [canonical(e) for e in tail] == [canonical(e) for e in got_tail]
    return lineage if same else None
