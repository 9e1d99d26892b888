"""Which drift heads the report, and which finding names it (issue 29, item 6).

Each row is a golden and a fresh hand-built tape holding several drifts of one severity in
tape order that puts the wrong one first; the headline (drifts[0] and its headline finding)
must be the one a reviewer most needs: a call that now fails, then what callers lose (a tool
removed, a breaking schema), then a changed answer, then what callers may use or read (a tool
added, a changed hint or description), handshake metadata, and the client's own change last.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from mcptape.conformance.gate import diff_checked
from mcptape.diff.compare import diff_tapes
from mcptape.publish.github import annotation_lines, run_outputs
from mcptape.report.junit import junit_xml
from mcptape.report.markdown import render_comment, render_summary
from mcptape.report.terminal import render_run_text
from mcptape.tape.format import Tape
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    RunReport,
    SessionResult,
    headline_priority,
)
from tests.recording import ADD, INIT_RESULT, TapeBuilder

MUL = dict(ADD, name="mul")
SUB = dict(ADD, name="sub")
# A tool added beside one removed that shares neither its schema nor its description: not a rename.
TIMES = dict(ADD, name="times", description="Multiplies x by itself.",
             inputSchema={"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]})
NARROWED = dict(SUB, inputSchema={**SUB["inputSchema"], "properties": {"a": {"type": "integer"}, "b": {"type": "number"}}})
HINTED = dict(ADD, annotations={"openWorldHint": False})
OK = {"content": [{"type": "text", "text": "5"}], "isError": False}
FAILS = {"content": [{"type": "text", "text": "boom"}], "isError": True}


def tape(tools: list[dict[str, Any]], answers: list[Any], *, init: dict[str, Any] | None = None,
         asked: str = "2025-11-25") -> Tape:
    tb = TapeBuilder(init_result=init, asked=asked).call("tools/list", None, {"tools": tools})
    for n, answer in enumerate(answers):
        tb.tool("add", {"a": n, "b": 1}, result=answer) if isinstance(answer, dict) and "content" in answer else \
            tb.tool("add", {"a": n, "b": 1}, error=answer)
    return tb.tape()


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}], "isError": False}


INIT_06 = {**INIT_RESULT, "protocolVersion": "2025-06-18"}
INIT_11 = {**INIT_RESULT, "protocolVersion": "2025-11-25"}
INIT_03 = {**INIT_RESULT, "protocolVersion": "2025-03-26"}

Row = tuple[Callable[[], Tape], Callable[[], Tape], str, str]
ROWS = [
    # structural: tools/list comes first in the tape; the tool added is its first finding
    pytest.param(lambda: tape([ADD, SUB], [OK]), lambda: tape([ADD, TIMES], [OK]), "surface.removed", "tool `sub` removed",
                 id="a removed tool before an added tool (the classifier's own order)"),
    pytest.param(lambda: tape([ADD, SUB], [OK]), lambda: tape([ADD, MUL, NARROWED], [OK]), "schema.breaking", "tool `sub`",
                 id="a breaking schema before an added tool"),
    pytest.param(lambda: tape([ADD, SUB], [OK]), lambda: tape([ADD, MUL, NARROWED], [FAILS]), "error.is_error",
                 "became an error", id="a call that now fails before a breaking schema and an added tool"),
    pytest.param(lambda: tape([ADD], [OK]), lambda: tape([ADD, MUL], [{"code": -32603, "message": "x"}]),
                 "error.result_to_error", "result → error", id="a call that now errors before an added tool"),
    # output: tools/list comes first in the tape
    pytest.param(lambda: tape([ADD], [OK, OK, OK]), lambda: tape([HINTED], [text("6"), text("7"), text("8")]),
                 "result.changed", '"5" → "6"', id="a changed answer before a changed hint"),
    pytest.param(lambda: tape([ADD], [OK]), lambda: tape([dict(ADD, description="Adds.")], [text("6")]),
                 "result.changed", '"5" → "6"', id="a changed answer before a changed description"),
    pytest.param(lambda: tape([ADD], [OK], init=INIT_06, asked="2025-06-18"),
                 lambda: tape([ADD], [OK], init={**INIT_03, "serverInfo": {"name": "calc", "version": "2"}}),
                 "session.server_info", "server", id="server metadata before the client's own change"),
]


def request_id() -> str:
    return str(__import__("os").environ.get("PYTEST_CURRENT_TEST", ""))


@pytest.mark.parametrize(("golden", "fresh", "expected", "says"), ROWS)
def test_the_headline_is_the_drift_a_reviewer_most_needs(golden: Callable[[], Tape], fresh: Callable[[], Tape],
                                                         expected: str, says: str) -> None:
    assert diff_tapes(golden(), golden()).verdict == "same"  # negative control
    result = diff_tapes(golden(), fresh())
    head = result.drifts[0].headline_finding
    assert f"{head.category}.{head.kind}" == expected, [d.one_line() for d in result.drifts]
    assert says in result.drifts[0].one_line()
    # Where the ranking had a choice, tape order alone would have put another finding first.
    severity = result.drifts[0].severity
    in_tape_order = sorted((f for d in result.drifts for f in d.findings if f.severity == severity),
                           key=lambda f: f.fresh_line or 0)  # stable: a drift's own findings keep their order
    if "classifier's own order" not in request_id():
        assert in_tape_order[0] is not head, "the row does not test the ranking: the headline was first anyway"


def test_the_priorities_are_the_documented_order() -> None:
    def f(category: str, kind: str, path: str = "result", after: Any = None) -> Finding:
        return Finding(category, "structural", path, "", None, after, kind)

    order = [f("protocol", "changed"), f("error", "is_error", after=True), f("surface", "removed"),
             f("result", "changed"), f("surface", "added"), f("session", "server_info"),
             f("call", "arguments", path="params.capabilities")]
    assert [headline_priority(x) for x in order] == sorted(headline_priority(x) for x in order)
    assert len({headline_priority(x) for x in order}) == len(order)
    assert headline_priority(f("error", "is_error", after=False)) == headline_priority(f("result", "changed"))


def test_a_changed_description_shows_where_the_texts_differ() -> None:
    long = "Add two numbers and return their sum, as a decimal string without any trailing zeros at all."
    changed = long.replace("trailing zeros", "leading zeros")
    result = diff_tapes(tape([dict(ADD, description=long)], [OK]), tape([dict(ADD, description=changed)], [OK]))
    line = result.drifts[0].one_line()
    assert "trailing" in line and "leading" in line, line
    assert "first difference at character" in line


def test_a_known_conformance_violation_stays_known_when_the_revision_changed() -> None:
    # A golden recorded asking 2025-06-18 and a fresh session asking 2025-11-25: the same broken
    # result quotes another revision in its message, and is still the golden's violation.
    def broken(asked: str, content: Any) -> Tape:
        tb = TapeBuilder(init_result={**INIT_RESULT, "protocolVersion": asked}, asked=asked)
        t = tb.tool("t", {}, result={"content": content}).tape()
        return Tape({**t.header, "protocol": asked}, t.events, t.footer)

    result = diff_checked(broken("2025-06-18", "not a list"), broken("2025-11-25", "not a list"))
    found = [f for d in result.drifts for f in d.findings if f.category == "conformance"]
    assert found and all(f.severity == "info" and f.message.startswith("known: ") for f in found), found
    assert any("MCP 2025-11-25" in f.message for f in found)  # the message does name the new revision
    assert result.verdict == "same", [d.one_line() for d in result.drifts]
    # Control: another broken rule under the new revision is new drift.
    worse = diff_checked(broken("2025-06-18", "not a list"), broken("2025-11-25", 7))
    assert worse.verdict == "structural"


# --- every report heads a session with the drift that decided its exit (issue 40) ------------------

NOTE = Finding("protocol", "info", "deprecated.logging", "the server relies on logging, deprecated in 2026-07-28",
               None, "logging", "deprecated")
SLOW = Finding("latency", "output", "", "50.0 ms slower per call (median 1.0 → 51.0 ms, Mann-Whitney p=0.0001)",
               kind="regression")


def baseline_report() -> RunReport:
    """What `ci --baseline REF --latency N` with `fail_on: {latency: output}` reports: diff's info
    note first, the latency drift ci/baseline.py adds after it; a green session with the note alone."""
    note, slow = Drift(None, [NOTE]), Drift(CallRef("tools/call", "add", {"a": 2, "b": 3}, step=2), [SLOW])
    drifted = SessionResult("basic", "output", diff=DiffResult("output", drifts=[note, slow]), golden="tapes/basic.tape.jsonl")
    green = SessionResult("quiet", "same", diff=DiffResult("same", drifts=[Drift(None, [NOTE])]))
    return RunReport(config="mcptape.yml", sessions=[green, drifted])


def test_every_report_heads_with_the_drift_that_decided_the_exit_never_an_info_note() -> None:
    report = baseline_report()
    green, drifted = report.sessions
    assert report.exit_code == 1 and report.first_drift() == (drifted, drifted.diff.drifts[1])  # type: ignore[union-attr]
    assert green.diff is not None and green.diff.first is None and green.first_drift_line() is None

    table = [line for line in render_run_text(report).splitlines() if line.startswith("│")]
    assert any("quiet" in row and "no drift" in row for row in table), table
    assert any("basic" in row and "ms slower per call" in row for row in table), table
    assert not any("deprecated" in row for row in table), table

    summary = render_summary(report)
    assert "ms slower per call" in summary.split("\n\n")[2], summary  # the headline paragraph
    quiet_row = next(line for line in summary.splitlines() if line.startswith("| ` quiet `"))
    assert "deprecated" not in quiet_row, quiet_row  # the "first drifted call" column of a green session
    comment = render_comment(report, "mcptape.yml")
    assert "ms slower per call" in comment.split("\n\n")[3], comment

    junit = junit_xml(report)
    assert re.search(r'<failure message="basic · step 2 · tools/call add [^"]*ms slower per call', junit), junit
    assert "deprecated" not in junit.split("<testcase")[1]  # the green session: no failure, no headline
    [annotation] = annotation_lines(report, config_path="mcptape.yml", workspace=".")
    assert "ms slower per call" in annotation
    assert "ms slower per call" in run_outputs(report, report_path=None)["first-drift"]
    data = report.to_dict()
    assert "ms slower per call" in data["headline"] and data["sessions"][0]["headline"] is None
    assert RunReport.from_dict(data).first_drift() is not None  # the derived field is not read back
