"""The HTML pages, rendered in-process and parsed: what a hostile server sends stays text, the page
loads nothing and runs only its own code, hidden characters are shown, the diff names its paths.

The browser's view of the same pages (visible, clickable, no console error) is
tests/integration/test_html_browser.py's; these are the fast checks of the renderer's promises.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from mcptape.logsafe import escape_controls
from mcptape.report import html as html_report
from mcptape.report.anchors import anchor, session_anchor
from mcptape.report.html import render_pair, render_run, render_tape
from mcptape.report.html_views import SessionTapes, nesting, tape_view, tasks, timeline
from mcptape.report.json_diff import side_by_side
from mcptape.tape.format import Tape
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    RunReport,
    SessionResult,
    SurfaceChanges,
)
from tests.conftest import CALC_SERVER

_spec = importlib.util.spec_from_file_location("calc_server_fixture", CALC_SERVER)
assert _spec is not None and _spec.loader is not None
calc_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(calc_server)
HOSTILE: tuple[str, ...] = calc_server.HOSTILE_HTML


# --- tapes and reports built in memory ---------------------------------------------------------


def req(i: int, method: str, params: Any = None, step: int | None = None, direction: str = "c2s") -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    ev: dict[str, Any] = {"kind": "request", "dir": direction, "id": i, "method": method, "msg": msg}
    if step is not None:
        ev["step"] = step
    return ev


def ans(i: int, method: str, result: Any, direction: str = "s2c") -> dict[str, Any]:
    return {"kind": "response", "dir": direction, "id": i, "method": method, "msg": {"jsonrpc": "2.0", "id": i, "result": result}}


def note(method: str, params: Any) -> dict[str, Any]:
    return {"kind": "notification", "dir": "s2c", "method": method, "msg": {"jsonrpc": "2.0", "method": method, "params": params}}


def tape(events: list[dict[str, Any]], name: str = "arith", **header: Any) -> Tape:
    return Tape(header={"mcptape": "tape", "format": 2, "version": "0.1.0", "name": name, "transport": "stdio",
                        "protocol": "2025-11-25", **header},
                events=events, footer={"mcptape": "end", "events": len(events)},
                event_lines=list(range(2, len(events) + 2)))


def tools(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"tools": list(entries)}


ADD = {"name": "add", "description": "Add two numbers.",
       "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}


def calc_tape(text: str, extra_tools: tuple[dict[str, Any], ...] = ()) -> Tape:
    return tape([
        req(1, "tools/list", step=1), ans(1, "tools/list", tools(ADD, *extra_tools)),
        req(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, step=2),
        ans(2, "tools/call", {"content": [{"type": "text", "text": text}], "isError": False}),
    ])


def drifted_report(before: str, after: str, *, name: str = "arith", security: str | None = None) -> RunReport:
    call = CallRef("tools/call", "add", {"a": 2, "b": 3}, step=2)
    findings = [Finding("result", "output", "result.content[0].text", f'"{before}" → "{after}"', before, after,
                        kind="changed", golden_line=5, fresh_line=5)]
    drifts = [Drift(call, findings)]
    if security is not None:
        drifts.insert(0, Drift(CallRef("tools/list", step=1), [Finding("security", "structural", "result.tools[add].description",
                                                                         security, None, security, kind="instruction",
                                                                         golden_line=3, fresh_line=3)]))
    diff = DiffResult("structural" if security else "output", drifts, SurfaceChanges(), a="golden", b="fresh")
    sessions = [SessionResult(name, diff.verdict, diff=diff, golden=f"tapes/{name}.tape.jsonl", duration_s=0.5),
                SessionResult("quiet", "same", golden="tapes/quiet.tape.jsonl")]
    return RunReport(config="mcptape.yml", sessions=sessions)


class Page(HTMLParser):
    """What a browser would build from a page: tags with their attributes, scripts, text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def attributes(self) -> list[tuple[str, str, str]]:
        return [(tag, k, v or "") for tag, attrs in self.tags for k, v in attrs.items()]

    def csp(self) -> str:
        return next(a["content"] or "" for t, a in self.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# --- the escaper -------------------------------------------------------------------------------


def test_visible_shows_each_hidden_character_as_its_escape_in_a_named_box() -> None:
    shown = str(html_report._visible("add\u202e <b>x</b> \\u202e"))
    assert "\u202e" not in shown
    assert '<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>' in shown
    assert "&lt;b&gt;x&lt;/b&gt;" in shown
    # A server's literal backslash-u text is text, not a box: only the real character is marked.
    assert shown.endswith(" \\u202e") and shown.count("hidden-char") == 1
    plain = "just text, <and> a quote\" & more"
    assert str(html_report._visible(plain)) == "just text, &lt;and&gt; a quote&#34; &amp; more"
    # A message's body is element content only: its quotes stay quotes, its markup does not.
    assert str(html_report._visible(plain + "\u202e", in_attribute=False)) == (
        'just text, &lt;and&gt; a quote" &amp; more<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>')


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\ufeff", "\u061c",
                                  "\U000e0041", "\U000e007f", "\u00ad", "\u2028"])
def test_every_character_the_escaper_escapes_is_boxed_and_none_reaches_the_page_raw(char: str) -> None:
    # Driven by the escaper itself, so one that learns more characters (j40's: tag characters)
    # makes this page show them with no change here.
    page = render_tape(tape([req(1, "tools/call", {"name": f"x{char}y", "arguments": {"t": f"a{char}b"}}),
                             ans(1, "tools/call", {"content": [{"type": "text", "text": f"r{char}s"}]})]), path="t")
    if escape_controls(char) == char:
        return  # not hidden by the escaper's rule: shown as the character it is
    assert char not in page
    assert page.count(f"hidden-char\" title=\"U+{ord(char):04X}") >= 3


# --- hostile servers ---------------------------------------------------------------------------


def _hostile_run() -> tuple[RunReport, dict[str, SessionTapes]]:
    evil_tools = tuple({"name": n, "description": f"{n} {HOSTILE[0]}", "inputSchema": {"type": "object"}} for n in HOSTILE)
    golden = calc_tape("5")
    fresh = calc_tape(" ".join(HOSTILE), evil_tools)
    report = drifted_report("5", " ".join(HOSTILE), security=f"tool `add` description adds {HOSTILE[0]} {HOSTILE[5]}")
    s = report.sessions[0]
    s.error = HOSTILE[1]
    s.notes.append(HOSTILE[3])
    assert s.diff is not None
    s.diff.surface.added.extend(HOSTILE)
    report.orphans.append(HOSTILE[4])
    return report, {"arith": SessionTapes(golden=golden, fresh=fresh)}


def _hostile_pages() -> list[str]:
    report, tapes = _hostile_run()
    fresh = tapes["arith"].fresh
    golden = tapes["arith"].golden
    assert fresh is not None and golden is not None
    assert report.sessions[0].diff is not None
    return [render_run(report, tapes), render_tape(fresh, path=HOSTILE[2]),
            render_pair(report.sessions[0].diff, golden, fresh, golden_path=HOSTILE[0], fresh_path=HOSTILE[3])]


@pytest.mark.parametrize("which", ["run", "tape", "pair"])
def test_a_hostile_servers_text_is_only_ever_text(which: str) -> None:
    page = _hostile_pages()[["run", "tape", "pair"].index(which)]
    parsed = Page(page)
    # The page's one script and one style are ours, byte for byte.
    assert parsed.scripts == [(html_report.TEMPLATES / "report.js").read_text(encoding="utf-8")]
    assert parsed.styles == [(html_report.TEMPLATES / "report.css").read_text(encoding="utf-8")]
    tags = {tag for tag, _ in parsed.tags}
    assert not tags & {"img", "svg", "iframe", "object", "embed", "base", "form"} - {"form", "svg"}
    assert [a for a in parsed.attributes() if a[1].startswith("on")] == []
    assert [a for a in parsed.attributes() if "javascript:" in a[2].lower()] == []
    # No server text is ever put in an attribute: an id (and a link to one) is html_views.anchor's
    # spelling of a name, anything else holds none of the hostile strings' telltales.
    for tag, key, value in parsed.attributes():
        if key in ("id", "href", "aria-labelledby"):
            assert re.fullmatch(r"#?[A-Za-z0-9_.~-]+", value) or (tag, value) == ("link", "data:,"), (tag, key, value)
        else:
            assert "pwned" not in value and "<" not in value, (tag, key, value)
    # ... and it is all there as text, for a reviewer to read.
    text = "".join(parsed.text)
    for hostile in HOSTILE[:5]:
        assert hostile in text or json.dumps(hostile)[1:-1] in text, hostile  # as written, or inside a JSON string
    # The same page without the escaping would carry the markup as markup: this is what it prevents.
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "<script>window" not in page
    for hidden in ("\u202e", "\u2066", "\u200b", "\ufeff"):
        assert hidden not in page


def test_the_policy_admits_the_pages_own_style_and_script_and_nothing_else() -> None:
    report, tapes = _hostile_run()
    page = render_run(report, tapes)
    parsed = Page(page)
    policy = parsed.csp()
    directives = dict((d.split(" ", 1) + [""])[:2] for d in (part.strip() for part in policy.split(";")) if d)
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == sha256(parsed.scripts[0])
    assert directives["style-src"] == sha256(parsed.styles[0])
    assert directives["img-src"] == "data:" and directives["base-uri"] == "'none'"
    assert "unsafe" not in policy and "http" not in policy and "nonce" not in policy
    # It comes before anything it governs.
    assert page.index("Content-Security-Policy") < page.index("<style>") < page.index("<script>")
    # Nothing is loaded from anywhere: no src, no stylesheet, no url() or @import in the style.
    assert [a for a in parsed.attributes() if a[1] == "src"] == []
    assert [a for a in parsed.tags if a[0] == "link" and a[1].get("rel") != "icon"] == []
    assert "url(" not in parsed.styles[0] and "@import" not in parsed.styles[0]
    assert "fetch(" not in parsed.scripts[0] and "XMLHttpRequest" not in parsed.scripts[0]


def test_the_same_report_gives_the_same_bytes() -> None:
    report, tapes = _hostile_run()
    assert render_run(report, tapes) == render_run(report, tapes)


# --- what a reviewer reads first ---------------------------------------------------------------


def test_the_verdict_then_the_headline_then_the_first_drift_side_by_side() -> None:
    report = drifted_report("5", "6")
    page = render_run(report, {"arith": SessionTapes(golden=calc_tape("5"), fresh=calc_tape("6"))})
    verdict = page.index('<h1 id="verdict">output drift</h1>')
    headline = page.index("now returns <code>6</code>, was <code>5</code>")
    first = page.index("First drifted call of the run")
    table = page.index('<table class="sbs">')
    assert verdict < headline < first < table
    row = re.search(r'<tr class="c-changed"><td class="path">(.*?)</td>(.*?)</tr>', page, re.S)
    assert row is not None and row.group(1) == "result.content[0].text"
    assert "&#34;5&#34;" in row.group(2) and "&#34;6&#34;" in row.group(2)
    assert 'id="session-arith"' in page and 'id="session-quiet"' in page and 'href="#session-arith"' in page
    # A session whose tapes are the same says so, and a same run is green with no first drift.
    same = render_run(RunReport(config="mcptape.yml", sessions=[SessionResult("quiet", "same")]))
    assert '<h1 id="verdict">no drift</h1>' in same and "First drifted call" not in same


def test_without_the_tapes_the_page_says_so_and_still_shows_the_findings() -> None:
    report = drifted_report("5", "6")
    missing = "The fresh tape was not kept (`mcptape ci --out-dir DIR` keeps it)"
    page = render_run(report, {"arith": SessionTapes(missing=(missing,))})
    assert "No side-by-side view: the tapes were not loaded." in page
    assert "mcptape ci --out-dir DIR" in page and "result.content[0].text" in page


# --- the side-by-side diff ---------------------------------------------------------------------


def test_lists_of_named_items_line_up_by_name_and_unchanged_items_fold() -> None:
    divide = {"name": "divide", "description": "Divide.", "inputSchema": {"type": "object"}}
    multiply = {"name": "multiply", "description": "Multiply.", "inputSchema": {"type": "object"}}
    rows = side_by_side({"tools": [ADD, divide]}, {"tools": [multiply, ADD, divide]}, path="result")
    heads = [(r.change, r.path) for r in rows if r.head]
    assert heads == [("added", "result.tools[multiply]")]
    folded = [r for r in rows if r.left is not None and r.left.whole is not None]
    assert [r.left.text for r in folded if r.left] == ['{"name": "add", … 3 keys}', '{"name": "divide", … 3 keys}']
    # Named by name where the lists already line up, too.
    changed = dict(ADD, description="Add.")
    rows = side_by_side({"tools": [ADD]}, {"tools": [changed]})
    assert [r.path for r in rows if r.head] == ["tools[add].description"]


def test_a_long_string_shows_where_it_first_differs() -> None:
    before, after = "x" * 5000 + "old" + "y" * 100, "x" * 5000 + "new" + "y" * 100
    rows = side_by_side({"text": before}, {"text": after})
    changed = next(r for r in rows if r.change == "changed")
    assert changed.left is not None and changed.right is not None
    assert changed.left.note == "from character 4981 of 5103" and '"old' not in changed.left.text[:5]
    assert "old" in changed.left.text and "new" in changed.right.text
    assert changed.left.whole == before
    assert side_by_side(1, 1)[0].change == "same" and side_by_side(1, 2)[0].change == "changed"


def test_a_huge_value_is_cut_and_counted() -> None:
    rows = side_by_side({"k": list(range(10))}, {"k": list(range(1, 11))}, max_rows=5)
    assert len(rows) == 6 and rows[-1].change == "more"
    assert rows[-1].left is not None and rows[-1].left.text == "… 9 more rows"


# --- the tape viewer ---------------------------------------------------------------------------


def _asking_tape() -> Tape:
    return tape([
        req(1, "tools/call", {"name": "book", "arguments": {}, "_meta": {"progressToken": "p1"}}),
        note("notifications/progress", {"progressToken": "p1", "progress": 1}),
        req(7, "sampling/createMessage", {"messages": []}, direction="s2c"),
        ans(7, "sampling/createMessage", {"role": "assistant"}, direction="c2s"),
        ans(1, "tools/call", {"task": {"taskId": "t-1", "status": "working"}}),
        req(2, "tasks/get", {"taskId": "t-1"}),
        ans(2, "tasks/get", {"taskId": "t-1", "status": "input_required"}),
        req(3, "tasks/get", {"taskId": "t-1"}),
        ans(3, "tasks/get", {"taskId": "t-1", "status": "completed"}),
        note("notifications/message", {"level": "info", "data": "idle"}),
    ])


def test_server_requests_and_notifications_nest_under_the_call_they_came_in() -> None:
    t = _asking_tape()
    assert nesting(t) == {1: 0, 2: 0, 3: 0}  # progress, the sampling request and the client's answer to it
    view = tape_view(t)
    assert [e.parent for e in view.events[:5]] == [None, 1, 1, 1, None]
    assert view.events[9].parent is None  # a log line with no call open belongs to none
    line = timeline(t, None, {})
    assert [(c.label, c.nested, c.outcome) for c in line.calls][:1] == [("tools/call book", 3, "ok")]


def test_a_tasks_status_path_is_read_from_its_answers() -> None:
    found = tasks(_asking_tape())
    assert [(t.task_id, t.call, t.label, t.statuses) for t in found] == [
        ("t-1", 1, "tools/call book", ["working", "input_required", "completed"])]


def test_the_filters_carry_indices_not_server_text() -> None:
    t = tape([req(1, "tools/call", {"name": HOSTILE[0], "arguments": {}}), ans(1, "tools/call", {"content": []})])
    t.events[0]["dir"] = '"><script>x'  # a hand-edited tape
    page = render_tape(t, path="t")
    assert 'data-dir="other"' in page
    assert re.search(r'<option value="1">&lt;script&gt;window.__pwned=1&lt;/script&gt;</option>', page)


def test_a_timed_tape_shows_each_answers_latency() -> None:
    t = calc_tape("5")
    t.footer = {"mcptape": "end", "events": 4, "timing": {"unit": "ms", "at": [0.0, 1.5, 2.0, 14.0]}}
    view = tape_view(t)
    assert [e.latency_ms for e in view.events] == [None, 1.5, None, 12.0]
    line = timeline(t, [0.0, 1.5, 2.0, 14.0], {(2, "tools/call add"): "session-arith-drift-1"})
    assert [(c.latency_ms, round(c.share, 3), c.drifted) for c in line.calls] == [
        (1.5, 0.125, None), (12.0, 1.0, "session-arith-drift-1")]
    assert line.total_ms == 13.5


def test_anchors_are_distinct_and_plain_names_stay_readable() -> None:
    assert session_anchor("arith-2.v1") == "session-arith-2.v1"
    names = ["a b", "a_20b", "a/b", "a\u202eb", "<x>"]
    ids = [session_anchor(n) for n in names]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_.~-]+", i) for i in ids)
    assert anchor("surface", "calc", "tool", "add") == "surface-calc-tool-add"


def test_size_per_session_stays_small(tmp_path: Path) -> None:
    # The figure docs/performance.md gives: 100 drifted sessions with their tapes.
    report = RunReport(config="mcptape.yml", sessions=[])
    tapes = {}
    for k in range(100):
        one = drifted_report("5", "6", name=f"s{k:03d}").sessions[0]
        report.sessions.append(one)
        tapes[one.name] = SessionTapes(golden=calc_tape("5"), fresh=calc_tape("6"))
    page = render_run(report, tapes)
    per_session = len(page.encode()) / 100
    assert per_session < 12_000, per_session  # 4.7 kB on this data when written


def test_a_megabyte_description_is_folded_not_poured_onto_the_page() -> None:
    huge = dict(ADD, description="Add two numbers. " + "A" * (1 << 20) + HOSTILE[0])
    golden, fresh = calc_tape("5"), calc_tape("5", ())
    fresh.events[1] = ans(1, "tools/list", tools(huge))
    finding = Finding("security", "structural", "result.tools[add].description", "tool `add` description grew", None,
                      huge["description"], kind="oversize", golden_line=3, fresh_line=3)
    diff = DiffResult("structural", [Drift(CallRef("tools/list", step=1), [finding])], SurfaceChanges(cosmetic=["add"]))
    report = RunReport(config="mcptape.yml", sessions=[SessionResult("arith", "structural", diff=diff)])
    page = render_run(report, {"arith": SessionTapes(golden=golden, fresh=fresh)})
    # Each showing of it is folded (json_diff.FOLDED_CHARS) or clipped, and says how long it is.
    assert len(page) < 200_000
    assert "(1048626 characters)" in page and "1044626 more characters" in page
    assert "<script>window" not in page


# --- the doors: show --html, diff --html, the refusals --------------------------------------------


def _write_tape(path: Path, text: str) -> Path:
    from mcptape.tape.format import tape_bytes

    t = calc_tape(text)
    path.write_bytes(tape_bytes(t.header, t.events))
    return path


def test_show_and_diff_write_their_pages_and_refuse_a_page_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mcptape import cli

    golden, fresh = _write_tape(tmp_path / "a.tape.jsonl", "5"), _write_tape(tmp_path / "b.tape.jsonl", "6")
    assert cli.main(["show", f"--html={tmp_path / 'show.html'}", str(golden)]) == 0
    assert capsys.readouterr().out == ""  # the page instead of the table
    assert 'id="tape-4"' in (tmp_path / "show.html").read_text(encoding="utf-8")
    assert cli.main(["diff", f"--html={tmp_path / 'pair.html'}", str(golden), str(fresh)]) == 1
    page = (tmp_path / "pair.html").read_text(encoding="utf-8")
    assert '<h1 id="verdict">output drift</h1>' in page and 'id="a-events"' in page and 'id="b-events"' in page
    assert cli.main(["diff", f"--html={tmp_path / 'same.html'}", str(golden), str(golden)]) == 0
    assert '<h1 id="verdict">no drift</h1>' in (tmp_path / "same.html").read_text(encoding="utf-8")
    for argv in (["show", "--html", str(golden)], ["diff", "--html", str(golden), str(fresh)],
                 ["ci", "--html"], ["merge", "report.json", "--html"]):
        assert cli.main(argv) == 3
        assert "--html alone would write the page to stdout" in capsys.readouterr().err
    assert not (tmp_path / "-").exists()
    assert cli.main(["ci", "-c", str(tmp_path / "none.yml"), "--repeat", "3", f"--html={tmp_path / 'r.html'}"]) == 3
    assert "--html does not work in --repeat" in capsys.readouterr().err


def test_a_secret_in_a_tape_keeps_its_page_from_being_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mcptape import cli
    from tests.redact_corpus import corpus

    token = next(p for p in corpus(seed=44) if p.kind == "github-token").values[0]
    tape_path = _write_tape(tmp_path / "leaky.tape.jsonl", f"token {token}")
    target = tmp_path / "leaky.html"
    assert cli.main(["show", f"--html={target}", str(tape_path)]) == 4
    assert not target.exists()
    err = capsys.readouterr().err
    assert "secret" in err and token not in err
    assert cli.main(["diff", f"--html={target}", str(_write_tape(tmp_path / "ok.tape.jsonl", "5")), str(tape_path)]) == 4
    assert not target.exists()
