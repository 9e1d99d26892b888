"""Path-level differences between two JSON values: `result.content[0].text(json).datetime`.

Values are equal as JSON defines it (jsonvalue.py: 1 and 1.0 are one value, true is another),
and the comparison looks inside strings that hold JSON objects or arrays so the path points at the field that changed (within the nesting levels
jsonrpc.MAX_DEPTH leaves them), compares a part nested deeper than that (a deep marker,
jsonrpc.py) as its JSON text and says so, and stops after a few dozen differences per value
(a reviewer reads the first ones; the count says the rest).
Knows nothing about MCP; classify.py decides what each difference means.

Redaction placeholders compare by kind, not by tag: `<REDACTED:github-token#1a2b3c4d>` and
`<REDACTED:github-token#5e6f7a8b>` are the same value (a rotated secret is not drift; the tag is
a keyed hash of the value), `<REDACTED:openai-key#...>` is another; so do numbered UUIDs (`<UUID#2>`
is `<UUID>`: which id came first is not drift). placeholders.py's `untag` is that rule for strings;
only strings holding `<REDACTED:` or `<UUID#` pay for it. Keys built from values (calls.py
call keys, classify.py notification pools) are untagged the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcptape.jsonrpc import MAX_DEPTH, deep_text, dumps, is_deep, loads_depth
from mcptape.jsonvalue import json_equal
from mcptape.placeholders import has_tag, untag
from mcptape.sequences import common_prefix

MAX_DIFFS = 25
_SHOW = 60  # characters of a value shown in a one-line message


DEEP_SUFFIX = "(deep)"  # a path's last step when the value there was compared as deep JSON text
DEEP_NOTE = f"nested deeper than {MAX_DEPTH} levels: compared as JSON text"
DEEP_TEXT_NOTE = f"holds JSON nested deeper than {MAX_DEPTH} levels: compared as text"


@dataclass
class Change:
    path: str
    before: Any
    after: Any
    kind: str  # changed | added | removed
    note: str | None = None  # said after the change: why it was compared the way it was


def same_text(a: str, b: str) -> bool:
    """Two unequal strings that are one value: they differ only in placeholder tags (module docstring)."""
    return (has_tag(a) or has_tag(b)) and untag(a) == untag(b)


def same(a: Any, b: Any) -> bool:
    """JSON equality (jsonvalue.json_equal: 1 and 1.0 are one value, true is another); placeholder
    tags are not part of a string's value (module docstring)."""
    return json_equal(a, b, same_text)


def fast_same(a: Any, b: Any) -> bool:
    """`same` at C speed: containers are compared by jsonvalue.json_equal, which walks only values
    Python's == calls equal, and strings by their tags too; unequal containers are not looked into
    here (`changes` does, and finds no change at strings that differ only in their tags)."""
    if json_equal(a, b):
        return True
    return type(a) is str and type(b) is str and same_text(a, b)


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.replace("_", "").replace("-", "").isalnum() and not key[:1].isdigit():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def parse_json_text(text: str, level: int = 1) -> Any:
    """The JSON object/array a string at nesting `level` holds, or None: only strings that look
    like containers, and only if the JSON fits in the levels left (else it stays text)."""
    return _json_in(text, level)[0]


def _json_in(text: str, level: int) -> tuple[Any, bool]:
    """(parse_json_text's value, whether the string holds JSON too deep for the levels left)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return None, False
    if level >= MAX_DEPTH:
        return None, True
    try:
        value, cut = loads_depth(text, MAX_DEPTH - level)
    except json.JSONDecodeError:
        return None, False
    if not isinstance(value, dict | list):
        return None, False
    return (None, True) if cut else (value, False)


def changes(a: Any, b: Any, path: str = "") -> list[Change]:
    """Up to MAX_DIFFS (+1 marker) differences between a and b, in document order."""
    out: list[Change] = []
    for change in _walk(a, b, path, 1):
        out.append(change)
        if len(out) > MAX_DIFFS:
            break
    return out


def _walk(a: Any, b: Any, path: str, level: int) -> Iterator[Change]:
    if fast_same(a, b):
        return
    if is_deep(a) or is_deep(b):
        ta, tb = deep_text(a), deep_text(b)
        yield Change(path + DEEP_SUFFIX, a if ta is None else ta, b if tb is None else tb, "changed", DEEP_NOTE)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key, value in a.items():
            if key not in b:
                yield Change(join(path, key), value, None, "removed")
            else:
                yield from _walk(value, b[key], join(path, key), level + 1)
        for key, value in b.items():
            if key not in a:
                yield Change(join(path, key), None, value, "added")
        return
    if isinstance(a, list) and isinstance(b, list):
        key = natural_key(a, b)
        if key is not None:
            yield from _walk_keyed(a, b, key, path, level)
            return
        common = min(len(a), len(b))
        for i in range(common):
            yield from _walk(a[i], b[i], join(path, i), level + 1)
        for i in range(common, len(a)):
            yield Change(join(path, i), a[i], None, "removed")
        for i in range(common, len(b)):
            yield Change(join(path, i), None, b[i], "added")
        return
    if isinstance(a, str) and isinstance(b, str):
        (ja, deep_a), (jb, deep_b) = _json_in(a, level), _json_in(b, level)
        if ja is not None and jb is not None:
            inner = list(_walk(ja, jb, path + "(json)", level))
            if inner:
                yield from inner
                return
            # Same JSON, other formatting (spaces, key order): still a different text.
        yield Change(path, a, b, "changed", DEEP_TEXT_NOTE if deep_a or deep_b else None)
        return
    yield Change(path, a, b, "changed")


# Fields that name an object among its siblings, in the order they are tried: MCP's tools,
# prompts, resources and templates, a knowledge graph's entities, records with ids.
NATURAL_KEYS = ("name", "uri", "uriTemplate", "id", "key")


def natural_key(a: list[Any], b: list[Any]) -> str | None:
    """The field that aligns two lists of objects by identity instead of position, or None.

    Every item of both lists is an object holding the field with a scalar value unique within its
    list: one of NATURAL_KEYS, else the first string field all items share that is unique in
    both. Used only where the keys do not already line up position by position (then the two
    alignments are one) and some item is in both lists (else nothing is kept to align on), so
    one entity inserted at the front is one added item, not a change of every item after it.
    """
    if not a or not b or not all(isinstance(x, dict) and not is_deep(x) for x in (*a, *b)):
        return None
    shared = set(a[0])
    for item in (*a[1:], *b):
        shared &= set(item)
    candidates = [k for k in NATURAL_KEYS if k in shared]
    candidates += [k for k in a[0] if k in shared and k not in candidates and isinstance(a[0][k], str)]
    for key in candidates:
        ka, kb = [x[key] for x in a], [x[key] for x in b]
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in (*ka, *kb)):
            continue
        if len(set(ka)) != len(ka) or len(set(kb)) != len(kb):
            continue
        if ka == kb or not set(ka) & set(kb):
            # Lined up already, or no item kept: by position the changes read better ("A" → "B"
            # of a content item, not one removed and one added).
            return None
        return key
    return None


def _walk_keyed(a: list[Any], b: list[Any], key: str, path: str, level: int) -> Iterator[Change]:
    """Items paired by `key` (natural_key): changed and added in the fresh list's order (at their
    fresh index), then removed ones (at their golden index); a pure reordering is one change."""
    in_a = {item[key]: i for i, item in enumerate(a)}
    in_b = {item[key] for item in b}
    found = False
    for j, item in enumerate(b):
        i = in_a.get(item[key])
        if i is None:
            found = True
            yield Change(join(path, j), None, item, "added", f"{key} {show(item[key])}")
        else:
            for change in _walk(a[i], item, join(path, j), level + 1):
                found = True
                yield change
    for i, item in enumerate(a):
        if item[key] not in in_b:
            found = True
            yield Change(join(path, i), item, None, "removed", f"{key} {show(item[key])}")
    if not found:
        yield Change(path, [x[key] for x in a], [x[key] for x in b], "changed", f"the same items by {key}, in another order")


def show(value: Any) -> str:
    """A value as a short one-line literal for messages."""
    text = dumps(value)
    return text if len(text) <= _SHOW else text[: _SHOW - 1] + "…"


def describe(change: Change) -> str:
    """The one-line message of a change: `"5" → "6"`, `added 7`, `removed {"a":1}`, and its note."""
    text = _describe(change)
    return f"{text} ({change.note})" if change.note else text


def _describe(change: Change) -> str:
    if change.kind == "added":
        return f"added {show(change.after)}"
    if change.kind == "removed":
        return f"removed {show(change.before)}"
    return contrast(change.before, change.after)


def contrast(a: Any, b: Any) -> str:
    """`a → b` in one line; two long texts are shown where they first differ (cut to the same
    prefix, both would read alike and the line would show no difference)."""
    if isinstance(a, str) and isinstance(b, str) and (len(a) > _SHOW or len(b) > _SHOW):
        at = common_prefix(a, b)
        start = max(0, at - 10)
        return (
            f"{show(a[start:start + 25])} → {show(b[start:start + 25])} "
            f"(first difference at character {at}; {len(a)} → {len(b)} characters)"
        )
    return f"{show(a)} → {show(b)}"


def clip(value: Any, limit: int = 2000) -> Any:
    """A value small enough for a report: long strings are cut and say how long they were."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"…({len(value)} characters)"
    if isinstance(value, dict | list):
        text = dumps(value)
        if len(text) > limit:
            return text[:limit] + f"…({len(text)} characters of JSON)"
    return value
