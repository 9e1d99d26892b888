"""The maintained rule set (redact/rules.py) in both engines, the false-positive corpus, linear time.

The rule corpus (tests/redact_corpus.py `rule_corpus`) holds provider shapes only betterleaks'
rules know: each is planted raw, base64, percent-encoded and JSON-escaped in every part of an
event, and none may survive; a scrubber without the rule set fails closed (SecretLeak, exit 4).
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import time
from typing import Any
from urllib.parse import quote

import pytest

from mcptape.errors import SecretLeak
from mcptape.redact import detectors, rules, shapes
from mcptape.redact.redactor import Redactor
from mcptape.tape.format import make_header
from tests.redact_corpus import false_positive_corpus, leaks, rule_corpus

SEED = int(os.environ.get("REDACT_SEED") or int.from_bytes(os.urandom(4), "big"))


def encoded_forms(carrier: str) -> list[str]:
    return [
        carrier,
        "b64 " + base64.b64encode(carrier.encode()).decode(),
        "https://example.com/cb?state=" + quote(carrier, safe=""),
        json.dumps({"nested": carrier}),
    ]


def events_with(carrier: str) -> list[dict[str, Any]]:
    return [
        {"kind": "request", "dir": "c2s", "id": 1, "msg": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                         "params": {"name": "t", "arguments": {"text": carrier}}}},
        {"kind": "response", "dir": "s2c", "id": 1, "msg": {"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": carrier}], "structuredContent": {"out": carrier}}}},
        {"kind": "error", "dir": "s2c", "id": 2, "msg": {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32000, "message": carrier, "data": {"detail": carrier}}}},
        {"kind": "notification", "dir": "s2c", "msg": {"jsonrpc": "2.0", "method": "notifications/message",
                                                       "params": {"level": "info", "data": carrier}}},
        {"kind": "stderr", "text": carrier},
    ]


def test_every_rule_shape_is_scrubbed_in_every_form_and_channel() -> None:
    planted = rule_corpus(SEED)
    survived = []
    for p in planted:
        for form in encoded_forms(p.carrier):
            r = Redactor()
            data = r.redact_tape(make_header("t"), events_with(form))  # verifies too
            if leaks(data.decode(), [p]):
                survived.append(f"{p.kind} in {form[:12]!r}...")
            assert r.counts, f"seed {SEED}: {p.kind}: nothing counted"
    assert not survived, f"seed {SEED}: {len(survived)} survived: {survived}"
    # ... and the shapes are really the rule set's: our own detectors alone find none of them.
    own = detectors.Engine(Redactor()._config, shapes.SHAPES, rules=False)
    assert all(not own.scan(p.carrier) for p in planted)


def test_a_shape_only_the_rule_set_knows_fails_closed_when_the_scrubber_misses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    p = rule_corpus(SEED)[0]
    r = Redactor()
    monkeypatch.setattr(r, "_scrubber", detectors.Engine(r._config, shapes.SHAPES, rules=False))
    with pytest.raises(SecretLeak, match=p.kind) as info:
        r.redact_tape(make_header("t"), events_with(p.carrier))
    assert not leaks(str(info.value), [p])
    # ... and with the rule set on both sides it is scrubbed, not refused:
    clean = Redactor().redact_tape(make_header("t"), events_with(p.carrier))
    assert not leaks(clean.decode(), [p]) and f"<REDACTED:{p.kind}#" in clean.decode()


def test_the_false_positive_corpus_is_left_alone() -> None:
    corpus = false_positive_corpus(SEED)
    changed = []
    for text in corpus:
        r = Redactor(home=None, user=None)
        out = r.redact_text(text)
        r.verify(out, "fp")  # no exit 4
        obj = json.loads(text) if text.startswith("{") else None
        if out != text or (obj is not None and r.redact_obj(obj) != obj):
            changed.append((r.summary(), text[:60]))
    assert not changed, f"seed {SEED}: {len(changed)} of {len(corpus)} redacted: {changed}"


def test_the_rule_set_is_not_asked_about_short_strings_and_gives_spans() -> None:
    assert rules.spans("x" * (rules.MIN_LEN - 1)) == []
    p = rule_corpus(SEED)[0]
    text = f"a {p.values[0]} b {p.values[0]}"
    found = rules.spans(text)
    assert [text[s:e] for s, e, _ in found] == [p.values[0]] * 2 and {k for *_, k in found} == {p.kind}


def _mixed(n: int, rng: random.Random, escapes: bool) -> str:
    parts: list[str] = []
    size = 0
    alphabet = string.ascii_letters + string.digits + "+/"
    while size < n:
        run = "".join(rng.choice(alphabet) for _ in range(rng.randrange(2000, 8000)))
        parts.append(run)
        parts.append(rng.choice(["\\u00e9", "%2F%3D", "\\u0041x", "%41"]) if escapes else " ")
        size += len(run) + 6
    return "".join(parts)


def test_detection_is_linear_on_base64_runs_mixed_with_escapes() -> None:
    """1 MB of base64-like text with `\\u` escapes and `%` runs: the old run patterns backtracked
    through each run (26 s for 40 KB). Bound: relative to the same text without escapes, generous."""
    rng = random.Random(SEED)
    plain, mixed = _mixed(1_000_000, rng, False), _mixed(1_000_000, rng, True)
    r = Redactor()
    t0 = time.process_time()
    assert r.redact_text(plain) == plain
    baseline = time.process_time() - t0
    t0 = time.process_time()
    assert r.redact_text(mixed) == mixed
    took = time.process_time() - t0
    # Quadratic would be hundreds of times the baseline; linear is a small multiple.
    assert took < 20 * baseline + 2.0, f"{took:.2f}s against a {baseline:.2f}s baseline"


def test_a_rule_reading_a_keyword_before_its_value_finds_it_where_the_text_is_json() -> None:
    # adobe-client-id wants `adobe... = "<32 hex>"`: in a tape line the quotes read `\"`, and the
    # library, handed only the line as it stands, found nothing there, so could_match let the
    # line through unwalked and every channel kept the value (generated rule examples: 88 rules).
    rng = random.Random(SEED)
    value = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    carrier = f'config: adobe_client_id = "{value}";'
    assert [rule for _, _, rule in rules.spans(carrier)] == ["adobe-client-id"]
    assert rules.spans(json.dumps(carrier)) and rules.spans(json.dumps(json.dumps(carrier)))  # once and twice escaped
    data = Redactor().redact_tape(make_header("t"), events_with(carrier)).decode()
    assert value not in data and data.count("<REDACTED:adobe-client-id#") == 7, f"seed {SEED}"
