"""One rendered PR comment and job summary per verdict, kept as files so a layout change is a reviewed diff.

The reports mirror what `mcptape ci` reports for the bundled example (fixtures/example) with the
calc fixture server's variants (`changed_result`: `add` answers 6; `required_param`: `add` gains
a required `c`), a server that cannot start, and a secret that survived redaction. Each is
rendered with a fixed GitHub context and compared with tests/report/rendered/*.md; then rendered to HTML
with cmarkgfm (GitHub's dialect) and checked the way a reviewer reads it: one headline, said once;
every <details> collapsed and balanced; every link well formed and pointing where it should; no
line in a code block wider than the comment column.
Regenerate after an intended change with MCPTAPE_UPDATE_RENDERED=1 and review the diff.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from mcptape.report.markdown import WRAP_COLUMNS, Context, render_comment, render_summary
from mcptape.report.md_safe import comment_marker
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    RunReport,
    SessionResult,
    SurfaceChanges,
)

RENDERED = Path(__file__).parent / "rendered"
HEAD = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
CONTEXT = Context(
    config_path="fixtures/example/mcptape.yml",
    run_dir="fixtures/example",
    config_arg="mcptape.yml",
    blob_base=f"https://github.com/acme/calc/blob/{HEAD}",
    commit=HEAD,
    commit_url=f"https://github.com/acme/calc/commit/{HEAD}",
    run_url="https://github.com/acme/calc/actions/runs/9001",
    action_repository="mcptape/action",
    action_ref="v1",
    artifact="mcptape-gate-1-Ab12Cd34",
)
MARKER = comment_marker("fixtures/example/mcptape.yml")
GOLDEN = {"surface": "tapes/surface.tape.jsonl", "arithmetic": "tapes/arithmetic.tape.jsonl",
          "resources-and-prompts": "tapes/resources-and-prompts.tape.jsonl"}
ADD_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}


def _same(name: str) -> SessionResult:
    return SessionResult(name, "same", diff=DiffResult("same"), golden=GOLDEN[name])


def _required_c() -> Drift:
    return Drift(CallRef("tools/list", step=1), [
        Finding("schema", "structural", "result.tools[add].inputSchema.properties.c", "tool `add`: required property `c` added",
                None, {"type": "number"}, kind="breaking", golden_line=6)])


def report_for(verdict: str) -> RunReport:
    if verdict == "same":
        sessions = [_same(n) for n in GOLDEN]
    elif verdict == "output":
        drift = Drift(CallRef("tools/call", "add", {"a": 2, "b": 3}, step=1), [
            Finding("result", "output", "result.content[0].text", '"5" → "6"', "5", "6", kind="changed", golden_line=8)])
        sessions = [_same("surface"), SessionResult("arithmetic", "output", diff=DiffResult("output", drifts=[drift]),
                                                    golden=GOLDEN["arithmetic"]), _same("resources-and-prompts")]
    elif verdict == "structural":
        later = Drift(CallRef("tools/call", "add", {"a": 2, "b": 3}, step=1), [
            Finding("schema", "structural", "inputSchema", "tool `add` no longer accepts arguments its golden schema "
                    "accepted: 'c' is a required property (rule `required` at arguments)", ADD_SCHEMA,
                    {**ADD_SCHEMA, "properties": {**ADD_SCHEMA["properties"], "c": {"type": "number"}},
                     "required": ["a", "b", "c"]}, kind="breaking")])
        surface = SurfaceChanges(breaking=["add"])
        sessions = [
            SessionResult("surface", "structural", diff=DiffResult("structural", drifts=[_required_c()], surface=surface),
                          golden=GOLDEN["surface"]),
            SessionResult("arithmetic", "structural", diff=DiffResult("structural", drifts=[_required_c(), later],
                                                                      surface=surface), golden=GOLDEN["arithmetic"]),
            _same("resources-and-prompts"),
        ]
    elif verdict == "error":
        sessions = [_same("surface"), SessionResult(
            "arithmetic", "error", golden=GOLDEN["arithmetic"],
            error="server calc exited with code 1 before answering initialize; its last stderr line: "
                  "ModuleNotFoundError: No module named 'calc_backend'"), _same("resources-and-prompts")]
    elif verdict == "secret":
        sessions = [_same("surface"), SessionResult(
            "arithmetic", "secret", golden=GOLDEN["arithmetic"],
            error="a secret survived redaction in the fresh tape of session arithmetic (an API key at "
                  "result.content[0].text): nothing was written; add a `redact.patterns` rule for it"),
            _same("resources-and-prompts")]
    else:
        raise ValueError(verdict)
    return RunReport(config="mcptape.yml", sessions=sessions)


VERDICTS = ["same", "output", "structural", "error", "secret"]


def rendered(kind: str, verdict: str) -> str:
    report = report_for(verdict)
    if kind == "comment":
        return render_comment(report, MARKER, context=CONTEXT)
    return render_summary(report, context=CONTEXT)


def gfm(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class Page(HTMLParser):
    """What a reader meets: headings, <details> (and whether any is open), links, code blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[str] = []
        self.details_open: list[bool] = []
        self.depth = 0
        self.balance_errors = 0
        self.links: list[str] = []
        self.pre: list[str] = []
        self._heading: list[str] | None = None
        self._pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "details":
            self.details_open.append(any(k == "open" for k, _ in attrs))
            self.depth += 1
        elif tag in ("h1", "h2", "h3", "h4"):
            self._heading = []
        elif tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.depth -= 1
            self.balance_errors += self.depth < 0
        elif tag in ("h1", "h2", "h3", "h4") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag == "pre" and self._pre is not None:
            self.pre.append("".join(self._pre))
            self._pre = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        if self._pre is not None:
            self._pre.append(data)


def page(markdown: str) -> Page:
    p = Page()
    p.feed(gfm(markdown))
    p.close()
    return p


@pytest.mark.parametrize("kind", ["comment", "summary"])
@pytest.mark.parametrize("verdict", VERDICTS)
def test_rendering_matches_the_reviewed_fixture(kind: str, verdict: str) -> None:
    path = RENDERED / f"{kind}-{verdict}.md"
    text = rendered(kind, verdict)
    if os.environ.get("MCPTAPE_UPDATE_RENDERED") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path.name} changed: review it, then MCPTAPE_UPDATE_RENDERED=1"


HEADLINE = {
    "output": "add(a=2, b=3) now returns 6, was 5.",
    "structural": "add now requires c: calls without it break.",
}


@pytest.mark.parametrize("kind", ["comment", "summary"])
@pytest.mark.parametrize("verdict", VERDICTS)
def test_one_headline_collapsed_details_and_well_formed_links(kind: str, verdict: str) -> None:
    md = rendered(kind, verdict)
    html = gfm(md)
    p = page(md)
    # One title, naming the verdict and the config by its repository path.
    titles = [h for h in p.headings if h.startswith("mcptape:")]
    assert len(titles) == 1 and titles[0].endswith("· fixtures/example/mcptape.yml"), p.headings
    # The change in words, once (in bold), and nowhere else in words.
    if verdict in HEADLINE:
        bold = re.findall(r"<strong>(.*?)</strong>", html)
        words = re.sub(r"<[^>]+>", "", bold[0])
        assert words.endswith(HEADLINE[verdict]), words
        phrase = "now returns" if verdict == "output" else "now requires"
        assert re.sub(r"<[^>]+>", "", html).count(phrase) == 1
    # Everything below the headline is collapsed, and every <details> closes.
    assert p.balance_errors == 0 and p.depth == 0
    assert not any(p.details_open)
    if verdict != "same":
        assert len(p.details_open) >= 2 if verdict in HEADLINE else len(p.details_open) >= 1
    # Links: the run, the head commit, and each drift's golden tape at its line, on the head commit.
    assert "https://github.com/acme/calc/actions/runs/9001" in p.links
    assert f"https://github.com/acme/calc/commit/{HEAD}" in p.links
    for link in p.links:
        parts = urlsplit(link)
        assert parts.scheme == "https" and parts.netloc == "github.com" and " " not in link, link
        if "/blob/" in link:
            assert re.fullmatch(rf"/acme/calc/blob/{HEAD}/fixtures/example/tapes/[\w.-]+\.tape\.jsonl", parts.path), link
            assert re.fullmatch(r"(L\d+)?", parts.fragment), link
    if verdict in HEADLINE:  # a drift links its golden tape at the drifted line
        assert any("/blob/" in link and "#L" in link for link in p.links)
    # No line of a code block runs past the column (GitHub would scroll it sideways).
    for block in p.pre:
        for line in block.split("\n"):
            assert len(line) <= WRAP_COLUMNS, line
