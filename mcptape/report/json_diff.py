"""Two JSON values side by side, row by row: what the HTML report shows of a drifted message.

Owns the layout of a side-by-side JSON diff as plain rows, and nothing of how they look (the HTML
renderer, report/html.py, styles them) nor of what the change means (diff/'s findings say that).
Each row is one line of pretty JSON on either side, aligned: a key in both values is one row
(`same`, or `changed` when its scalar differs), a key only in the recorded value a `removed` row
with nothing on the right, a key only in the fresh one an `added` row. Lists of objects that name
their items (`name`, `uri`, ...: diff/values.natural_key) are aligned by that name, as the diff
engine aligns them, so a tool inserted first is one added tool, not every tool changed. Every row
names its path (`result.content[0].text`, `result.tools[add].inputSchema`) the way the findings do.

Folded, so a reviewer sees the change and not the bulk: an unchanged item of a list that changed
(`{"name": "divide", … 3 keys}`), and any other unchanged object or list of more than FOLD_LINES
lines (`{… 12 keys}`), is one row whose whole text is kept for the page to open on
demand; a string longer than LONG_STRING characters shows its head (or, when it changed, the part
around its first difference, with the character it starts at), the whole kept the same way. A
value with more than MAX_ROWS rows ends in one row saying how many were left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from mcptape.diff.values import NATURAL_KEYS, join, natural_key, same

FOLD_LINES = 12  # an unchanged container longer than this is one row (an unchanged list item always is)
LONG_STRING = 160  # a string longer than this is shown in part
SHOWN_CHARS = 120  # how much of a long string a row shows
MAX_ROWS = 2000  # rows of one side-by-side diff, the rest counted
FOLDED_CHARS = 64_000  # the most of one folded value kept for the page (the tape has the rest)

Change = Literal["same", "changed", "added", "removed", "more"]


@dataclass(frozen=True)
class Cell:
    """One side of a row: indentation depth, the key or index it is under, and its JSON text."""

    depth: int
    key: str | None  # `"name": ` is rendered from it; None for a list item or the top
    text: str  # `{`, `}`, `"abc"`, `5`, `{… 3 keys}`, a long string's shown part
    whole: str | None = None  # a folded value or long string in full (capped at FOLDED_CHARS)
    note: str | None = None  # said after the text: "from character 1 204 of 9 000"


@dataclass(frozen=True)
class Row:
    left: Cell | None
    right: Cell | None
    change: Change
    path: str
    head: bool = False  # the first row of a change: where its path is named


_encode = json.JSONEncoder(ensure_ascii=False).encode


def _scalar(value: Any) -> str:
    try:
        return _encode(value)
    except (TypeError, ValueError):  # a value no JSON reader makes; shown, never a crash
        return repr(value)


def _pretty(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= FOLDED_CHARS else text[:FOLDED_CHARS] + f"\n… {len(text) - FOLDED_CHARS} more characters"


def _lines(value: Any, limit: int) -> int:
    """How many pretty-printed lines `value` takes, counted up to `limit` (then `limit`)."""
    if isinstance(value, dict):
        n = 2
        for v in value.values():
            n += _lines(v, limit) if isinstance(v, (dict, list)) else 1
            if n >= limit:
                return limit
        return n if value else 1
    if isinstance(value, list):
        n = 2
        for v in value:
            n += _lines(v, limit) if isinstance(v, (dict, list)) else 1
            if n >= limit:
                return limit
        return n if value else 1
    return 1


def _summary(value: dict[str, Any] | list[Any]) -> str:
    if isinstance(value, dict):
        return f"{{… {len(value)} key{'s' * (len(value) != 1)}}}"
    return f"[… {len(value)} item{'s' * (len(value) != 1)}]"


def _string_cell(depth: int, key: str | None, value: str, other: str | None = None) -> Cell:
    """A string, in part when long: its head, or around its first difference from `other`."""
    if len(value) <= LONG_STRING:
        return Cell(depth, key, _scalar(value))
    start = 0
    if other is not None:
        start = next((i for i, (x, y) in enumerate(zip(value, other, strict=False)) if x != y), min(len(value), len(other)))
        start = max(0, start - 20)
    part = value[start:start + SHOWN_CHARS]
    text = ("…" if start else "") + _scalar(part) + ("…" if start + SHOWN_CHARS < len(value) else "")
    whole = value if len(value) <= FOLDED_CHARS else value[:FOLDED_CHARS]
    note = f"from character {start + 1} of {len(value)}" if start else f"{len(value)} characters"
    return Cell(depth, key, text, whole=whole, note=note)


def _cell(depth: int, key: str | None, value: Any, other: Any = None) -> Cell:
    if isinstance(value, str):
        return _string_cell(depth, key, value, other if isinstance(other, str) else None)
    return Cell(depth, key, _scalar(value))


def _one_side(value: Any, depth: int, key: str | None, path: str, change: Change, left: bool) -> Iterator[Row]:
    """Every row of a value that is on one side only (added or removed); the first names its path."""
    for k, (cell, at) in enumerate(_cells(value, depth, key, path)):
        yield Row(cell if left else None, None if left else cell, change, at, head=k == 0)


def _cells(value: Any, depth: int, key: str | None, path: str) -> Iterator[tuple[Cell, str]]:
    """The rows of one value alone, with their paths; a long container folds into one row."""
    if isinstance(value, (dict, list)) and value and _lines(value, FOLD_LINES + 1) > FOLD_LINES:
        yield Cell(depth, key, _summary(value), whole=_pretty(value)), path
        return
    if isinstance(value, dict) and value:
        yield Cell(depth, key, "{"), path
        for k, v in value.items():
            yield from _cells(v, depth + 1, str(k), join(path, str(k)))
        yield Cell(depth, None, "}"), path
    elif isinstance(value, list) and value:
        yield Cell(depth, key, "["), path
        for i, v in enumerate(value):
            yield from _cells(v, depth + 1, None, join(path, i))
        yield Cell(depth, None, "]"), path
    else:
        yield _cell(depth, key, value), path


def _pairs(a: list[Any], b: list[Any], path: str) -> list[tuple[int | None, int | None, str]]:
    """Which items of two lists are one item, and the path of each pair: by their natural key
    (name, uri, ...) when they have one, named by it as the findings name it (`tools[add]`), else
    by position. Removed items first, then the fresh list's order."""
    key = natural_key(a, b)
    if key is None:
        named = _names(a, b)
        return [(i if i < len(a) else None, i if i < len(b) else None,
                 f"{path}[{a[i][named]}]" if named is not None else join(path, i)) for i in range(max(len(a), len(b)))]
    in_b = {item[key] for item in b}
    in_a = {item[key]: i for i, item in enumerate(a)}
    out: list[tuple[int | None, int | None, str]] = []
    for i, item in enumerate(a):
        if item[key] not in in_b:
            out.append((i, None, f"{path}[{item[key]}]"))
    for j, item in enumerate(b):
        out.append((in_a.get(item[key]), j, f"{path}[{item[key]}]"))
    return out


def _short(cell: Cell) -> Cell:
    """The fresh side of an unchanged row: the same line, its whole text kept once (on the left)."""
    return cell if cell.whole is None else Cell(cell.depth, cell.key, cell.text, note=cell.note)


def _folded(value: dict[str, Any] | list[Any], depth: int, key: str | None, name: str | None) -> Cell:
    """An unchanged item of a changed list as one row: `{"name": "divide", … 3 keys}`."""
    text = _summary(value)
    if name is not None and isinstance(value, dict):
        text = "{" + f"{_scalar(name)}: {_scalar(value[name])}, " + text[1:]
    return Cell(depth, key, text, whole=_pretty(value))


def _names(a: list[Any], b: list[Any]) -> str | None:
    """The field that names the items of two lists already lined up (the same names, in the same
    order: natural_key leaves those to position), so their paths read `tools[add]`."""
    for key in NATURAL_KEYS:
        if all(isinstance(x, dict) and isinstance(x.get(key), str) for x in (*a, *b)):
            names = [x[key] for x in a]
            if names == [x[key] for x in b] and len(set(names)) == len(names):
                return key
    return None


def _walk(a: Any, b: Any, depth: int, key: str | None, path: str, item_key: str | None = None) -> Iterator[Row]:
    if same(a, b):
        if item_key is not None and isinstance(a, (dict, list)) and a:
            # An unchanged item of a list that changed: its siblings are the news, it is one row.
            cell = _folded(a, depth, key, item_key if item_key in a else None)
            yield Row(cell, _short(cell), "same", path)
            return
        for cell, at in _cells(a, depth, key, path):
            yield Row(cell, _short(cell), "same", at)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        yield Row(Cell(depth, key, "{"), Cell(depth, key, "{"), "same", path)
        for k in [*a, *(k for k in b if k not in a)]:
            at = join(path, str(k))
            if k in a and k in b:
                yield from _walk(a[k], b[k], depth + 1, str(k), at)
            elif k in a:
                yield from _one_side(a[k], depth + 1, str(k), at, "removed", left=True)
            else:
                yield from _one_side(b[k], depth + 1, str(k), at, "added", left=False)
        yield Row(Cell(depth, None, "}"), Cell(depth, None, "}"), "same", path)
        return
    if isinstance(a, list) and isinstance(b, list):
        yield Row(Cell(depth, key, "["), Cell(depth, key, "["), "same", path)
        named = natural_key(a, b) or "name"
        for i, j, at in _pairs(a, b, path):
            if i is not None and j is not None:
                yield from _walk(a[i], b[j], depth + 1, None, at, named)
            elif i is not None:
                yield from _one_side(a[i], depth + 1, None, at, "removed", left=True)
            elif j is not None:
                yield from _one_side(b[j], depth + 1, None, at, "added", left=False)
        yield Row(Cell(depth, None, "]"), Cell(depth, None, "]"), "same", path)
        return
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):  # another shape: one goes, one comes
        yield from _one_side(a, depth, key, path, "removed", left=True)
        yield from _one_side(b, depth, key, path, "added", left=False)
        return
    yield Row(_cell(depth, key, a, b), _cell(depth, key, b, a), "changed", path, head=True)


def side_by_side(recorded: Any, fresh: Any, *, path: str = "", max_rows: int = MAX_ROWS) -> list[Row]:
    """The rows of `recorded` (left) beside `fresh` (right); a side that is None is absent
    (a call only one tape has), so all its rows are added or removed."""
    if recorded is None and fresh is not None:
        rows = _one_side(fresh, 0, None, path, "added", left=False)
    elif fresh is None and recorded is not None:
        rows = _one_side(recorded, 0, None, path, "removed", left=True)
    else:
        rows = _walk(recorded, fresh, 0, None, path)
    out: list[Row] = []
    left = 0
    for row in rows:
        if len(out) < max_rows:
            out.append(row)
        else:
            left += 1
    if left:
        out.append(Row(Cell(0, None, f"… {left} more rows"), Cell(0, None, f"… {left} more rows"), "more", path))
    return out


def changed_paths(rows: list[Row]) -> list[str]:
    """The paths of the changes, each once, in order."""
    return list(dict.fromkeys(r.path for r in rows if r.head))


__all__ = ["Cell", "Row", "changed_paths", "side_by_side"]
