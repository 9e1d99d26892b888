"""The review view of a tape: one line per value, named by its path, for reading a golden in a diff.

A golden tape is JSONL: a `tools/list` answer is one line of a kilobyte or more, so a new
required property shows in a PR as one whole changed line. Beside each golden tape mcptape
writes this view (`surface.tape.jsonl` -> `surface.tape.view.txt`), in which the same change is

    -result.tools[add].inputSchema.required = ["a","b"]
    +result.tools[add].inputSchema.properties.c.type = "number"
    +result.tools[add].inputSchema.required = ["a","b","c"]

short lines naming the tool and the field. The tape stays the one source of truth (reader.py
reads tapes; nothing reads a view back): the view is derived from the tape's events alone, so
the same tape always gives the same bytes, and `--update-golden` writes both together.
`python -m mcptape.tape.view TAPE` prints it, which is what a `.gitattributes` textconv driver
runs for a readable local `git diff` of the tapes themselves (docs/github-action.md).

Paths: list items that are objects with a unique string `name` (tools, prompts, arguments) or
`uri` (resources) are keyed by it (`tools[add]`), so an item added to a list changes its own
lines only; other items by index. A list of scalars stays on one line while it is short. Ids and
the `jsonrpc` member are left out: they shift when a call is inserted and say nothing to a reviewer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any, TypeVar

from mcptape.errors import TapeError
from mcptape.logsafe import escape_controls, utf8
from mcptape.tape.format import TAPE_SUFFIX, Event
from mcptape.tape.reader import read_tape

VIEW_SUFFIX = ".tape.view.txt"
PathT = TypeVar("PathT", bound=PurePath)
INLINE_LIST_CHARS = 120  # a list of scalars longer than this gets one line per item
_KEYS = ("name", "uri")


def view_path(tape: PathT) -> PathT:
    """Where the view of `tape` goes: beside it, `x.tape.jsonl` -> `x.tape.view.txt`."""
    name = tape.name[: -len(TAPE_SUFFIX)] if tape.name.endswith(TAPE_SUFFIX) else tape.name
    return tape.with_name(name + VIEW_SUFFIX)


# One encoder, built once: json.dumps with arguments builds a new one on every call.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _scalar(value: Any) -> str:
    """A value as JSON, what could act or hide in its strings (tags, bidi, zero-width) as `\\u` escapes:
    the same value, and a reviewer of the golden's diff sees the characters a model would read."""
    return escape_controls(_encode(value), json=True)


def _key(key: str) -> str:
    """An object key or a list item's name in a path: one line, nothing hidden in it."""
    return escape_controls(key, lines=False)


def _item_key(items: list[Any]) -> str | None:
    """The member that names every item of a list of objects uniquely, if one does."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in _KEYS:
        names = [i.get(key) for i in items]
        if all(isinstance(n, str) and n and "]" not in n for n in names) and len(set(names)) == len(names):
            return key
    return None


def _leaves(path: str, value: Any, out: list[str]) -> None:
    """Append `path = value` for every leaf under `value` (appending, not yielding: big tapes)."""
    if isinstance(value, dict):
        if not value:
            if path:  # an empty message body (a bare `tools/list` request) has no lines
                out.append(f"{path} = {{}}")
            return
        prefix = f"{path}." if path else ""
        for k, v in value.items():
            if isinstance(v, (dict, list)):
                _leaves(f"{prefix}{_key(k)}", v, out)
            else:
                out.append(f"{prefix}{_key(k)} = {_scalar(v)}")
    elif isinstance(value, list):
        if not value:
            out.append(f"{path} = []")
        elif not any(isinstance(v, (dict, list)) for v in value) and len(text := _scalar(value)) <= INLINE_LIST_CHARS:
            out.append(f"{path} = {text}")
        else:
            key = _item_key(value)
            for i, v in enumerate(value):
                if key is None:
                    _leaves(f"{path}[{i}]", v, out)
                    continue
                rest = {k: x for k, x in v.items() if k != key}
                if rest:
                    _leaves(f"{path}[{_key(v[key])}]", rest, out)
                else:
                    out.append(f"{path}[{_key(v[key])}] = {{}}")
    else:
        out.append(f"{path} = {_scalar(value)}")


def _event_lines(event: Event, out: list[str]) -> None:
    kind = str(event.get("kind", "?"))
    head = _key(" ".join(str(x) for x in (event.get("dir"), kind, event.get("method")) if x))
    step, session = event.get("step"), event.get("session")
    out.append(f"@@ {head}" + (f" (step {step})" if isinstance(step, int) else "")
               + (f" (session {session})" if isinstance(session, int) else ""))
    msg = event.get("msg")
    if isinstance(msg, dict):
        _leaves("", {k: v for k, v in msg.items() if k not in ("jsonrpc", "id", "method")}, out)
    else:
        _leaves("", {k: v for k, v in event.items()
                     if k not in ("kind", "dir", "id", "method", "step", "raw", "session", "sse")}, out)


def render_view(header: dict[str, Any], events: Iterable[Event]) -> bytes:
    """The view of a tape with this header and these events, as the bytes written beside it."""
    name = _key(str(header.get("name") or "tape"))
    lines = [f"# mcptape review view of {name}{TAPE_SUFFIX}: generated by --update-golden, not read back; do not edit"]
    for ev in events:
        _event_lines(ev, lines)
    return utf8("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """`python -m mcptape.tape.view TAPE`: print the view (a git textconv driver)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mcptape.tape.view TAPE", file=sys.stderr)
        return 3
    try:
        tape = read_tape(args[0])
    except TapeError as e:
        print(f"mcptape view: {e}", file=sys.stderr)
        return 3
    sys.stdout.buffer.write(render_view(tape.header, tape.events))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
