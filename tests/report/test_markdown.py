"""The job summary and PR comment render tape content harmlessly, on GitHub's own markdown dialect.

Renders with cmarkgfm (GitHub-flavoured, raw HTML allowed as GitHub allows its safe subset) and
checks the structure a hostile tool result would try to break: one marker, balanced <details>,
no live @mention, no tag from the tape, size caps, and the fenced text coming back intact.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from mcptape.report.markdown import (
    COMMENT_LIMIT_CHARS,
    SUMMARY_LIMIT_BYTES,
    Context,
    in_words,
    render_comment,
    render_summary,
)
from mcptape.report.md_safe import code_span, comment_marker, fenced
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    RunReport,
    SessionResult,
    SurfaceChanges,
)

MARKER = comment_marker("mcptape.yml")
HOSTILE = (
    "x ``` y ```` z\n```\n</details>\n</summary>\n<!-- mcptape:mcptape.yml -->\n"
    "cc @acme/security-team and @octocat <img src=x onerror=alert(1)><script>alert(2)</script>\n"
    "| a | b |\n"
)
HUGE = "B" * 200_000
OUR_TAGS = {"h2", "h3", "p", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "details", "summary",
            "b", "em", "strong", "ul", "li", "br", "h4", "sub", "a"}


def gfm(markdown: str) -> str:
    # UNSAFE keeps raw HTML as GitHub does for its allow-list (details, summary, b), so a forged
    # tag would show up here instead of being silently dropped by the renderer.
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class Structure(HTMLParser):
    """Tags seen, <details> balance, and text that sits outside code (where mentions are live)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.stack: list[str] = []
        self.depth_errors = 0
        self.live_text: list[str] = []
        self.code_text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ("br", "img", "hr", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.depth_errors += 1
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        (self.code_text if {"code", "pre"} & set(self.stack) else self.live_text).append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def structure(markdown: str) -> Structure:
    s = Structure()
    s.feed(gfm(markdown))
    s.close()
    return s


def hostile_report(n_sessions: int = 1) -> RunReport:
    sessions = []
    for i in range(n_sessions):
        drift = Drift(
            CallRef("tools/call", "echo", {"text": HOSTILE}, step=2),
            [
                Finding("result", "output", "result.content[0].text", f"text changed {i}", HOSTILE + HUGE, HOSTILE + "@octocat"),
                Finding("result", "output", "result.content[1].text", HOSTILE, "`", "````", golden_line=9),
            ],
        )
        diff = DiffResult("structural", drifts=[drift], surface=SurfaceChanges(added=["e`v|il</details>"], removed=["@octocat"]))
        sessions.append(SessionResult(f"echo{i}", "structural", diff=diff, golden=f"tapes/echo{i}.tape.jsonl"))
    sessions.append(SessionResult("crash", "error", error="server said: </details> @octocat <!-- mcptape:x -->"))
    return RunReport(config="mcptape.yml", sessions=sessions)


def live_mentions(s: Structure) -> list[str]:
    # GitHub links @name where @ follows a non-word character; a zero-width joiner after @ breaks it.
    return re.findall(r"(?<![\w\u200d])@[A-Za-z0-9][\w/-]*", "".join(s.live_text))


@pytest.mark.parametrize("render", ["comment", "summary"])
def test_hostile_tool_result_renders_harmlessly(render: str) -> None:
    report = hostile_report()
    md = render_comment(report, MARKER) if render == "comment" else render_summary(report)
    s = structure(md)

    # Exactly one marker, ours, on the first line; the tape's copy is defanged (not an HTML comment).
    assert md.count("<!-- mcptape:") == (1 if render == "comment" else 0)
    if render == "comment":
        assert md.split("\n", 1)[0] == MARKER
        assert s.comments == [" mcptape:mcptape.yml "]
    else:
        assert s.comments == []
    # Only our tags; <details> balanced and one per drifted or failed session; nothing closed early.
    assert set(s.tags) <= OUR_TAGS, set(s.tags) - OUR_TAGS
    assert s.depth_errors == 0 and s.stack == []
    # one per drifted or failed session, how to accept, and (in the comment) the tool surface
    assert s.tags.count("details") == 2 + 1 + (render == "comment")
    assert s.tags.count("script") == 0 and s.tags.count("img") == 0
    # No live mention anywhere outside code; the tape's mentions are still visible, as code.
    assert live_mentions(s) == []
    assert "@octocat" in "".join(s.code_text)
    # The hostile text comes back intact inside the fenced diff (backticks and all).
    code = "".join(s.code_text)
    assert "x ``` y ```` z" in code and "<script>alert(2)</script>" in code
    assert "more characters not shown" in code  # the 200 KB value is clipped, with a note


def test_comment_size_is_capped_with_a_note_even_for_many_huge_sessions() -> None:
    md = render_comment(hostile_report(n_sessions=120), MARKER)
    assert len(md.encode("utf-16-le")) // 2 < 65_536
    assert len(md) <= COMMENT_LIMIT_CHARS
    assert "cut to stay under GitHub's size limit" in md
    s = structure(md)
    assert s.depth_errors == 0 and s.stack == [] and live_mentions(s) == []
    assert md.split("\n", 1)[0] == MARKER and md.count("<!-- mcptape:") == 1
    # What is cut points somewhere a reviewer can reach: the run's summary and its artifact.
    ctx = Context(run_url="https://github.com/acme/calc/actions/runs/7", artifact="mcptape-gate-1-x")
    linked = render_comment(hostile_report(n_sessions=120), MARKER, context=ctx)
    assert len(linked.encode("utf-16-le")) // 2 < 65_536
    assert re.search(r"_\d+ more sections cut to stay under GitHub's size limit: see the job summary of the "
                     r"\[workflow run\]\(https://github.com/acme/calc/actions/runs/7\) and the JSON report in its "
                     r"artifact ` mcptape-gate-1-x `\._", linked)


def test_summary_stays_under_one_mebibyte_and_says_so_when_cut() -> None:
    md = render_summary(hostile_report(n_sessions=400))
    assert len(md.encode("utf-8")) <= SUMMARY_LIMIT_BYTES < 1024 * 1024
    assert "cut to stay under GitHub's size limit" in md
    s = structure(md)
    assert s.depth_errors == 0 and s.stack == []


def test_headline_says_what_changes_for_a_client_once_and_how_to_accept() -> None:
    drift = Drift(
        CallRef("tools/call", "add", {"a": 2, "b": 3}, step=3),
        [Finding("result", "output", "result.content[0].text", '"5" → "6"', "5", "6", kind="changed", golden_line=7)],
    )
    report = RunReport(
        config="mcptape.yml",
        sessions=[
            SessionResult("arith", "output", diff=DiffResult("output", drifts=[drift]), golden="tapes/arith.tape.jsonl"),
            SessionResult("other", "same", diff=DiffResult("same")),
        ],
    )
    ctx = Context(config_path="ci/mcptape.yml", run_dir="ci", config_arg="mcptape.yml")
    md = render_comment(report, MARKER, context=ctx)
    html = gfm(md)
    assert "<h3>mcptape: 🟡 output drift · <code>ci/mcptape.yml</code></h3>" in html
    assert "<strong><code>add(a=2, b=3)</code> now returns <code>6</code>, was <code>5</code>.</strong>" in html
    assert html.count("now returns") == 1  # said once: the session's detail does not repeat it in words
    assert "2 sessions, 1 drifted, 1 unchanged" in md
    assert "(cd ci && mcptape ci -c mcptape.yml --update-golden)\ngit add ci/tapes/\n" in md
    assert "<td><code>other</code></td>" not in html  # the comment lists only what needs a look
    assert "Golden tape: <code>ci/tapes/arith.tape.jsonl:7</code>" in html  # no repository known: no link


def test_clean_run_is_the_green_form() -> None:
    report = RunReport(config="mcptape.yml", sessions=[SessionResult("a", "same"), SessionResult("b", "same")])
    md = render_comment(report, MARKER)
    assert md == (f"{MARKER}\n\n### mcptape: ✅ no drift · ` mcptape.yml `\n\nAll 2 sessions of ` mcptape.yml ` match their golden tapes."
                  "\n\n<sub>2 sessions, 2 unchanged</sub>\n")
    assert "update-golden" not in md and "<details>" not in md


def test_surface_table_lists_each_change_once() -> None:
    surface = SurfaceChanges(added=["multiply"], removed=["divide"], breaking=["add"], compatible=["sub"], cosmetic=["neg"])
    diff = DiffResult("structural", drifts=[Drift(None, [Finding("surface", "structural", "", "tool `divide` removed")])],
                      surface=surface)
    report = RunReport(config="m.yml", sessions=[SessionResult("s1", "structural", diff=diff), SessionResult("s2", "structural", diff=diff)])
    html = gfm(render_summary(report))
    for label, name in (("Added", "multiply"), ("Removed", "divide"), ("Breaking", "add"), ("Compatible", "sub"), ("Cosmetic", "neg")):
        assert f"<td>{label}</td>\n<td><code>{name}</code></td>" in html
    assert html.count("<td><code>multiply</code></td>") == 1


@pytest.mark.parametrize("value", ["`", "``a``", "a|b", "` x `", "<!-- mcptape:k -->", "@org/team"])
def test_code_span_round_trips_inside_a_table(value: str) -> None:
    html = gfm(f"| h |\n|---|\n| {code_span(value, table=True)} |\n")
    s = Structure()
    s.feed(html)
    shown = "".join(s.code_text).replace("\u200b", "")
    assert shown == value
    assert s.tags.count("td") == 1


def test_fence_is_longer_than_any_backtick_run() -> None:
    text = "a\n````\n`````x\nb"
    block = fenced(text)
    assert block.startswith("``````\n") and block.endswith("\n``````")
    s = Structure()
    s.feed(gfm(block))
    assert "".join(s.code_text) == text + "\n"


def test_marker_must_be_well_formed() -> None:
    with pytest.raises(ValueError):
        render_comment(RunReport(config="m.yml"), "<!-- mcptape:a --> <b>hi</b>")
    assert comment_marker("dir with space/mcptape.yml") == "<!-- mcptape:dir-with-space/mcptape.yml -->"


# Characters that change what a reader sees without being seen: bidi overrides and isolates
# (a tool `add‮` whose name reads as another), zero-width ones, and terminal controls.
INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\x1b", "\x9b", "\x07"]


@pytest.mark.parametrize("render", ["comment", "summary"])
def test_bidi_and_zero_width_characters_in_names_and_values_are_shown_escaped(render: str) -> None:
    names = [f"add{ch}x" for ch in INVISIBLE]
    drift = Drift(CallRef("tools/call", "add\u202egnp.exe", {"text": "a\u200bb"}, step=1),
                  [Finding("result", "output", "result.content[0].text", "text \u2066changed\u2069", "pay\u202eload",
                           "\ufeffvalue\x1b[2J")])
    diff = DiffResult("structural", drifts=[drift], surface=SurfaceChanges(added=names, removed=["zero\u200bwidth"]))
    report = RunReport(config="mcptape.yml", sessions=[
        SessionResult("se\u202ession", "structural", diff=diff, golden="tapes/s.tape.jsonl"),
        SessionResult("crash", "error", error="server said \u202ereversed\x1b]0;title\x07"),
    ])
    md = render_comment(report, MARKER) if render == "comment" else render_summary(report)
    html = gfm(md)
    # Our own zero-width marks (a joiner after `@`, a space in `<!--`) are the only ones that may
    # remain; none of the tape's invisible characters reaches the page.
    for ch in INVISIBLE:
        if ch in ("\u200b", "\u200d"):
            continue
        assert ch not in html, repr(ch)
    assert "add\u200bx" not in html and "zero\u200bwidth" not in html and "add\u200dx" not in html
    # They are shown, escaped, where they were.
    for escaped in ("add\\u202ex", "add\\u2066x", "zero\\u200bwidth", "add\\ufeffx", "add\\x1bx"):
        assert escaped in html, escaped
    assert "se\\u202ession" in html and "add\\u202egnp.exe" in html and "\\x1b[2J" in html
    if render == "summary":
        assert "server said \\u202ereversed\\x1b]0;title\\x07" in html
    # A positive control: plain names are shown as they are.
    assert "mcptape.yml" in html


def test_150_sessions_sharing_a_cause_are_one_headline_with_the_names_capped() -> None:
    shared = Drift(CallRef("tools/list", step=1), [
        Finding("schema", "structural", "result.tools[add].inputSchema.properties.c", "tool `add`: required property `c` added",
                None, {"type": "number"}, kind="breaking", golden_line=6)])
    own = [Drift(CallRef("tools/call", "echo", {"text": f"t{i}"}, step=2),
                 [Finding("result", "output", "result.content[0].text", "changed", f"t{i}", f"T{i}", kind="changed")])
           for i in range(30)]
    sessions = [SessionResult(f"s{i:03}", "structural", diff=DiffResult("structural", drifts=[shared]),
                              golden=f"tapes/s{i:03}.tape.jsonl") for i in range(120)]
    sessions += [SessionResult(f"o{i:03}", "output", diff=DiffResult("output", drifts=[d]), golden=f"tapes/o{i:03}.tape.jsonl")
                 for i, d in enumerate(own)]
    report = RunReport(config="mcptape.yml", sessions=sessions)
    md = render_comment(report, MARKER)
    text = "".join(structure(md).live_text)
    assert len(md.encode("utf-16-le")) // 2 < 65_536
    assert md.count("now requires") == 1  # the shared cause, said once for 120 sessions
    assert "and 108 more (see the job summary)" in md  # 12 names shown, the rest counted, pointing on
    assert "… 21 more changes: see the job summary" in md  # 9 further causes listed, then counted
    assert "150 sessions, 150 drifted, 0 unchanged" in text
    summary = render_summary(report)
    assert "and 108 more" not in summary and summary.count("` s119 `") >= 2  # the summary has room: all named


ADD = CallRef("tools/call", "add", {"a": 2, "b": 3}, step=1)
DIVIDE = CallRef("tools/call", "divide", {"a": 1, "b": 0}, step=2)
LIST = CallRef("tools/list", step=1)


# The headline findings `mcptape ci` reports for the calc fixture server's drift variants (copied
# from real runs), and what a reviewer reads for each.
@pytest.mark.parametrize(("drift", "words"), [
    (Drift(ADD, [Finding("result", "output", "result.content[0].text", '"5" → "6"', "5", "6", kind="changed")]),
     "add(a=2, b=3) now returns 6, was 5"),
    (Drift(LIST, [Finding("schema", "structural", "result.tools[add].inputSchema.properties.c",
                          "tool `add`: required property `c` added", None, {"type": "number"}, kind="breaking")]),
     "add now requires c: calls without it break"),
    (Drift(LIST, [Finding("schema", "output", "result.tools[add].inputSchema.properties.c",
                          "tool `add`: optional property `c` added", None, {"type": "number"}, kind="compatible")]),
     "add accepts a new optional c: existing calls keep working"),
    (Drift(LIST, [Finding("surface", "structural", "result.tools[divide]", "tool `divide` removed",
                          {"name": "divide"}, None, kind="removed")]),
     "tool divide is gone: clients that use it break"),
    (Drift(LIST, [Finding("surface", "structural", "result.tools[multiply]", "tool `multiply` added",
                          None, {"name": "multiply"}, kind="added")]),
     "new tool multiply: clients see it when they list"),
    (Drift(ADD, [Finding("error", "structural", "", 'result → error -32603 "add is broken"',
                         {"content": []}, {"code": -32603, "message": "add is broken"}, kind="result_to_error")]),
     "add(a=2, b=3) now fails with -32603 add is broken, where it returned a result"),
    (Drift(DIVIDE, [Finding("error", "structural", "error.code", "-32602 → -32000", -32602, -32000, kind="code")]),
     "divide(a=1, b=0) now fails with error code -32000, was -32602"),
    (Drift(DIVIDE, [Finding("error", "output", "error.message", '"Division by zero" → "Cannot divide by zero"',
                            "Division by zero", "Cannot divide by zero", kind="message")]),
     "divide(a=1, b=0) now fails with Cannot divide by zero, was Division by zero"),
    (Drift(LIST, [Finding("schema", "output", "result.tools[add].description",
                          'tool `add`: description "Add two numbers." → "Return the sum of two numbers."',
                          "Add two numbers.", "Return the sum of two numbers.", kind="cosmetic")]),
     "the description of tool add is now Return the sum of two numbers., was Add two numbers. (cosmetic)"),
])
def test_each_kind_of_drift_reads_as_what_it_changes_for_a_client(drift: Drift, words: str) -> None:
    html = gfm(in_words(drift))
    assert re.sub(r"<[^>]+>", "", html).strip() == words
    # Names and values come from the server: each sits in a code span, never in our words.
    s = structure(in_words(drift))
    assert "".join(s.live_text).count("add") + "".join(s.live_text).count("divide") == 0
