"""Paginated lists as one logical list: the pages of one `*/list` walk merged before diff/ pairs calls.

Owns one rule of comparing by meaning: a client that lists tools, resources, resource templates
or prompts follows `nextCursor` page by page (live/client.py records every page), and how a server
cuts its list into pages is not behaviour, what the list holds is. So the pages of one walk
become its first page's answer holding every item, without `nextCursor`, and the later pages'
requests and answers leave the tape: an item that vanished past page 1 is named like one of
page 1 (surface `removed`), and a walk that got shorter is not a "call removed" per page. Pure
functions over plain data; the same object back when a tape has no continued walk.
"""

from __future__ import annotations

from typing import Any

from mcptape.jsonrpc import id_key
from mcptape.tape.format import Event, Tape

# list method -> the key of its items in the result
LIST_KEYS: dict[str, str] = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


def _cursor(params: Any) -> Any:
    return params.get("cursor") if isinstance(params, dict) else None


def merged_pages(tape: Tape) -> Tape:
    """The tape with each walk of pages as one answer (module docstring)."""
    events = tape.events
    # method -> (index of the walk's first answer, its merged result so far, the cursor that continues it)
    walks: dict[str, tuple[int, dict[str, Any], Any]] = {}
    requests: dict[str, int] = {}  # id key of a client list request that continues a walk -> its index
    merged: dict[int, dict[str, Any]] = {}
    drop: set[int] = set()
    for i, ev in enumerate(events):
        method = ev.get("method")
        if method not in LIST_KEYS:
            continue
        key = LIST_KEYS[method]
        kind = ev.get("kind")
        if kind == "request" and ev.get("dir") == "c2s":
            cursor = _cursor((ev.get("msg") or {}).get("params"))
            walk = walks.get(method)
            if cursor is not None and walk is not None and walk[2] == cursor:
                requests[id_key(ev.get("id"))] = i
            continue
        if kind != "response" or ev.get("dir") != "s2c":
            continue
        result = (ev.get("msg") or {}).get("result")
        if not isinstance(result, dict) or not isinstance(result.get(key), list):
            continue
        walk = walks.get(method)
        continued = requests.pop(id_key(ev.get("id")), None)
        if continued is not None and walk is not None:
            first, so_far, _ = walk
            so_far = {**so_far, key: [*so_far[key], *result[key]]}
            drop.update((continued, i))
        else:
            first, so_far = i, dict(result)
        following = result.get("nextCursor")
        so_far.pop("nextCursor", None)
        merged[first] = so_far
        if following:
            walks[method] = (first, so_far, following)
        else:
            walks.pop(method, None)
    if not drop:
        return tape
    lines = list(tape.event_lines) or [i + 2 for i in range(len(events))]
    out: list[Event] = []
    out_lines: list[int] = []
    for i, ev in enumerate(events):
        if i in drop:
            continue
        if i in merged and merged[i] != ev["msg"].get("result"):
            ev = {**ev, "msg": {**ev["msg"], "result": merged[i]}}
            ev.pop("raw", None)  # the wire bytes held one page; the merged answer is what is compared
        out.append(ev)
        out_lines.append(lines[i])
    return Tape(header=tape.header, events=out, footer=tape.footer, path=tape.path, event_lines=out_lines)
