"""The redactor's cheap test (`Engine.could_match`) never clears a line the full walk finds anything in.

Writers skip scrubbing and verify skips the walk for a line `could_match` clears, so the test
must be a true superset of every detector and decoder, on the line as text and on the JSON it
parses to. Checked against the full walk itself on generated tape lines: planted secrets of
every shape (tests/redact_corpus.py), JSON-, percent-, base64- and `\\u`-escaped forms, a `raw` message, a
garbage line's base64 bytes, `progressToken`s, a known value holding a quote, a user name sitting inside
"progressToken", a Windows home. Reproduce a failure with REDACT_SEED=<seed>.
"""

from __future__ import annotations

import base64
import json
import os
import random
from typing import Any
from urllib.parse import quote

import pytest

from mcptape.jsonrpc import dumps
from mcptape.redact import detectors
from mcptape.redact.detectors import Sink
from mcptape.redact.redactor import Redactor
from mcptape.tape.events import EventBuilder, garbage_event, stderr_event
from tests.redact_corpus import KNOWN_SOURCE, corpus

SEED = int(os.environ.get("REDACT_SEED") or random.randrange(1 << 30))
WORDS = ["the", "server", "returned", "items", "for", "query", "with", "name", "value", "and", "short", "description", "of", "results"]

# name -> (known value, home, user, share of requests with a progressToken, decoding on)
CONFIGS: dict[str, tuple[str, str, str | None, float, bool]] = {
    "default": ("kQ7-zr93Lm-w0Yp4", "/home/zelda-q", "zelda-q", 0.6, True),
    # A known value holding a quote and a backslash: inside a `raw` message it reads escaped twice.
    "quoted-known": ('p"w\\x9Zq-4410', "/home/zelda-q", None, 0.0, True),
    # A user name inside "progressToken": the exact JSON string can no longer be passed over. (A
    # known value inside it is never a known secret: it is part of mcptape's own text.)
    "user-in-progresstoken": ("kQ7-zr93Lm-w0Yp4", "/home/zelda-q", "essToken", 0.6, True),
    # A Windows home (backslashes, escaped in JSON); no user name, which would find it anyway.
    "windows-home": ("kQ7-zr93Lm-w0Yp4", "C:\\Users\\zelda-q", None, 0.0, True),
    # Decoding off: a long mixed-case token no longer counts as a possible base64 run, so each
    # token shape's own trigger has to find it.
    "no-decode": ("kQ7-zr93Lm-w0Yp4", "/home/zelda-q", None, 0.6, False),
}


def _text(rng: random.Random, known: str, home: str, planted: list[str], url_password: str) -> str:
    parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
    if rng.random() < 0.4:
        hidden = rng.choice(
            [
                rng.choice(planted),
                known,
                home + ("\\notes.txt" if "\\" in home else "/notes.txt"),
                base64.b64encode(rng.choice(planted).encode()).decode(),
                json.dumps({"note": rng.choice(planted)}),  # JSON inside a string
                quote(url_password, safe=""),  # "://" and "@" only after percent-decoding
                rng.choice(['say "hi"', "a\\b", "tab\there", "line\nbreak", "ünïcode"]),
            ]
        )
        parts.insert(rng.randrange(len(parts) + 1), hidden)
    return " ".join(parts)


def _lines(rng: random.Random, known: str, home: str, progress: float, n: int) -> list[str]:
    planted_all = corpus(rng.randrange(1 << 30))
    planted = [p.carrier for p in planted_all]
    url_password = next(p.carrier for p in planted_all if p.kind == "url-password")
    builder = EventBuilder()
    lines: list[str] = []
    for i in range(n):
        args: dict[str, Any] = {"query": _text(rng, known, home, planted, url_password)}
        params: dict[str, Any] = {"name": "search", "arguments": args}
        if rng.random() < progress:
            params["_meta"] = {"progressToken": rng.choice([i, f"p-{i}"])}
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        text = _text(rng, known, home, planted, url_password)
        ans = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}
        for direction, msg in (("c2s", req), ("s2c", ans)):
            wire = dumps(msg)
            roll = rng.random()
            if roll < 0.15:
                wire = json.dumps(msg)  # spaces after separators: the event keeps a `raw`
            elif roll < 0.2:
                wire = json.dumps(msg, ensure_ascii=True).replace("e", "\\u0065")  # every e \u-escaped
            event = builder.line(direction, wire.encode())
            if "raw" in event and rng.random() < 0.5:
                del event["msg"]  # a `raw` alone (hand-made lines): nothing else holds its strings
            lines.append(dumps(event))
        roll = rng.random()
        if roll < 0.1:
            secretish = rng.choice([b" password=abcd", b" pw=abcd " + os.urandom(2).hex().encode(), b" plain words"])
            lines.append(dumps(garbage_event("s2c", b"\xff" + secretish)))  # short base64: one case or mixed
        elif roll < 0.2:
            lines.append(dumps(stderr_event(_text(rng, known, home, planted, url_password).encode())))
    return lines


def _found_by_full_walk(r: Redactor, line: str) -> int:
    """How many hits the checker's full path finds: the line parsed and walked, and scanned as text."""
    found: list[str] = []
    sink = Sink(lambda kind, value, path, named: found.append(kind))
    checker = r._checker
    checker.event(json.loads(line), sink)
    checker.text(line, 0, sink, "line")
    found += [h.kind for h in checker.scan(line)]
    return len(found)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_could_match_clears_only_lines_the_full_walk_finds_nothing_in(config: str) -> None:
    known, home, user, progress, decode = CONFIGS[config]
    rng = random.Random(f"{SEED}/{config}")
    r = Redactor(known={KNOWN_SOURCE: known}, home=home, user=user, decode=decode)
    cleared = flagged = 0
    for number, line in enumerate(_lines(rng, known, home, progress, 400), start=1):
        r._checker.pem_open = False
        if r._checker.could_match(line):
            flagged += 1
            continue
        cleared += 1
        hits = _found_by_full_walk(r, line)
        assert hits == 0, f"seed {SEED}, config {config}, line {number}: cleared, but the walk finds {hits}"
    # Both sides exercised: a test where nothing is ever cleared would prove nothing.
    assert cleared >= 100 and flagged >= 50, (cleared, flagged)


def test_progress_token_alone_does_not_send_a_line_through_the_walk() -> None:
    r = Redactor(home=None, user=None)
    line = dumps({"kind": "request", "msg": {"params": {"_meta": {"progressToken": "p-1"}}}})
    assert not r._checker.could_match(line)
    assert r._checker.could_match(line.replace("progressToken", "sessionToken"))
    # A trigger inside the name (here a user name) turns the pass-over off. A known value inside it
    # cannot be one: it is part of mcptape's own text (redact.own_text), so it is not a known secret.
    assert Redactor(home=None, user="essToken")._checker.could_match(line)
    assert not Redactor(known={"X": "essToken"}, home=None, user=None)._checker.could_match(line)


def test_line_bytes_writes_a_cleared_line_as_it_is_and_scrubs_the_rest() -> None:
    r = Redactor(known={KNOWN_SOURCE: "kQ7-zr93Lm-w0Yp4"}, home=None, user=None)
    clean = {"kind": "response", "dir": "s2c", "id": 1, "msg": {"result": {"text": "nothing here"}}}
    assert r.line_bytes(clean, "t:2") == (dumps(clean) + "\n").encode()
    dirty = {"kind": "response", "dir": "s2c", "id": 1, "msg": {"result": {"text": "conf kQ7-zr93Lm-w0Yp4"}}}
    out = r.line_bytes(dirty, "t:3")
    assert b"kQ7-zr93Lm-w0Yp4" not in out and b"<REDACTED:env.CALC_TOKEN>" in out


def test_an_anchored_user_pattern_is_applied_to_field_values() -> None:
    # A pattern matching a whole value never matches inside serialized JSON (which starts with
    # `{`): searching the serialized event for user patterns once let such an event through
    # unscrubbed (verify then refused the whole tape). User patterns now always get the walk.
    r = Redactor(patterns=["^ACME-[0-9]{6}$"], home=None, user=None)
    event = {"kind": "response", "dir": "s2c", "id": 1, "msg": {"result": {"code": "ACME-123456"}}}
    assert r.redact_event(event)["msg"]["result"]["code"] == "<REDACTED:pattern>"
    assert b"ACME-123456" not in r.line_bytes(event, "t:2")


def test_b64_runs_finds_exactly_what_the_run_regex_finds() -> None:
    rng = random.Random(f"{SEED}/b64")
    alphabet = "AZaz09+/_-"
    for case in range(3000):
        parts = []
        for _ in range(rng.randint(0, 6)):
            parts.append("".join(rng.choices(alphabet, k=rng.choice([0, 5, 23, 24, 25, 40]))))
            parts.append("=" * rng.randint(0, 4) + rng.choice(["", " ", ".", '"', "\n", "é" if case % 3 == 0 else "~"]))
        text = "".join(parts)
        want = [m.span() for m in detectors._B64_RUN.finditer(text)]
        assert detectors._b64_runs(text) == want, (SEED, text)
