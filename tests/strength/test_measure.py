"""Measuring a gate: what no session reaches, a rule that swallows a list, what is hidden on
purpose, equivalent mutants, a golden that fails against itself, and the same numbers every time.

Pure: goldens built in memory (tests/strength/goldens.py), configs in tmp_path, no server.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mcptape.strength.judge import BUILT_IN, SessionJudge, config_masks
from mcptape.strength.measure import Measure, measure
from mcptape.strength.mutants import Mutant
from mcptape.strength.report import Tally, render_json, summary_line
from tests.strength.goldens import SESSION, TOOLS, configured, context, golden_events, golden_tape

SHELL = "Run a shell command. Allowed commands: cat, grep, head, ls, wc."


def _measure(tmp_path: Path, extra: str = "", events: list[dict[str, Any]] | None = None, seed: int = 0) -> Measure:
    loaded = configured(tmp_path, extra)
    return measure(context(loaded), loaded.config.sessions, seed=seed, goldens={SESSION: golden_tape(events)})


def test_a_tool_no_session_calls_survives_every_change_to_its_answers_and_says_so(tmp_path: Path) -> None:
    measured = _measure(tmp_path)
    unreached = [j for j in measured.judged if j.subject == "tool stats" and j.judgement.verdict == "survived"]
    assert {j.kind for j in unreached} == {"result_text_changed", "result_to_error"}
    assert all(j.detail == "no session of server s calls it" and not j.judgement.masks for j in unreached)
    # The called tools have no such survivor; and the gate's line counts it.
    assert not [j for j in measured.judged if j.subject == "tool echo" and "calls it" in j.detail]
    assert "2 pass: 2 in 1 tool(s), resource(s) or prompt(s) no session asks for" in summary_line(measured)


def test_a_placeholder_that_swallows_a_shell_servers_allowed_commands_is_a_survivor_named_by_its_line(
        tmp_path: Path) -> None:
    # What `ci -u` writes under the rule: the list is gone from the golden, only the placeholder stays.
    rule = 'normalize:\n  - pattern: "(?<=Allowed commands: ).+"\n    replace: "<COMMANDS>"\n'
    measured = _measure(tmp_path, rule, golden_events(description="Run a shell command. Allowed commands: <COMMANDS>"))
    survivors = [j for j in measured.judged if j.subject == "tool echo" and j.judgement.verdict == "survived"]
    assert [(j.kind, j.detail) for j in survivors] == [
        ("description_changed", "description: the value <COMMANDS> stands for")]
    [mask] = survivors[0].judgement.masks
    assert (mask.line, mask.says) == (10, "normalize rule `pattern: (?<=Allowed commands: ).+` → `<COMMANDS>`")
    assert "masked by mcptape.yml:10" in summary_line(measured)

    # The control: a canonical order instead of the placeholder keeps the list, so dropping a
    # command fails the gate, and only reordering it is hidden, on purpose.
    ordered = 'normalize:\n  - pattern: "(?<=Allowed commands: ).+"\n    order: sorted\n'
    measured = _measure(tmp_path, ordered, golden_events(description=SHELL))
    echo = {j.kind: j.judgement for j in measured.judged if j.subject == "tool echo"}
    assert echo["list_item_dropped"].verdict == "killed"
    assert echo["description_changed"].verdict == "killed"
    assert echo["list_reordered"].verdict == "by_design"
    assert echo["list_reordered"].masks[0].line == 10


def test_a_path_rule_hides_one_value_by_design_and_a_whole_text_as_a_blind_spot(tmp_path: Path) -> None:
    one = _measure(tmp_path, "normalize: [{path: $..count, replace: <N>}]\n")
    [count] = [j for j in one.judged if j.kind == "result_number_changed"]
    assert count.judgement.verdict == "by_design"
    text = _measure(tmp_path, "normalize: [{path: $.result.structuredContent.text, replace: <T>}]\n")
    [changed] = [j for j in text.judged if j.kind == "result_text_changed" and j.subject == "tool echo"]
    assert changed.detail == "structuredContent.text: the word 'hello'"
    assert changed.judgement.verdict == "survived"  # "hello world" is a text: any words there pass


def test_mcptapes_own_clock_normalization_hides_a_ticking_clock_by_design_and_the_score_leaves_it_out(
        tmp_path: Path) -> None:
    events = golden_events()
    for event in events:
        if event.get("method") == "tools/call" and event.get("kind") == "response" and event["id"] == 4:
            event["msg"]["result"] = {"content": [{"type": "text", "text": "last run at 11:45:51 PM"}]}
    measured = _measure(tmp_path, "", events)
    [tick] = [j for j in measured.judged if j.kind == "result_number_changed" and j.subject == "tool list_items"]
    assert tick.judgement.verdict == "by_design" and tick.judgement.masks == [BUILT_IN]
    tally = Tally.of(measured.judged)
    assert tally.by_design == 1 and tally.score == math.floor(1000 * tally.killed / (tally.killed + tally.survived)) / 10


def test_a_mutant_that_changes_nothing_the_pipeline_keeps_is_equivalent(tmp_path: Path) -> None:
    loaded = configured(tmp_path)
    golden = golden_tape()
    judge = SessionJudge(context(loaded), loaded.config.sessions[0], golden, config_masks(context(loaded)))
    same = [dict(e) for e in golden.events]  # equal events, other objects: as a mutant that undid itself
    assert judge.judge(Mutant("list_reordered", SESSION, "tool x", "", same, (0,))).verdict == "equivalent"
    changed = [dict(e) for e in golden.events]
    del changed[-1]
    assert judge.judge(Mutant("result_to_error", SESSION, "tool x", "", changed, ())).verdict == "killed"


def test_a_golden_that_fails_against_its_own_config_is_not_measured_and_says_why(tmp_path: Path) -> None:
    events = golden_events()
    log = next(i for i, e in enumerate(events) if e.get("method") == "notifications/message")
    events.insert(3, events.pop(log))  # a log where ci never writes one: canonical order moves it
    measured = _measure(tmp_path, "", events)
    [session] = measured.sessions
    assert session.judged == [] and session.problem is not None
    assert session.problem.startswith("the golden fails against itself (")
    assert summary_line(measured).startswith("gate strength: not measured")


def test_the_same_config_and_goldens_give_the_same_report_and_the_seed_moves_the_draws(tmp_path: Path) -> None:
    first = render_json(_measure(tmp_path))
    assert render_json(_measure(tmp_path)) == first
    details = {render_json(_measure(tmp_path, seed=seed)) for seed in range(6)}
    assert len(details) > 1  # the drawn word of a description, the drawn item of a list
    reseeded = [_measure(tmp_path, seed=seed) for seed in range(6)]
    assert all(len(m.judged) == len(_measure(tmp_path).judged) for m in reseeded)  # the same places, drawn otherwise


def test_the_demo_tools_are_the_ones_listed() -> None:
    assert [t["name"] for t in TOOLS] == ["echo", "list_items", "stats"]


def test_a_results_envelope_is_not_what_it_says_and_is_never_mutated(tmp_path: Path) -> None:
    # A 2026-07-28 answer carries the server's name and version in `_meta` and `ttlMs`: diff leaves
    # them out, so a mutant there would be a blind spot of nobody's (the git server's, first run).
    events = golden_events()
    for event in events:
        if event.get("kind") == "response" and event.get("method") == "tools/call":
            event["msg"]["result"] = {**event["msg"]["result"], "ttlMs": 0,
                                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "1.26.0"}}}
    measured = _measure(tmp_path, "", events)
    assert not [j for j in measured.judged if "_meta" in j.detail or "ttlMs" in j.detail]
    assert not [j for j in measured.judged if j.judgement.masks and j.judgement.masks[0].key == "not-compared"]
