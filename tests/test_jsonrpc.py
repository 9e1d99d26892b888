"""JSON-RPC helpers: classification and the byte-exact id rewrite that replay relies on."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from mcptape.jsonrpc import (
    DEEP_KEY,
    MAX_DEPTH,
    _deeper_than,
    classify,
    dumps,
    holds_deep,
    is_deep,
    loads,
    loads_depth,
    top_level_span,
    wire_dumps,
)


@pytest.mark.parametrize(
    ("msg", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, "request"),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, "notification"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "response"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}}, "error"),
        ({"jsonrpc": "2.0", "id": 1}, "invalid"),
        ([1, 2], "invalid"),
        ("text", "invalid"),
    ],
)
def test_classify(msg: object, kind: str) -> None:
    assert classify(msg) == kind


def test_the_top_level_id_span_skips_ids_nested_inside_and_the_spaces_around() -> None:
    raw = '{"result":{"id":7,"text":"id: 7"} , "jsonrpc":"2.0",  "id" :  7 }'
    start, end = top_level_span(raw, "id") or (0, 0)
    assert raw[start:end] == "7" and raw[:start].endswith('"id" :  ') and raw[end:] == " }"


def test_a_span_is_counted_in_characters_through_unicode_and_escapes() -> None:
    raw = '{"result":{"t":"caf\\u00e9 ☕ \\/"},"id":1}'
    start, end = top_level_span(raw, "id") or (0, 0)
    assert raw[start:end] == "1" and end == len(raw) - 1


def test_top_level_span_absent_and_malformed() -> None:
    assert top_level_span('{"method":"x","params":{"id":1}}', "id") is None
    assert top_level_span("[1,2]", "id") is None
    assert top_level_span('{"id":', "id") is None


def test_dumps_falls_back_to_ascii_for_lone_surrogates() -> None:
    text = dumps({"t": "\ud800"})
    text.encode("utf-8")  # must not raise
    assert json.loads(text) == {"t": "\ud800"}
    assert dumps({"t": "é"}) == '{"t":"é"}'


# -- depth: the one decision about JSON nested too deep to walk (jsonrpc.py "Depth") ----------------


def _nested(depth: int, leaf: str = '"bottom"') -> str:
    """A JSON text of arrays `depth` levels deep around `leaf`, written by hand (json.dumps gives up)."""
    return "[" * depth + leaf + "]" * depth


def test_deep_json_is_cut_at_max_depth_into_a_marker_holding_its_exact_text() -> None:
    for depth in (500, 100_000):
        text = '{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"nested":' + _nested(depth) + "}}}"
        with pytest.raises(RecursionError):  # what a recursive walker meets without the cap (json.loads too, at 100 000)
            copy.deepcopy(json.loads(text)) if depth < 1000 else json.loads(text)
        value, nesting = loads_depth(text)
        assert nesting == depth + 3
        node = value["result"]["structuredContent"]["nested"]
        level = 4  # msg, result, structuredContent, nested
        while isinstance(node, list):
            node, level = node[0], level + 1
        assert is_deep(node) and level == MAX_DEPTH + 1
        inner = depth - (MAX_DEPTH - 3)
        assert node[DEEP_KEY] == _nested(inner)  # the exact text of the part cut off
        assert wire_dumps(value) == text  # written back, it is the wire bytes again
        assert not _deeper_than(value, MAX_DEPTH + 1)  # what the walkers get is shallow


def test_up_to_max_depth_nothing_is_cut_and_one_level_more_is() -> None:
    at_limit, nesting = loads_depth(_nested(MAX_DEPTH))
    assert nesting == 0 and not holds_deep(at_limit) and at_limit == json.loads(_nested(MAX_DEPTH))
    over, nesting = loads_depth(_nested(MAX_DEPTH + 1))
    assert nesting == MAX_DEPTH + 1 and holds_deep(over)
    assert loads(_nested(MAX_DEPTH + 1), limit=MAX_DEPTH + 1) == json.loads(_nested(MAX_DEPTH + 1))


def test_a_cut_part_is_kept_as_its_compact_text_whatever_its_layout() -> None:
    def layout(ws: str) -> str:
        inner = f'{{{ws}"k"{ws}:{ws}[{ws}{{"x":{ws}"]}} [{{\\" ",{ws}"n":-1.5e3}}{ws}]{ws}}}'
        return '{"a":' + f"[{ws}" * 40 + inner + f"{ws}]" * 40 + f",{ws}\"b\":{ws}2}}"

    spaced, packed = layout(" \n\t"), layout("")
    value = loads(spaced, limit=20)
    assert value == loads(packed, limit=20)  # layout is not content, inside a deep part too
    assert wire_dumps(value) == packed and json.loads(packed) == json.loads(spaced)
    assert '"]} [{\\" "' in wire_dumps(value)  # strings are kept as they are, spaces and brackets in them


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 7 or r < 0.3:
        return rng.choice([1, -2.5e3, 'q"[{\\', True, None, "é", 0, float("nan")])
    if r < 0.65:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}{'[' if i % 2 else ''}": _random_json(rng, depth + 1) for i in range(rng.randint(0, 3))}


def test_the_cut_parser_accepts_exactly_what_json_loads_accepts() -> None:
    """The iterative parser behind a cut validates the text itself (a marker always holds valid
    JSON): on valid and broken texts it must agree with json.loads, and lose nothing."""
    rng = random.Random(16)
    broken = valid = 0
    for _ in range(2000):
        text = json.dumps(_random_json(rng), indent=rng.choice([None, 1]), separators=rng.choice([None, (",", ":")]))
        if rng.random() < 0.5:
            k = rng.randrange(len(text))
            text = text[:k] + rng.choice(["", ",", "]", "}", '"', ":", "x", "[", "{", " ", "\\", "\x01"]) + text[k + 1:]
        try:
            expected = json.loads(text)
        except ValueError:
            expected = ValueError
        for limit in (1, 2, 3):
            if expected is ValueError:
                with pytest.raises(ValueError):
                    loads(text, limit)
                broken += 1
            else:
                got = loads(text, limit)
                assert json.dumps(json.loads(wire_dumps(got))) == json.dumps(expected)
                assert not _deeper_than(got, limit + 1)
                valid += 1
    assert broken > 500 and valid > 500  # both kinds were really tried


def test_a_string_that_mentions_the_marker_key_is_not_a_marker() -> None:
    value = {"text": '{"mcptape:deep-json": "x"}', "obj": {"mcptape:deep-json": "x", "other": 1}}
    assert not holds_deep(value) and wire_dumps(value) == dumps(value)
    assert holds_deep({"a": [{DEEP_KEY: "[[1]]"}]})


def test_the_id_is_found_after_a_value_too_deep_for_the_c_scanner() -> None:
    raw = '{"result":{"v":' + _nested(100_000) + '},"jsonrpc":"2.0","id":7}'  # Node's key order
    assert top_level_span(raw, "id") == (len(raw) - 2, len(raw) - 1)
    assert top_level_span(raw, "result") == (10, len(raw) - len(',"jsonrpc":"2.0","id":7}'))
