"""JSON-RPC 2.0 framing facts: classify a message, serialize it, rewrite its id in place.

Knows the shape of JSON-RPC messages, not what any MCP method means (see client.py,
replay.py and diff/ for that).
"""

from __future__ import annotations

import json
from typing import Any, Literal

MessageKind = Literal["request", "notification", "response", "error", "invalid"]

_decoder = json.JSONDecoder()
_WS = " \t\n\r"


def classify(msg: Any) -> MessageKind:
    """The JSON-RPC kind of a parsed message (`invalid` for anything that is not one)."""
    if not isinstance(msg, dict):
        return "invalid"
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    if "id" in msg:
        if "error" in msg:
            return "error"
        if "result" in msg:
            return "response"
    return "invalid"


# json.dumps builds a new JSONEncoder on every call with non-default options (a few µs, a
# measurable share of rec's tape writer, which serializes every message); these are built once.
_utf8_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ascii_encoder = json.JSONEncoder(separators=(",", ":"))


def dumps(obj: Any) -> str:
    """Compact JSON with raw UTF-8, as MCP peers write it; ASCII-escaped if it holds lone surrogates."""
    text = utf8_dumps(obj)
    return text if text is not None else _ascii_encoder.encode(obj)


def utf8_dumps(obj: Any) -> str | None:
    """Compact JSON with raw UTF-8, or None if `obj` holds a lone surrogate (no UTF-8 form).

    Where it is not None it equals dumps(obj), and the dumps of a container holding `obj` holds it
    verbatim: what lets a writer splice serialized parts instead of serializing twice.
    """
    text = _utf8_encoder.encode(obj)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def canonical(obj: Any) -> str:
    """Sorted-key compact JSON: the form in which two values are compared and keyed."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def id_key(msg_id: Any) -> str:
    """A hashable key for a JSON-RPC id (1 and "1" are different ids)."""
    if type(msg_id) is int:  # the common case, without json.dumps' call overhead (bool is not int)
        return str(msg_id)
    return json.dumps(msg_id)


def top_level_span(text: str, key: str) -> tuple[int, int] | None:
    """Character span of the value of top-level `key` in a JSON object text, or None.

    Walks the object member by member with the C scanner, so it is linear and exact: the
    same key nested inside params is never mistaken for the top-level one.
    """
    i = 0
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    if i >= n or text[i] != "{":
        return None
    i += 1
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
    while i < n:
        while i < n and text[i] in _WS + ",":
            i += 1
        if i >= n or text[i] == "}":
            return None
        if text[i] != '"':
            return None
        name, i = scanstring(text, i + 1)
        while i < n and text[i] in _WS:
            i += 1
        if i >= n or text[i] != ":":
            return None
        i += 1
        while i < n and text[i] in _WS:
            i += 1
        start = i
        try:
            _, end = _decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            return None
        if name == key:
            return start, end
        i = end
    return None


def rewrite_id(raw: str, new_id: Any) -> str:
    """`raw` with its top-level id replaced by `new_id`, every other byte unchanged."""
    span = top_level_span(raw, "id")
    if span is None:
        return raw
    start, end = span
    return raw[:start] + json.dumps(new_id, ensure_ascii=False) + raw[end:]
