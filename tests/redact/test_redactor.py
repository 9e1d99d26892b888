"""Redaction: every planted secret shape, in every form, is gone; ordinary data is untouched; fail closed.

The secrets are generated at test time (tests/redact_corpus.py); the seed is in every failure
message so a failing run can be reproduced with REDACT_SEED=<seed>.
"""

from __future__ import annotations

import base64
import html
import json
import os
import random
import re
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

import pytest

from mcptape.errors import ConfigError, SecretLeak
from mcptape.jsonrpc import dumps
from mcptape.placeholders import PLACEHOLDER_RE, strip_tags
from mcptape.publish.outlet import Outlet
from mcptape.redact import detectors, redactor, shapes
from mcptape.redact.redactor import Redactor
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import EventBuilder, garbage_event, stderr_event
from mcptape.tape.format import make_header, tape_bytes
from mcptape.tape.reader import read_tape
from tests.redact_corpus import KNOWN_SOURCE, USER_PATTERN, corpus, leaks

SEED = int(os.environ.get("REDACT_SEED") or random.randrange(1 << 30))
PLANTED = corpus(SEED)
KNOWN_VALUE = next(p.values[0] for p in PLANTED if p.kind == KNOWN_SOURCE)
HOME = "/home/zelda-q"
USER = "zelda-q"


def make_redactor(**kw: Any) -> Redactor:
    kw.setdefault("home", HOME)
    kw.setdefault("user", USER)
    return Redactor(known={KNOWN_SOURCE: KNOWN_VALUE}, patterns=[USER_PATTERN], **kw)


def escaped(obj: Any) -> str:
    """JSON text with every string character written as a \\uXXXX escape."""
    if isinstance(obj, str):
        return '"' + "".join(f"\\u{ord(c):04x}" for c in obj) + '"'
    if isinstance(obj, dict):
        return "{" + ",".join(f"{escaped(k)}:{escaped(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(escaped(v) for v in obj) + "]"
    return json.dumps(obj)


def call_events(text_in: str, answer: dict[str, Any], *, wire: str | None = None) -> list[dict[str, Any]]:
    """A tools/call carrying `text_in` and its answer, built the way every recorder builds events."""
    b = EventBuilder()
    req = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text_in}}}
    ans = {"jsonrpc": "2.0", "id": 7, **answer}
    return [
        b.line("c2s", dumps(req).encode()),
        b.line("s2c", (wire if wire is not None else dumps(ans)).encode()),
    ]


def result(text: str) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}


# Each form: carrier -> the events a tape would hold when the secret takes that path.
FORMS = {
    "raw": lambda c: call_events(c, result(c)),
    "base64": lambda c: call_events(
        "ok", result("blob " + base64.b64encode(c.encode()).decode() + " url " + base64.urlsafe_b64encode(c.encode()).decode())
    ),
    "url-query": lambda c: call_events("ok", result("https://example.com/cb?state=" + quote(c, safe="") + "&x=1")),
    "json-u-escapes": lambda c: call_events(
        "ok", {}, wire='{"jsonrpc":"2.0","id":7,"result":' + escaped({"content": [{"type": "text", "text": c}]}) + "}"
    ),
    "error-data": lambda c: call_events(c, {"error": {"code": -32000, "message": "failed: " + c, "data": {"echo": c}}}),
    "stderr": lambda c: [stderr_event(line.encode()) for line in c.split("\n")],
    "http-header": lambda c: [
        {
            "kind": "http",
            "dir": "s2c",
            "headers": {"X-Echo": c, "Authorization": "Bearer " + c.replace("\n", " ")},
            "header_list": [["X-Echo", c], ["Set-Cookie", "sid=" + c.replace("\n", "").replace(";", "") + "; Path=/"]],
        }
    ],
    "garbage-b64": lambda c: [garbage_event("s2c", b"\xff\xfe not json: " + c.encode())],
    "argv-header": lambda c: [make_header("leaky", server={"command": ["python", f"{HOME}/srv.py", "--token", c]})],
}


def test_corpus_has_at_least_20_shapes_generated_now() -> None:
    kinds = {p.kind for p in PLANTED}
    assert len(PLANTED) >= 20 and len(kinds) >= 20
    assert corpus(SEED + 1)[0].values != PLANTED[0].values  # random, not fixed literals


def test_every_token_shape_has_a_corpus_entry() -> None:
    # With the next test, deleting any detector fails the suite: its entry is found by no other.
    assert {s.kind for s in shapes.SHAPES} <= {p.kind for p in PLANTED}


def test_every_planted_secret_is_found_by_its_own_detector() -> None:
    """The kind counted is the entry's own: a carrier another detector would also catch (the
    `Authorization:` name catches any `Bearer x`) still fails here when its detector is gone."""
    wrong = []
    for p in PLANTED:
        r = make_redactor()
        out = r.redact_text(p.carrier)
        if p.kind not in r.counts or leaks(out, [p]):
            wrong.append(f"{p.kind}: counted {sorted(r.counts)}")
    assert not wrong, f"seed {SEED}: {wrong}"


@pytest.mark.parametrize("form", sorted(FORMS))
def test_no_planted_secret_survives_redact_event(form: str) -> None:
    failures = []
    for p in PLANTED:
        r = make_redactor()
        events = FORMS[form](p.carrier)
        out = [r.redact_event(ev) for ev in events]
        data = tape_bytes(make_header("t"), out).decode()
        found = leaks(data, [p])
        if found:
            failures.append(found)
            continue
        try:
            r.verify(data, "tape")
        except SecretLeak as e:
            failures.append([f"{p.kind}: verify still finds {e}"])
        assert r.counts, f"{p.kind} in {form}: nothing counted (seed {SEED})"
    assert not failures, f"seed {SEED}, form {form}: {failures}"


@pytest.mark.parametrize("form", ["raw", "base64", "url-query", "json-u-escapes"])
def test_no_planted_secret_survives_redact_text(form: str) -> None:
    wrap = {
        "raw": lambda c: f"server said: {c} (end)",
        "base64": lambda c: "payload=" + base64.b64encode(("x " + c).encode()).decode(),
        "url-query": lambda c: "GET /cb?next=" + quote(c, safe="") + " HTTP/1.1",
        "json-u-escapes": lambda c: escaped({"echo": c}),
    }[form]
    r = make_redactor()
    for p in PLANTED:
        text = wrap(p.carrier)
        out = r.redact_text(text)
        assert not leaks(out, [p]), f"seed {SEED}: {p.kind} survived redact_text in {form}"
        r.verify(out, "text")
        assert r.redact_text(out) == out, f"seed {SEED}: redaction of {p.kind} is not idempotent"


def test_gcp_service_account_key_is_redacted_whole_at_every_nesting() -> None:
    """The key file as a tool's text (escaped newlines), that text inside a JSON result, and that
    result as the text of another: the body never survives, the rest of the file does."""
    gcp = next(p for p in PLANTED if p.kind == "private-key" and "service_account" in p.carrier)
    nested = [gcp.carrier]
    for _ in range(3):
        nested.append(json.dumps({"file": nested[-1]}))
    r = make_redactor()
    for level, text in enumerate(nested):
        out = r.redact_text(text)
        assert not leaks(out, [gcp]), f"seed {SEED}: key body survives at nesting {level}"
        assert "svc@demo-project.iam.gserviceaccount.com" in out and "<REDACTED:private-key#" in out
        r.verify(out, f"nesting {level}")
        events = call_events("show key", result(text))
        data = tape_bytes(make_header("t"), [r.redact_event(e) for e in events]).decode()
        assert not leaks(data, [gcp]), f"seed {SEED}: key body in a tape at nesting {level}"
        r.verify(data, "tape")
    # The fault it fixes: the `private_key` field rule took only `-----BEGIN` and left the body.
    assert r.redact_text(gcp.carrier).count("-----") == 0


def test_a_raw_at_in_a_url_password_is_part_of_the_password() -> None:
    r = make_redactor()
    out = r.redact_text("mysql://app:p4ss@w0rd@db.internal/x and https://u:pw@host?next=me@x")
    assert out == "mysql://app:<REDACTED:url-password>@db.internal/x and https://u:<REDACTED:url-password>@host?next=me@x"


# The placeholders a report can hold, then each escaping a report format applies to its text.
PLACEHOLDER_TEXT = (
    "db postgres://app:<REDACTED:url-password>@db.internal:5432/x Authorization: Bearer <REDACTED:bearer-token#89abcdef> "
    "password=<REDACTED:password> <HOME>/x by <USER>; Cookie: sid=<REDACTED:cookie#0123abcd>; lang=<REDACTED:cookie>"
)
ESCAPINGS: dict[str, Any] = {
    "xml-text": xml_escape,
    "xml-attribute": quoteattr,
    "html": lambda t: html.escape(t, quote=True),
    "html-entities": lambda t: t.replace("<", "&#60;").replace(">", "&#x3E;"),
    "json": lambda t: json.dumps({"error": t}, ensure_ascii=False, indent=2),
    "json-ascii": lambda t: json.dumps({"error": "step 1 · tools/call \u2192 " + t}, ensure_ascii=True),
    "json-html-safe": lambda t: json.dumps({"error": t}).replace("<", "\\u003c").replace(">", "\\u003e"),
}


@pytest.mark.parametrize("escaping", sorted(ESCAPINGS))
def test_no_report_escaping_makes_a_placeholder_look_like_a_secret(escaping: str) -> None:
    text = ESCAPINGS[escaping](PLACEHOLDER_TEXT)
    assert "REDACTED:url-password" in text
    r = make_redactor()
    r.verify(text, escaping)  # `&lt;REDACTED:url-password&gt;` once read as a URL password (exit 4)
    assert r.redact_text(text) == text and r.counts == {}
    # Positive control: a real password in the same escaped text is still found.
    with pytest.raises(SecretLeak, match="url-password"):
        r.verify(ESCAPINGS[escaping](PLACEHOLDER_TEXT.replace("<REDACTED:url-password>", "Hunter2pw9")), escaping)


def test_junit_and_markdown_reports_keep_placeholders_and_pass_verification() -> None:
    from mcptape.report.junit import junit_xml
    from mcptape.report.markdown import render_comment, render_summary
    from mcptape.verdict.model import CallRef, DiffResult, Drift, Finding, RunReport, SessionResult

    message = "postgres://app:<REDACTED:url-password>@db v1 → postgres://app:<REDACTED:url-password>@db v2"
    finding = Finding(category="result", severity="output", path="result.content[0].text", message=message)
    drift = Drift(call=CallRef(method="tools/call", name="echo", arguments={"text": message}), findings=[finding])
    session = SessionResult(name="urls", verdict="output", diff=DiffResult(verdict="output", drifts=[drift]),
                            redactions={"url-password": 1})
    report = RunReport(config="mcptape.yml", sessions=[session])
    r = make_redactor()
    xml = junit_xml(report)
    assert "&lt;REDACTED:url-password&gt;" in xml
    r.verify(xml, "JUnit report")
    outlet = Outlet(r)
    for doc in (outlet.document(render_summary(report), "summary"), outlet.document(render_comment(report, "mcptape.yml"), "comment")):
        assert "REDACTED:url-password" in doc and "Hunter" not in doc
        r.verify(doc, "markdown")


def test_known_values_are_found_html_escaped() -> None:
    value = 'p<w>"&q-9Zx41'
    r = Redactor(known={"env.DB_PASSWORD": value}, home=None, user=None)
    for text in (html.escape(value), html.escape(value, quote=False)):
        assert r.redact_text(f"<failure>{text}</failure>") == "<failure><REDACTED:env.DB_PASSWORD></failure>"


def test_pem_key_printed_line_by_line_on_stderr_is_redacted_whole() -> None:
    pem = next(p for p in PLANTED if p.kind == "private-key")
    r = make_redactor()
    events = [stderr_event(b"loading key")] + FORMS["stderr"](pem.carrier) + [stderr_event(b"ready")]
    out = [r.redact_event(ev) for ev in events]
    assert not leaks(dumps(out), [pem])
    assert out[0]["text"] == "loading key" and out[-1]["text"] == "ready"  # neighbours untouched
    assert all(PLACEHOLDER_RE.fullmatch(ev["text"]) for ev in out[1:-1])



def test_a_key_on_stderr_goes_on_across_the_wire_messages_the_writer_sees_between_its_lines() -> None:
    """rec's writer sees stderr lines and wire messages in the order they arrive, which is timing:
    a message between two lines of a key printed on stderr neither ends nor continues it."""
    pem = next(p for p in PLANTED if p.kind == "private-key")
    lines = FORMS["stderr"](pem.carrier)
    answer = {"kind": "response", "dir": "s2c", "id": 1,
              "msg": {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "answered: 3 lines, 42 bytes (ok)."}]}}}
    events: list[dict[str, Any]] = []
    for line in lines:
        events += [line, answer]  # a message between every two stderr lines of the key
    r = make_redactor()
    out = [r.redact_event(ev) for ev in events]
    assert not leaks(dumps(out), [pem])
    assert all(ev == answer for ev in out[1::2])  # the messages are untouched
    # the control: with one open key for both streams (as before), the first message ends the key
    shared = make_redactor()
    scrub = shared._scrub_event
    shared._scrub_event = lambda event, stderr: scrub(event, False)  # type: ignore[method-assign]
    assert leaks(dumps([shared.redact_event(ev) for ev in events]), [pem])

def test_placeholders_name_the_kind_and_known_values_their_source() -> None:
    r = make_redactor()
    gh = next(p for p in PLANTED if p.values[0].startswith("ghp_"))
    out = r.redact_text(f"a {gh.values[0]} b {KNOWN_VALUE} c {HOME}/x by {USER.upper()}")
    assert re.fullmatch(r"a <REDACTED:github-token#[0-9a-f]{8}> b <REDACTED:env\.CALC_TOKEN> c <HOME>/x by <USER>", out)
    assert r.counts == {"github-token": 1, KNOWN_SOURCE: 1, "home": 1, "user": 1}
    # Base64 of `user:value` (Basic auth) is named after the source too, found without decoding.
    basic = base64.b64encode(f"me:{KNOWN_VALUE}".encode()).decode()
    assert make_redactor(decode=False).redact_text(f"Basic {basic}") == "Basic <REDACTED:env.CALC_TOKEN>"


def test_placeholders_are_stable_across_events_runs_and_redactors() -> None:
    tokens = [p.values[0] for p in PLANTED if p.kind in ("github-token", "npm-token", "huggingface-token")]
    a, b = make_redactor(), make_redactor()
    first = [a.redact_text(f"t={t}") for t in tokens]
    again = [a.redact_text(f"u {t}") for t in tokens]
    other = [b.redact_text(f"t={t}") for t in tokens]
    assert first == other  # byte-stable across runs: a golden tape does not churn
    assert [f[2:] for f in first] == [g[2:] for g in again]
    assert len(set(first)) == len(tokens)  # different secrets, different placeholders
    assert a.counts == {"github-token": 3, "npm-token": 1, "huggingface-token": 1}


def test_numbering_does_not_cascade_when_a_secret_bearing_step_is_removed() -> None:
    tokens = [p.values[0] for p in PLANTED if p.kind == "github-token"]
    steps = [call_events(t, result(f"echo {t}")) for t in tokens]

    def placeholders(step_list: list[list[dict[str, Any]]]) -> list[list[str]]:
        r = make_redactor()
        return [PLACEHOLDER_RE.findall(dumps([r.redact_event(e) for e in s])) for s in step_list]

    full = placeholders(steps)
    without_first = placeholders(steps[1:])
    assert full[1:] == without_first


def test_low_entropy_values_get_no_tag_so_the_tag_cannot_confirm_a_guess() -> None:
    r = make_redactor()
    out = r.redact_obj({"password": "hunter22", "api_key": "Zq8" + "".join(random.choices("abcdefXYZ0123456789", k=29))})
    assert out["password"] == "<REDACTED:password>"
    assert re.fullmatch(r"<REDACTED:api-key#[0-9a-f]{8}>", out["api_key"])


def test_secret_named_fields_in_objects_text_argv_and_header_pairs() -> None:
    tok = "Zq8" + "".join(random.choices("abcdefXYZ0123456789", k=29))
    r = make_redactor()
    out = r.redact_obj(
        {
            "client_secret": "s3cr",
            "accessToken": tok,
            "headers": [["Authorization", "Basic " + base64.b64encode(b"bob:pw123456").decode()], ["Accept", "text/plain"]],
            "argv": ["srv", "--api-key", tok, "--port", "8080"],
            "Cookie": "theme=dark; sid=" + tok,
            "note": f"DB_PASSWORD=hunter22 x-api-key: {tok}",
        }
    )
    flat = dumps(out)
    assert tok not in flat and "hunter22" not in flat and "s3cr" not in flat and "pw123456" not in flat
    assert out["argv"][:2] == ["srv", "--api-key"] and out["argv"][3:] == ["--port", "8080"]
    assert out["headers"][1] == ["Accept", "text/plain"]
    assert out["headers"][0][1].startswith("Basic <REDACTED:")
    assert out["Cookie"].startswith("theme=<REDACTED:cookie>; sid=<REDACTED:")


NEGATIVE_CONTROLS = [
    "550e8400-e29b-41d4-a716-446655440000",
    "3f786850e387550fdab836ed7e6dc881de23001b",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    base64.b64encode(b"The quick brown fox jumps over the lazy dog, twice over.").decode(),
    "2026-07-28T12:34:56.789Z",
    "https://example.com/api/v1/items?page=2&sort=name#top",
    "Add two numbers. Returns the sum as text; errors name the bad argument.",
    "12345678901234567890 3.14159 -42",
    "notifications/resources/list_changed",
    "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
    "sha256:" + "ab" * 32,
    "Bearer authentication is described in RFC 6750",
    "the token field is optional; set password: via env",
    # Plain configuration, as servers echo it: never a secret.
    "MODE=result LOG_LEVEL=verbose APP_ENV=production REGION=eu-west-1 session production-smoke",
    "AUTHOR_NAME=Alice Smith GIT_AUTHOR_EMAIL=alice@example.com --author Alice --auth-mode oauth",
    # Near misses of the new shapes.
    "postgres://db.internal:5432/app mongodb+srv://cluster0.example.net/test redis://cache:6379/0",
    "https://example.com:8443/users/@alice and mailto:bob@example.com",
    "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey=short;EndpointSuffix=core.windows.net",
    "SKIP_THE_REMAINING_STEPS_PLEASE SKU-0123456789abcdef0123456789abcdef msg.result.content",
    "sg.example.com dapivirine do_v1_ OTHER.tokens.here MTIz.abc.def",
    "Twilio SID AC0123456789abcdef0123456789abcdef (an account id, not a key)",
]


@pytest.mark.parametrize("text", NEGATIVE_CONTROLS)
def test_negative_controls_are_untouched(text: str) -> None:
    r = make_redactor()
    assert r.redact_text(text) == text
    r.verify(text, "control")
    assert r.counts == {}


def test_ordinary_mcp_traffic_is_untouched() -> None:
    b = EventBuilder()
    lines = [
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                 "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1.0"}}}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                 "serverInfo": {"name": "calc", "version": "1.0.0"}}}),
        ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"progressToken": "a1B2c3D4e5F6g7H8"}}}),
        ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "login", "description": "Log in.", "inputSchema": {
                 "type": "object", "properties": {"username": {"type": "string"}, "password": {"type": "string"},
                 "token": {"type": "string", "default": "none"}}, "required": ["password", "username"]}}]}}),
        ("s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "a1B2c3D4e5F6g7H8",
                 "progress": 3, "total": 10}}),
    ]
    r = make_redactor()
    for d, msg in lines:
        ev = b.line(d, dumps(msg).encode())
        assert r.redact_event(ev) == ev
    assert r.counts == {}


def test_allowlisted_placeholders_and_values_stay() -> None:
    r = make_redactor(allow=["Zq8abcdefXYZ0123456789abcdefXYZ01"])
    text = (
        "token=${{ secrets.API_TOKEN }} api_key=$API_KEY password=${DB_PASSWORD} "
        "access_token=Zq8abcdefXYZ0123456789abcdefXYZ01 <REDACTED:github-token#0123abcd> <HOME>"
    )
    assert r.redact_text(text) == text
    assert r.redact_obj({"Authorization": "Bearer ${API_TOKEN}"}) == {"Authorization": "Bearer ${API_TOKEN}"}


def test_user_and_home_rules_do_not_over_redact() -> None:
    r = Redactor(home="/home/ci", user="ci")  # a short, common name is never a word to remove
    assert r.redact_text("ci passed; see /home/ci/x and /home/circle") == "ci passed; see <HOME>/x and /home/circle"
    r = Redactor(home="/home/runner", user="runner")
    assert r.redact_text("the test runner ran") == "the test runner ran"
    r = Redactor(home="/", user="zelda-q")
    assert r.redact_text("/usr/bin by zelda-q, not zelda-qq") == "/usr/bin by <USER>, not zelda-qq"


def test_trivial_known_values_are_not_redacted() -> None:
    r = Redactor(known={"env.DEBUG": "true", "env.PORT": "8080", "env.N": "123456789", "env.DIR": "/srv/data",
                        "env.URL": "http://127.0.0.1:8765/mcp", "env.SHORT": "abc12"}, home=None, user=None)
    text = "true 8080 123456789 /srv/data http://127.0.0.1:8765/mcp abc12"
    assert r.redact_text(text) == text


def test_bad_user_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"redact\.patterns\[0\]"):
        Redactor(patterns=["ACME-("])


def test_rotated_token_compares_equal_after_strip_tags() -> None:
    p1, p2 = [p for p in PLANTED if p.kind == "github-token"][:2]
    r = make_redactor()
    a, b = r.redact_text(f"t {p1.values[0]}"), r.redact_text(f"t {p2.values[0]}")
    assert a != b and strip_tags(a) == strip_tags(b)


# --- fail closed ---------------------------------------------------------------------------------


def blind_to(r: Redactor, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the scrubber loses one detector (and the rule set, which knows most shapes
    too); the checker keeps its own, separately built."""
    kept = [s for s in shapes.SHAPES if s.kind != kind]
    monkeypatch.setattr(r, "_scrubber", detectors.Engine(r._config, kept, rules=False))


def test_verify_catches_what_a_faulty_scrubber_let_through(monkeypatch: pytest.MonkeyPatch) -> None:
    gh = next(p for p in PLANTED if p.values[0].startswith("ghp_")).values[0]
    r = make_redactor()
    blind_to(r, "github-token", monkeypatch)
    events = call_events("hello", result(f"your token is {gh}"))
    scrubbed = [r.redact_event(ev) for ev in events]
    data = tape_bytes(make_header("t"), scrubbed)
    assert gh.encode() in data  # the fault is real: the scrubber missed it
    with pytest.raises(SecretLeak) as info:
        r.verify(data, "tapes/t.tape.jsonl")
    message = str(info.value)
    assert gh not in message and gh[4:20] not in message
    assert "tapes/t.tape.jsonl:3" in message and "github-token" in message and "msg.result.content" in message
    assert info.value.exit_code == 4


def test_redact_tape_writes_nothing_when_verification_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    npm = next(p for p in PLANTED if p.kind == "npm-token")
    r = make_redactor()
    blind_to(r, "npm-token", monkeypatch)
    out = tmp_path / "golden.tape.jsonl"
    with pytest.raises(SecretLeak):
        write_atomic(out, r.redact_tape(make_header("g"), call_events(npm.carrier, result("ok")), where=str(out)))
    assert not out.exists() and list(tmp_path.iterdir()) == []
    # The same tape with an intact redactor is written, read back, and holds no secret.
    good = make_redactor()
    write_atomic(out, good.redact_tape(make_header("g"), call_events(npm.carrier, result("ok"))))
    tape = read_tape(out)
    assert tape.complete and not leaks(out.read_text(encoding="utf-8"), [npm])


def test_verify_reports_decoded_leaks_and_pretty_json(monkeypatch: pytest.MonkeyPatch) -> None:
    hf = next(p for p in PLANTED if p.kind == "huggingface-token").values[0]
    r = make_redactor()
    blob = base64.b64encode(f"config: {hf}".encode()).decode()
    with pytest.raises(SecretLeak, match="huggingface-token") as info:
        r.verify(json.dumps({"report": {"detail": blob}}, indent=2), "report.json")
    assert hf not in str(info.value) and blob not in str(info.value)
    cleaned = r.redact_obj({"report": {"detail": blob}})
    r.verify(json.dumps(cleaned, indent=2), "report.json")


def test_guard_scrubs_and_verifies_text() -> None:
    gl = next(p for p in PLANTED if p.kind == "gitlab-token").values[0]
    r = make_redactor()
    assert gl not in r.guard(f"server failed: {gl}", "error message")
    assert gl not in redactor.builtin_redactor().guard(f"server failed: {gl}", "error message")
    assert r.summary() == "1 gitlab-token"


def test_garbage_b64_with_a_secret_becomes_scrubbed_text() -> None:
    ak = next(p for p in PLANTED if p.kind == "anthropic-key")
    r = make_redactor()
    ev = garbage_event("s2c", b"\xff" + ak.carrier.encode())
    out = r.redact_event(ev)
    assert "b64" not in out and out["text"].startswith("\\xff") and "<REDACTED:anthropic-key#" in out["text"]
    assert list(out) == ["kind", "dir", "text", "bytes"]
    clean = garbage_event("s2c", b"\xff plain bytes")
    assert r.redact_event(clean) == clean


def test_raw_field_is_scrubbed_and_dropped_when_it_matches_msg() -> None:
    tok = next(p for p in PLANTED if p.kind == "stripe-key").values[0]
    wire = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":' + escaped(tok) + "}]}}"
    ev = call_events("x", {}, wire=wire)[1]
    assert "raw" in ev
    out = make_redactor().redact_event(ev)
    assert tok not in dumps(out) and "raw" not in out  # the escaped form carried no other difference



def test_a_fork_compiles_nothing_and_keeps_its_own_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # ci compiles its config's Redactor once per run and gives each session a fork
    # (ci/session.py): the same detectors, found values counted per session, state apart.
    run = Redactor(known={"env.API_KEY": "kq7-Zr2m-Wx9p-Lt4v"}, patterns=[r"ACME-[A-Z0-9]{12}"], home=None, user=None)

    def compile_again(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a fork compiled its detectors again")

    monkeypatch.setattr(detectors.Engine, "__init__", compile_again)
    one, other = run.fork(), run.fork()
    text = "key kq7-Zr2m-Wx9p-Lt4v and ACME-ABCDEF123456 and " + "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    cleaned = one.redact_text(text)
    assert "kq7-Zr2m-Wx9p-Lt4v" not in cleaned and "ACME-ABCDEF123456" not in cleaned and "ghp_a1B2" not in cleaned
    assert set(one.counts) == {"env.API_KEY", "pattern", "github-token"}, one.counts
    assert other.counts == {} and run.counts == {}  # the other session's and the run's own stay apart
    assert other.redact_text("nothing secret here") == "nothing secret here" and other.counts == {}
    with pytest.raises(SecretLeak):  # a fork's checker verifies as the original's does
        other.verify("leaked kq7-Zr2m-Wx9p-Lt4v", "test output")
    # A PEM block one fork is inside of (a tape scanned line by line) is not the other's.
    one._scrubber.pem_open = True
    assert not other._scrubber.pem_open and not run.fork()._scrubber.pem_open


# --- issue 38: structure, names in every copy, what is not a secret -------------------------------


def _response(result: dict[str, Any], *, wire: str | None = None) -> dict[str, Any]:
    msg = {"jsonrpc": "2.0", "id": 3, "result": result}
    return EventBuilder().line("s2c", (wire if wire is not None else dumps(msg)).encode())


@pytest.mark.parametrize("text", [
    "GET / HTTP/1.1\nHost: api.example.com\nCookie: sid=Qx81kfz29Lr0aB; theme=dark\n",  # a `\n` before the name
    "usage:\ntotal_tokens = 12345678",
])
def test_a_golden_whose_view_holds_what_the_tape_holds_can_be_written(text: str) -> None:
    """The review view is the tape's values at their paths, JSON-escaped: checked as that (form
    "view"), a `Cookie:` line or a count under a `token` name is what the tape holds, not a leak.
    Read as plain text it failed every `--update-golden` of such a server."""
    from mcptape.tape.view import render_view

    r = make_redactor()
    event = r.redact_event(_response({"content": [{"type": "text", "text": text}],
                                      "structuredContent": {"usage": {"total_tokens": 12345678}}}))
    r.verify(tape_bytes(make_header("t"), [event]), "tape")
    view = render_view(make_header("t"), [event])
    r.verify(view, "view", form="view")
    with pytest.raises(SecretLeak):  # positive control: a token the view shows is still found in it
        r.verify(view.replace(b"usage", b"ghp_" + b"Zx9" * 12), "view", form="view")


def test_a_value_redacted_by_its_name_is_redacted_in_every_copy_of_the_message() -> None:
    phrase = "abandon ability able about above absent absorb abstract absurd abuse access accident"
    structured = {"mnemonic": phrase, "note": {"otp": 493817}}
    r = make_redactor()
    event = r.redact_event(_response({"content": [{"type": "text", "text": f"your words: {phrase}"}],
                                      "structuredContent": structured}))
    data = dumps(event)
    assert phrase not in data and "493817" not in data and "<REDACTED:otp>" in data
    assert event["msg"]["result"]["content"][0]["text"].startswith("your words: <REDACTED:mnemonic")
    r.verify(tape_bytes(make_header("t"), [event]), "tape")


def test_a_private_key_one_line_per_message_is_redacted_and_the_tape_stays_json() -> None:
    from tests.redact_corpus import key_body

    body = key_body(random.Random(SEED))
    lines = ["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----"]
    r = make_redactor()
    events = [r.redact_event(_response({"content": [{"type": "text", "text": line}]})) for line in lines]
    # ... and as content blocks of one message, and with no armour at all
    events.append(r.redact_event(_response({"content": [{"type": "text", "text": ln} for ln in lines]})))
    events.append(r.redact_event(_response({"content": [{"type": "text", "text": "\n".join(body)}]})))
    data = tape_bytes(make_header("t"), events)
    assert not any(line in data.decode() for line in body)
    r.verify(data, "tape")
    # A BEGIN line with no END in the same message: the redacted raw line is still JSON.
    wire = '{"result": {"content": [{"type": "text", "text": "-----BEGIN PRIVATE KEY-----\\n' + body[0] + '\\n"}]}, "id": 3}'
    event = make_redactor().redact_event(_response({}, wire=wire))
    assert body[0] not in dumps(event) and json.loads(event["raw"])["id"] == 3


@pytest.mark.parametrize("text", [
    '{"api_key": "YOUR_API_KEY"}', "export OPENAI_API_KEY=YOUR_API_KEY", "ghp_" + "x" * 36,
    "postgres://user:password@localhost:5432/app", '{"token": "cl100k_base"}', '{"credentials": "same-origin"}',
    "Authorization: Bearer <your-token>", '{"aws_access_key_id": "AKIAIOSFODNN7EXAMPLE"}',
    'return{$$typeof:r,key:z==null?null:""+z,children:g};C.get(L.key===null?q:L.key)||null;H={sessionId:d==null?void 0:d.sessionId}'
    ";d.credentials=\"same-origin\";function e(t){return t}" * 3,
])
def test_what_a_reader_knows_is_no_secret_is_left_as_it_is(text: str) -> None:
    r = make_redactor()
    assert r.redact_text(text) == text, r.counts
    r.verify(text, "text")


def test_code_keeps_its_real_secrets() -> None:
    """Minified code is not a key-value document, but a quoted key or a real assignment of a
    string literal that looks like a token is still one (the positive control of the test above)."""
    code = 'function f(){return 1};var a={b:1};' * 10
    for secret in ('const apiKey="Zq8kR4mW9xT2vB7n";', '{"password":"Hunter2pw9x"}'):
        r = make_redactor()
        assert "Zq8kR4mW9xT2vB7n" not in r.redact_text(code + secret + code) if "apiKey" in secret else True
        assert "Hunter2pw9x" not in r.redact_text(code + secret + code)
