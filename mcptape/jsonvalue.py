"""JSON equality, one notion for all of mcptape: when two JSON values are the same value.

MCP messages are JSON, and MCP describes them with JSON Schema, whose instance equality is the
rule here (JSON Schema 2020-12, core section 4.2.2): null equals null; booleans equal when both
true or both false; numbers when they are mathematically equal, so `1` and `1.0` are one value
(JSON has a single number type: a JavaScript client reads both as the same Number, and a
schema's `const: 1` accepts `1.0`); strings by their characters; arrays item by item, in order;
objects by their keys (in any order) and the value under each key. A boolean is never a number:
`true` and `1`, `false` and `0` are different values, though Python's `==` calls them equal.

diff (a golden against a fresh tape) and replay (a recording against a live request) both ask
`json_equal`. Each says how two unequal strings may still be the same (`text`): for diff a
redaction placeholder's tag is not part of the value, for replay a recorded placeholder is a
pattern the live string may fit (placeholders.py).

Speed: Python's `==` is C-speed and agrees with this rule except where a boolean meets a number,
so `json_equal` asks `==` first and walks only values `==` calls equal but that are not the same
objects with the same repr (another key order, `1` against `1.0`, `true` against `1`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TextRule = Callable[[str, str], bool]
"""Whether two unequal strings are nevertheless the same value (both given as they are written)."""


def json_equal(a: Any, b: Any, text: TextRule | None = None) -> bool:
    """Are `a` and `b` the same JSON value (module docstring)? `text` may declare unequal strings the same.

    Without `text`, a pair `==` calls unequal is unequal; with it, containers are walked, since a
    string deep inside may differ in a way `text` allows.
    """
    if a is b:
        return True
    if a == b:
        # Python says equal: the same value unless a boolean met a number somewhere inside.
        return type(a) is type(b) and (type(a) is str or repr(a) == repr(b)) or _walk(a, b, text)
    if text is None:
        return False
    if type(a) is str and type(b) is str:
        return text(a, b)
    return (type(a) is dict or type(a) is list) and type(a) is type(b) and _walk(a, b, text)


def _walk(a: Any, b: Any, text: TextRule | None) -> bool:
    """JSON Schema instance equality, value by value (recursion: values come out of jsonrpc.loads,
    at most jsonrpc.MAX_DEPTH levels deep)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is dict:
        if type(b) is not dict or a.keys() != b.keys():
            return False
        return all(v is b[k] or _walk(v, b[k], text) for k, v in a.items())
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(x is y or _walk(x, y, text) for x, y in zip(a, b, strict=True))
    if type(a) is str:
        return type(b) is str and (a == b or (text is not None and text(a, b)))
    if type(a) in (int, float):
        return type(b) in (int, float) and a == b
    return type(a) is type(b) and bool(a == b)  # None, and anything a caller built that is not JSON
