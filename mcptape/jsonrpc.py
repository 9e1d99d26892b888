"""JSON-RPC 2.0 framing facts: parse a message (depth-capped), classify, serialize, rewrite its id.

Knows the shape of JSON-RPC messages, not what any MCP method means (see live/client.py,
replay.py and diff/ for that).

Depth. A peer may send JSON nested deeper than anything can walk: Python's json gives up near
1000 levels with RecursionError, and mcptape's own walkers (normalize, redact, diff,
conformance, reports) are recursive. So every JSON text mcptape parses off a wire or out of a
string goes through `loads`, the one place that decides: a container nested deeper than
MAX_DEPTH levels (the outermost value is level 1) is kept as a *deep marker*,
`{"mcptape:deep-json": "<its JSON text>"}`, and nothing past it is parsed. The text is the
part's own, validated as JSON (iteratively) and without whitespace between tokens (so two
texts that differ only in layout compare equal), hence always valid JSON. Everything
downstream sees a value at most MAX_DEPTH + 1 levels deep and compares a deep part as text;
`wire_dumps` writes the markers back as their text, which is how a message holding one is
replayed and re-serialized. Callers that parse a wire line report the cut (events.py writes a
`note` event). The key `mcptape:deep-json` is reserved: a peer sending a one-key object of that
name and a string value has it read as a marker.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from json import encoder as json_encoder
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


# Serialization. json.dumps builds a new encoder on every call with non-default options, which is
# most of its cost on the small messages rec's writer and play serialize by the thousand (about
# 4x): these encoders are built once, from the C encoder the json module itself uses. No circular
# check: everything serialized here came out of json.loads or mcptape's own plain data.


def _make_encoder(sort_keys: bool) -> Callable[[Any], str]:
    """Compact raw-UTF-8 JSON (json.dumps with ensure_ascii=False and compact separators)."""

    def default(obj: Any) -> Any:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    make = getattr(json_encoder, "c_make_encoder", None)
    if make is not None:
        try:
            c_encode = make(None, default, json_encoder.encode_basestring, None, ":", ",", sort_keys, False, True)
        except TypeError:  # an interpreter whose C encoder takes other arguments
            c_encode = None
        if c_encode is not None:
            return lambda obj: "".join(c_encode(obj, 0))
    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, check_circular=False).encode


_compact_text = _make_encoder(False)
_canonical_text = _make_encoder(True)
_ascii_encoder = json.JSONEncoder(separators=(",", ":"))


def dumps(obj: Any) -> str:
    """Compact JSON with raw UTF-8, as MCP peers write it; ASCII-escaped if it holds lone surrogates."""
    text = utf8_dumps(obj)
    return _ascii_encoder.encode(obj) if text is None else text


def utf8_dumps(obj: Any) -> str | None:
    """Compact JSON with raw UTF-8, or None if `obj` holds a lone surrogate (no UTF-8 form).

    Where it is not None it equals dumps(obj), and the dumps of a container holding `obj` holds it
    verbatim: what lets a writer splice serialized parts instead of serializing twice.
    """
    text = _compact_text(obj)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def canonical(obj: Any) -> str:
    """Sorted-key compact JSON (raw UTF-8): the form in which two values are compared and keyed."""
    return _canonical_text(obj)


def id_key(msg_id: Any) -> str:
    """A hashable key for a JSON-RPC id (1 and "1" are different ids)."""
    if type(msg_id) is int:  # the common case, without json.dumps' call overhead (bool is not int)
        return str(msg_id)
    return json.dumps(msg_id)


# -- depth (see the module docstring) ------------------------------------------------------------

# Deep enough for any real MCP traffic (schemas, directory trees, ASTs nest far less), shallow
# enough that the recursive walkers, at a few frames per level, stay far from Python's limit of
# 1000 frames even inside embedded JSON text (callers pass the levels left as `limit`).
MAX_DEPTH = 64
DEEP_KEY = "mcptape:deep-json"


def is_deep(value: Any) -> bool:
    """Is `value` a deep marker (a part nested deeper than MAX_DEPTH, kept as its JSON text)?"""
    return type(value) is dict and len(value) == 1 and type(value.get(DEEP_KEY)) is str


def loads(text: str, limit: int = MAX_DEPTH) -> Any:
    """json.loads, with containers nested deeper than `limit` levels kept as deep markers.

    Raises json.JSONDecodeError (a ValueError) for text that is not JSON, as json.loads does.
    """
    return loads_depth(text, limit)[0]


def loads_depth(text: str, limit: int = MAX_DEPTH) -> tuple[Any, int]:
    """(value, depth) as `loads` gives it; depth is 0 when nothing was cut, else the text's nesting.

    Cheap for everything but deep text: a text with at most `limit` brackets cannot nest deeper
    (two C-speed counts, the usual case); a value json.loads parses is checked level by level
    (a walk over its containers only); only a text that really is deeper pays for the scan.
    """
    if text.count("[") + text.count("{") <= limit:
        return json.loads(text), 0
    try:
        value = json.loads(text)
    except RecursionError:
        pass
    else:
        if not _deeper_than(value, limit):
            return value, 0
    return _cut(text, limit)


def _deeper_than(value: Any, limit: int) -> bool:
    """Does a container of `value` sit deeper than `limit` levels? Level by level, no recursion."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > limit:
            return True
        children: list[Any] = []
        extend = children.extend
        for node in level:
            extend(node.values() if type(node) is dict else node)
        level = [v for v in children if type(v) is dict or type(v) is list]
        depth += 1
    return False


# One JSON token: whitespace, a string (as strict json.loads accepts it), a run of opening or of
# closing brackets with any whitespace between them (a 100 000-level nest is two tokens, laid
# out or not), `:` `,`, a number or a literal.
_TOKEN = re.compile(
    r"""(?P<ws>[ \t\n\r]+)"""
    r"""|(?P<str>"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*")"""
    r"""|(?P<open>[\[{](?:[ \t\n\r]*[\[{])*)|(?P<close>[\]}](?:[ \t\n\r]*[\]}])*)|(?P<colon>:)|(?P<comma>,)"""
    r"""|(?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity)"""
)
_CLOSER_OF = str.maketrans("[{", "]}")
_DROP_WS = str.maketrans("", "", " \t\n\r")


def _bracket_at(token: str, k: int) -> int:
    """Offset in a bracket run `token` (whitespace between) of its k-th bracket, from 0."""
    if " " not in token and "\t" not in token and "\n" not in token and "\r" not in token:
        return k
    return [i for i, ch in enumerate(token) if ch in "[]{}"][k]


# Parser states of _deep_spans: what may come next.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _AFTER_VALUE, _END = range(7)


def _cut(text: str, limit: int) -> tuple[Any, int]:
    """`loads` for a text nested deeper than `limit`: validate it and find the containers at level
    limit + 1 (_deep_spans), parse the text with those containers swapped for placeholder
    strings, and put a marker holding each one's text back."""
    spans, deepest = _deep_spans(text, limit)
    nonce = os.urandom(8).hex()  # a placeholder no text can hold by chance
    pieces: list[str] = []
    last = 0
    for i, (s, e, _) in enumerate(spans):
        pieces.append(text[last:s])
        pieces.append(f'"{nonce}{i}"')
        last = e
    pieces.append(text[last:])
    value = json.loads("".join(pieces))
    _swap_strings(value, {f"{nonce}{i}": {DEEP_KEY: compact} for i, (_, _, compact) in enumerate(spans)})
    return value, deepest


def _deep_spans(text: str, limit: int) -> tuple[list[tuple[int, int, str]], int]:
    """Validate `text` as JSON with an iterative parser (no recursion, whatever the depth) that
    notes where each container at level limit + 1 starts and ends, with its tokens for the
    marker's compact text; and the deepest level."""
    spans: list[tuple[int, int, str]] = []  # (start, end, compact text) of each part cut off
    parts: list[str] = []  # the tokens of the part being cut off
    stack: list[str] = []  # the open brackets, outermost first
    depth = deepest = 0
    start = 0
    state = _VALUE
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            break  # a character no token starts with
        pos = m.end()
        group = m.lastgroup
        if group == "ws":
            continue
        at = m.start()
        token = m.group()
        if group == "open":
            run = token.translate(_DROP_WS)
            # Inside one run every bracket but the last opens a value of the one before it,
            # which only an array may have without a key.
            if state not in (_VALUE, _VALUE_OR_CLOSE) or "{" in run[:-1]:
                raise json.JSONDecodeError("unexpected bracket", text, at)
            n = len(run)
            if depth > limit:
                parts.append(run)
            elif depth + n > limit:  # this run opens the part to cut off
                start = at + _bracket_at(token, limit - depth)
                parts = [run[limit - depth:]]
            stack.extend(run)
            depth += n
            deepest = max(deepest, depth)
            state = _KEY_OR_CLOSE if run[-1] == "{" else _VALUE_OR_CLOSE
            continue
        if group == "close":
            run = token.translate(_DROP_WS)
            n = len(run)
            if state not in (_AFTER_VALUE, _VALUE_OR_CLOSE, _KEY_OR_CLOSE) or n > depth:
                raise json.JSONDecodeError("unexpected closing bracket", text, at)
            if "".join(stack[depth - n:]).translate(_CLOSER_OF) != run[::-1]:
                raise json.JSONDecodeError("mismatched closing bracket", text, at)
            if depth > limit >= depth - n:  # this run closes the part cut off
                parts.append(run[:depth - limit])
                spans.append((start, at + _bracket_at(token, depth - limit - 1) + 1, "".join(parts)))
            elif depth > limit:
                parts.append(run)
            del stack[depth - n:]
            depth -= n
            state = _AFTER_VALUE if depth else _END
            continue
        if group == "str":
            if state in (_KEY, _KEY_OR_CLOSE):
                state = _COLON
            elif state in (_VALUE, _VALUE_OR_CLOSE):
                state = _AFTER_VALUE if depth else _END
            else:
                raise json.JSONDecodeError("unexpected string", text, at)
        elif group == "scalar":
            if state not in (_VALUE, _VALUE_OR_CLOSE):
                raise json.JSONDecodeError("unexpected value", text, at)
            state = _AFTER_VALUE if depth else _END
        elif group == "colon":
            if state != _COLON:
                raise json.JSONDecodeError("unexpected ':'", text, at)
            state = _VALUE
        else:  # comma
            if state != _AFTER_VALUE:
                raise json.JSONDecodeError("unexpected ','", text, at)
            state = _VALUE if stack[-1] == "[" else _KEY
        if depth > limit:
            parts.append(token)
    if pos != len(text) or state != _END:
        raise json.JSONDecodeError("not a complete JSON value", text, pos)
    return spans, deepest


def _swap_strings(value: Any, swap: dict[str, Any]) -> None:
    """Replace, in place, every container member that is a key of `swap` by its value (no recursion)."""
    todo = [value]
    while todo:
        node = todo.pop()
        items = node.items() if type(node) is dict else enumerate(node)
        for k, v in list(items):
            if type(v) is str:
                if v in swap:
                    node[k] = swap[v]
            elif type(v) is dict or type(v) is list:
                todo.append(v)


def wire_dumps(obj: Any) -> str:
    """dumps(obj) with each deep marker written back as its JSON text: the wire form of a message
    `loads` cut. Equal to dumps(obj) for anything that holds no marker."""
    wire = expand_deep(obj)
    return wire if wire is not None else dumps(obj)


def expand_deep(obj: Any) -> str | None:
    """wire_dumps(obj) if `obj` holds a deep marker, else None (nothing to expand)."""
    text = dumps(obj)
    if f'"{DEEP_KEY}":' not in text:
        return None
    nonce = os.urandom(8).hex()
    texts: list[str] = []

    def placeholder(marker: Any) -> str:
        texts.append(marker[DEEP_KEY])
        return f"{nonce}{len(texts) - 1}"

    text = dumps(_map_markers(obj, placeholder))
    if not texts:
        return None  # the key was in a string or a bigger object, not a marker
    return re.sub(f'"{nonce}([0-9]+)"', lambda m: texts[int(m.group(1))], text)


def _map_markers(obj: Any, fn: Any) -> Any:
    """A copy of `obj` with each deep marker replaced by fn(marker). `obj` is at most MAX_DEPTH + 1
    deep (it came from `loads`), so recursion is safe here."""
    if is_deep(obj):
        return fn(obj)
    if type(obj) is dict:
        return {k: _map_markers(v, fn) for k, v in obj.items()}
    if type(obj) is list:
        return [_map_markers(v, fn) for v in obj]
    return obj


def holds_deep(obj: Any) -> bool:
    """Does `obj` hold a deep marker anywhere? (A C-speed text test first, then a walk.)"""
    if f'"{DEEP_KEY}":' not in dumps(obj):
        return False
    todo = [obj]
    while todo:
        node = todo.pop()
        if is_deep(node):
            return True
        if type(node) is dict:
            todo.extend(node.values())
        elif type(node) is list:
            todo.extend(node)
    return False


def deep_text(value: Any) -> str | None:
    """The JSON text a deep marker holds, or None for any other value."""
    return value[DEEP_KEY] if is_deep(value) else None


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
        except RecursionError:  # a value nested too deep for the C scanner: find its end ourselves
            deep_end = _value_end(text, start)
            if deep_end is None:
                return None
            end = deep_end
        if name == key:
            return start, end
        i = end
    return None


def _value_end(text: str, start: int) -> int | None:
    """Where the (deeply nested) container that opens at `start` ends, or None; by bracket runs."""
    depth = 0
    for m in _TOKEN.finditer(text, start):
        group = m.lastgroup
        if group == "open":
            depth += len(m.group().translate(_DROP_WS))
        elif group == "close":
            token = m.group()
            n = len(token.translate(_DROP_WS))
            if n >= depth:
                return m.start() + _bracket_at(token, depth - 1) + 1 if depth else None
            depth -= n
    return None
