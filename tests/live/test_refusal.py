"""live/refusal.py: a server that shook hands and then refused every request, and what a version refusal reads like."""

from __future__ import annotations

from typing import Any

from mcptape.live.refusal import looks_like_version_refusal, refused_everything


def _answer(method: str, code: int | None = None) -> dict[str, Any]:
    if code is None:
        return {"kind": "response", "dir": "s2c", "method": method, "msg": {"result": {}}}
    return {"kind": "error", "dir": "s2c", "method": method, "msg": {"error": {"code": code, "message": "x"}}}


def test_every_request_refused_after_discover_is_named_with_the_legacy_handshake_as_the_fix() -> None:
    events = [_answer("server/discover"), _answer("tools/list", -32600), _answer("tools/call", -32600)]
    what, fix = refused_everything(events) or ("", "")
    assert "answered server/discover and then refused every request (2) with -32600" in what
    assert "--protocol 2025-11-25" in fix
    # One answer among the refusals, a list that is merely not offered (-32601), or no handshake: not it.
    assert refused_everything([*events, _answer("prompts/list")]) is None
    assert refused_everything([_answer("initialize"), _answer("tools/list", -32601), _answer("x", -32601)]) is None
    assert refused_everything(events[1:]) is None


def test_only_a_refused_version_reads_as_one() -> None:
    assert looks_like_version_refusal('the server refused initialize: {"code":-32602,"message":"Unsupported protocol version"}')
    assert looks_like_version_refusal("error -32022")
    assert not looks_like_version_refusal("the server exited before answering server/discover (failed to start)")
