"""volatility/nondeterminism.py: volatile places between runs, and rules that the normalizer really applies."""

from __future__ import annotations

import json
import re
from typing import Any

from mcptape.config.models import NormalizeRule
from mcptape.tape.format import Tape
from mcptape.volatility.nondeterminism import (
    carried_state,
    find_volatile,
    ignore_hint,
    regex_candidate,
    suggest_rules,
    unfixed,
)
from mcptape.volatility.normalize import Normalizer


def _call(step: int, name: str, result: dict[str, Any], msg_id: int) -> list[dict[str, Any]]:
    params = {"name": name, "arguments": {}}
    return [
        {"kind": "request", "dir": "c2s", "id": msg_id, "method": "tools/call", "step": step,
         "msg": {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}},
        {"kind": "response", "dir": "s2c", "id": msg_id, "method": "tools/call", "step": step, "params": params,
         "msg": {"jsonrpc": "2.0", "id": msg_id, "result": result}},
    ]


def _log(level: str) -> dict[str, Any]:
    return {"kind": "notification", "dir": "s2c", "method": "notifications/message",
            "msg": {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": level, "data": "hi"}}}


def _run(clock: str, task: str, level: str, *, extra: bool = False) -> Tape:
    now = {"datetime": clock, "timezone": "UTC"}
    events = _call(1, "now", {"content": [{"type": "text", "text": json.dumps(now)}], "structuredContent": now}, 1)
    events += _call(2, "start", {"content": [{"type": "text", "text": f"Task {task} started"}]}, 2)
    events += _call(3, "add", {"content": [{"type": "text", "text": "5"}]}, 3)
    events.append(_log(level))
    if extra:
        events.append({"kind": "notification", "dir": "s2c", "method": "notifications/tools/list_changed",
                       "msg": {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}})
    return Tape(header={"name": "s"}, events=events)


RUNS = [
    _run("12:00:01", "3f2a9c", "debug"),
    _run("12:00:02", "77bb01", "error", extra=True),
    _run("12:00:03", "a1b2c3", "debug"),
]


def _places(volatiles: list[Any], kind: str) -> set[str]:
    return {v.path if v.path else v.where for v in volatiles if v.kind == kind}


def test_identical_runs_have_nothing_volatile() -> None:
    assert find_volatile([_run("1", "a", "info"), _run("1", "a", "info")]) == []
    assert find_volatile([RUNS[0]]) == []  # one run: nothing to compare
    # Positive control: the same two runs with another clock value have that one volatile place.
    assert _places(find_volatile([_run("1", "a", "info"), _run("2", "a", "info")]), "value") == {
        "result.content[0].text(json).datetime", "result.structuredContent.datetime"}


def test_finds_values_inside_json_text_plain_text_and_notifications() -> None:
    found = find_volatile(RUNS)
    assert _places(found, "value") == {
        "result.content[0].text(json).datetime",
        "result.structuredContent.datetime",
        "result.content[0].text",
        "params.level",
    }
    where = {v.path: v.where for v in found if v.kind == "value"}
    assert where["result.content[0].text"] == "step 2 · tools/call start (answer)"
    datetime = next(v for v in found if v.path == "result.structuredContent.datetime")
    assert datetime.distinct == 3 and datetime.runs == 3


def test_an_event_present_in_some_runs_only_comes_with_advice_not_a_rule() -> None:
    found = find_volatile(RUNS)
    [presence] = [v for v in found if v.kind == "presence"]
    assert "notifications/tools/list_changed" in presence.where
    assert presence.present == 1 and presence.runs == 3
    assert "listen" in presence.advice and 'path: "notifications[notifications/tools/list_changed]"' in presence.advice
    assert all("list_changed" not in str(r) for r in suggest_rules(found))


def test_suggests_the_narrowest_rules_and_they_validate_as_config() -> None:
    rules = suggest_rules(find_volatile(RUNS))
    by_target = {r.get("path") or r.get("pattern"): r for r in rules}
    # one key rule covers the structured copy and the JSON text copy
    assert "$..datetime" in by_target
    assert "(json).datetime" in by_target["$..datetime"]["reason"] and "+1 more place" in by_target["$..datetime"]["reason"]
    # the random id inside a sentence: a regex on the token, keeping "Task ... started" comparable
    assert r"(?<=Task )\w+" in by_target
    assert "$..level" in by_target
    assert len(rules) == 3
    for rule in rules:
        NormalizeRule(**{k: v for k, v in rule.items() if k != "seen"})  # ready to paste: valid config
        assert rule["reason"] and "\n" not in rule["reason"]
    assert by_target["$..level"]["seen"] == ['"debug"', '"error"']


def test_suggested_rules_make_every_run_equal_when_applied_by_the_normalizer() -> None:
    found = find_volatile(RUNS)
    rules = suggest_rules(found)
    assert unfixed(found, rules) == []
    config_rules = [NormalizeRule(**{k: v for k, v in r.items() if k != "seen"}) for r in rules]
    normalizer = Normalizer(config_rules, paths={})
    again = find_volatile([Tape(header={}, events=normalizer.fresh(t.events)) for t in RUNS])
    assert [v for v in again if v.kind == "value"] == []
    # the stable result of step 3 was not touched by any rule
    fixed = normalizer.fresh(RUNS[0].events)
    assert fixed[5]["msg"]["result"]["content"][0]["text"] == "5"


def test_a_key_that_is_also_stable_elsewhere_gets_a_longer_path() -> None:
    def run(level: str) -> Tape:
        events = _call(1, "game", {"content": [], "structuredContent": {"level": 3}}, 1)
        return Tape(header={}, events=[*events, _log(level)])

    [rule] = suggest_rules(find_volatile([run("debug"), run("error")]))
    assert rule["path"] == "$..params.level"  # `$..level` would also hide the game's stable level
    assert "also rewrites" not in rule["reason"]


def test_when_every_rule_has_collateral_the_reason_says_so() -> None:
    def run(level: str) -> Tape:
        set_level = {"kind": "request", "dir": "c2s", "id": 1, "method": "logging/setLevel", "step": 1,
                     "msg": {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}}
        return Tape(header={}, events=[set_level, _log(level)])

    [rule] = suggest_rules(find_volatile([run("debug"), run("error")]))
    assert "also rewrites 1 stable value" in rule["reason"]  # the client's own setLevel request


def test_regex_candidates_anchor_on_stable_text_never_on_digits() -> None:
    clock = regex_candidate(["Resource 1: created at 2:11:03 PM", "Resource 1: created at 2:11:09 PM"])
    assert clock == {"pattern": r"(?<=created at )\d+:\d+:\d+", "replace": "<TIME>"}
    info = regex_candidate([
        "size: 3\ncreated: Sun Nov 29 2026 14:11:03 GMT\nisFile: true",
        "size: 3\ncreated: Sun Nov 29 2026 14:12:07 GMT\nisFile: true",
    ])
    assert info is not None and info["pattern"] == "(?<=created: ).+"
    assert re.sub(info["pattern"], "X", "created: Mon Dec 1 2027 01:00:00 GMT") == "created: X"  # tomorrow too
    assert regex_candidate(["abc", "def"]) is None  # the whole value differs: a path rule is better
    assert regex_candidate(["same", "same"]) is None


def test_side_effect_content_differences_are_reported_not_normalized() -> None:
    def run(sha: str) -> Tape:
        return Tape(header={}, events=[{"kind": "side_effect", "step": 2, "changes": [
            {"path": "notes.txt", "change": "created", "size": 4, "sha256": sha}]}])

    found = find_volatile([run("aa"), run("bb")])
    [content] = found
    assert content.kind == "content" and content.path == '["notes.txt"].sha256'
    assert "notes.txt" in content.advice
    assert suggest_rules(found) == []


def test_a_value_whose_first_word_varies_gets_a_path_rule_not_a_suffix_regex() -> None:
    # Five runs of server-everything's log text may all end in "-level message"; the sixth can
    # say "Alert level-message". A regex anchored on the suffix would turn that into false drift.
    from mcptape.volatility.nondeterminism import regex_candidate

    assert regex_candidate(["Debug-level message", "Info-level message", "Error-level message"]) is None
    assert regex_candidate(["Task abc123 started", "Task zz9911 started"]) == {
        "pattern": r"(?<=Task )\w+",
        "replace": "<ID>",
    }


def test_state_carried_between_runs_is_told_from_volatility_and_gets_no_rule() -> None:
    # server-memory with a store that outlives the run: run 1 creates the entity, later runs find it.
    def run(created: list[str], graph: list[str], clock: str) -> Tape:
        events = _call(1, "create_entities", {"content": [{"type": "text", "text": json.dumps(created)}],
                                              "structuredContent": {"entities": created}}, 1)
        events += _call(2, "read_graph", {"content": [], "structuredContent": {"entities": graph}}, 2)
        events += _call(3, "now", {"content": [{"type": "text", "text": f"at {clock}"}]}, 3)
        return Tape(header={}, events=events)

    runs = [run(["tape"], ["tape"], "1"), run([], ["tape"], "2"), run([], ["tape"], "3")]
    found = find_volatile(runs)
    state = {v.path for v in found if carried_state(v)}
    assert "result.structuredContent.entities" in state and "result.content[0].text(json)" in state
    rules = suggest_rules(found)
    assert [r.get("pattern") or r.get("path") for r in rules] == [r"(?<=at )\d+"]  # the clock only
    assert unfixed(found, rules) == []  # state is not left over as "volatile, ignore it"
    # A store that grows run after run is state too; a value that just varies is not.
    growing = [run(["a"] * n, ["a"] * n, "1") for n in (1, 2, 3)]
    assert any(carried_state(v) for v in find_volatile(growing))
    assert not any(carried_state(v) for v in find_volatile([run([], [], c) for c in "123"]))


def test_ignore_hints_are_scoped_to_the_call_they_come_from() -> None:
    [clock] = [v for v in find_volatile(RUNS) if v.path == "result.content[0].text"]
    assert ignore_hint(clock) == 'drift: {ignore: [{method: "tools/call", name: "start", path: "result.content[0].text"}]}'


def test_a_token_rule_covers_the_underscore_the_trial_did_not_see() -> None:
    # mcp-server-analyzer answers Python temp file names: two runs gave tmpab12cdx.py and tmpq9z8y7w.py,
    # the third tmpi2_1xi6e.py (tempfile's alphabet has `_`). The rule from the two must cover the third.
    found = regex_candidate(["ran <TMP>/tmp/tmpab12cdx.py", "ran <TMP>/tmp/tmpq9z8y7w.py"])
    assert found is not None
    assert re.sub(found["pattern"], "<ID>", "ran <TMP>/tmp/tmpi2_1xi6e.py") == "ran <TMP>/tmp/<ID>"
    assert re.sub(found["pattern"], "<ID>", "ran <TMP>/tmp/tmpi2_1xi6e.py and more") != "ran <TMP>/tmp/<ID>"
