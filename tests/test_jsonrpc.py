"""JSON-RPC helpers: classification and the byte-exact id rewrite that replay relies on."""

from __future__ import annotations

import json

import pytest

from mcptape.jsonrpc import classify, dumps, rewrite_id, top_level_span


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


def test_rewrite_id_changes_only_the_top_level_id() -> None:
    raw = '{"result":{"id":7,"text":"id: 7"} , "jsonrpc":"2.0",  "id" :  7 }'
    out = rewrite_id(raw, "req-42")
    assert out == '{"result":{"id":7,"text":"id: 7"} , "jsonrpc":"2.0",  "id" :  "req-42" }'
    assert json.loads(out)["result"]["id"] == 7


def test_rewrite_id_keeps_unicode_and_escapes_byte_exact() -> None:
    raw = '{"id":1,"result":{"t":"caf\\u00e9 ☕ \\/"}}'
    assert rewrite_id(raw, 99) == '{"id":99,"result":{"t":"caf\\u00e9 ☕ \\/"}}'


def test_top_level_span_absent_and_malformed() -> None:
    assert top_level_span('{"method":"x","params":{"id":1}}', "id") is None
    assert top_level_span("[1,2]", "id") is None
    assert top_level_span('{"id":', "id") is None


def test_dumps_falls_back_to_ascii_for_lone_surrogates() -> None:
    text = dumps({"t": "\ud800"})
    text.encode("utf-8")  # must not raise
    assert json.loads(text) == {"t": "\ud800"}
    assert dumps({"t": "é"}) == '{"t":"é"}'
