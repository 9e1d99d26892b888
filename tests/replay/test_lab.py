"""The agent lab without processes: timing (tape/timing.py and rec's writer), pace (replay/pacing.py),
faults (replay/faults.py), served values (replay/served_values.py), LabEngine (replay/lab.py), forks
(tape/lineage.py). Pure data in, data out; tests/integration/test_agent_lab.py drives real clients.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from mcptape.errors import ConfigError
from mcptape.record.relay import FRAME, TAG_C2S, TAG_CTL, TAG_S2C
from mcptape.record.writer import TapeRecorder
from mcptape.replay.engine import ReplayEngine
from mcptape.replay.faults import FaultPlan, FaultRule, parse_faults
from mcptape.replay.lab import LabEngine, LabOptions
from mcptape.replay.pacing import Pacer, parse_pace
from mcptape.replay.served_values import SERVED_VALUES, serve_values
from mcptape.tape.format import Tape, TapeWriter, make_header
from mcptape.tape.lineage import fork_tape, is_fork_of
from mcptape.tape.reader import read_tape
from mcptape.tape.timing import call_times, client_gaps, event_times, summary, timing_footer
from tests.replay.test_engine import call, make_tape, note, req, res

INIT = req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}})


def _lines(*msgs: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in msgs)


def _recorded(tmp_path: Path, frames: list[tuple[int, bytes, float]]) -> Tape:
    """A tape written by rec's writer from tee frames carrying the relay's clock."""
    path = tmp_path / "t.tape.jsonl"
    recorder = TapeRecorder(TapeWriter(path, make_header("t")))
    r, w = os.pipe()
    done: list[int] = []
    thread = threading.Thread(target=lambda: done.append(recorder.run(r)))
    thread.start()
    with os.fdopen(w, "wb") as fh:
        for tag, payload, clock in frames:
            fh.write(FRAME.pack(tag, len(payload), clock) + payload)
        end = json.dumps({"returncode": 0, "reason": "client_closed"}).encode()
        fh.write(FRAME.pack(TAG_CTL, len(end), 0.0) + end)
    thread.join(30)
    os.close(r)
    assert done == [0]
    return read_tape(path)


# --- timing ----------------------------------------------------------------------------------


def test_recs_writer_puts_the_relays_clock_in_the_footer_and_latency_is_read_off_it(tmp_path: Path) -> None:
    tape = _recorded(tmp_path, [
        (TAG_C2S, _lines(INIT), 100.000),
        (TAG_S2C, _lines(res(1, {"protocolVersion": "2025-06-18", "capabilities": {}})), 100.010),
        (TAG_C2S, _lines(note("notifications/initialized")), 100.050),
        (TAG_C2S, _lines(call(2, "slow", ms=200)), 100.300),
        (TAG_S2C, _lines(res(2, {"content": [{"type": "text", "text": "slept"}]})), 100.500),
    ])
    times = event_times(tape)
    assert times is not None and times[:5] == [0.0, 10.0, 50.0, 300.0, 500.0]
    assert times[-1] is None  # the server's exit: mcptape's, not the wire's
    calls = {c.label: c for c in call_times(tape)}
    assert calls["tools/call slow"].latency_ms == 200.0
    assert calls["initialize"].latency_ms == 10.0
    assert client_gaps(tape) == [(2, 50.0), (3, 250.0)]
    assert summary(tape) == {"total_ms": 210.0, "slowest": {"call": "tools/call slow", "latency_ms": 200.0, "request": 4}}


def test_a_tape_without_timing_reads_as_none_and_unknown_footer_fields_are_kept(tmp_path: Path) -> None:
    tape = make_tape(("c2s", INIT), ("s2c", res(1, {})))
    assert event_times(tape) is None and summary(tape) is None
    assert [c.latency_ms for c in call_times(tape)] == [None]
    tape.footer = {"mcptape": "end", "events": 2, "timing": {"unit": "s", "at": [1, 2]}, "future": 1}
    assert event_times(tape) is None  # a unit this mcptape does not know is not read as ms
    assert timing_footer([None, None]) is None
    assert timing_footer([2.0, None, 2.5]) == {"unit": "ms", "at": [0.0, None, 500.0]}


# --- pace ------------------------------------------------------------------------------------


def _timed_tape() -> Tape:
    tape = make_tape(("c2s", INIT), ("s2c", res(1, {})), ("c2s", call(2, "slow")), ("s2c", res(2, {"content": []})),
                     ("c2s", call(3, "add")), ("s2c", res(3, {"content": []})))
    assert tape.footer is not None
    tape.footer["timing"] = {"unit": "ms", "at": [0.0, 1.0, 10.0, 210.0, 220.0, 220.5]}
    return tape


def test_pace_delays_each_answer_by_its_recorded_latency_over_the_speed() -> None:
    tape = _timed_tape()
    assert parse_pace(None) is None and parse_pace("recorded") == 1.0 and parse_pace("x2") == 2.0
    assert parse_pace("x0.5") == 0.5
    for bad in ("x0", "fast-ish", "x-1", "2"):
        with pytest.raises(ConfigError, match="--pace"):
            parse_pace(bad)
    assert Pacer(tape, 1.0).delay_s(2, 3) == pytest.approx(0.2)
    assert Pacer(tape, 2.0).delay_s(2, 3) == pytest.approx(0.1)
    assert Pacer(tape, 0.5).delay_s(4, 5) == pytest.approx(0.001)
    assert Pacer(make_tape(("c2s", INIT), ("s2c", res(1, {}))), 1.0).delay_s(0, 1) == 0.0  # no timing: no wait


def test_lab_engine_paces_the_call_the_engine_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    lab = LabEngine(ReplayEngine(_timed_tape()), LabOptions(pace=1.0), "recorded")
    monkeypatch.setattr("mcptape.replay.lab.time.sleep", waits.append)
    lab.handle(json.dumps(INIT))
    lab.handle(json.dumps(call(7, "slow")))
    lab.handle(json.dumps(call(8, "add")))
    assert waits == pytest.approx([0.001, 0.2, 0.0005])
    assert "pace: recorded" in lab.report().render()


# --- faults ----------------------------------------------------------------------------------


def test_fault_rules_parse_and_bad_ones_say_what_is_wrong() -> None:
    rule = FaultRule("tool=add, call=2, p=0.5, error=-32000:quota: exceeded")
    assert (rule.method, rule.tool, rule.call, rule.p, rule.kind, rule.code, rule.message) == (
        "tools/call", "add", 2, 0.5, "error", -32000, "quota: exceeded")
    assert FaultRule("delay=250").delay_ms == 250.0
    assert FaultRule("method=resources/read,is-error").message.startswith("injected")
    for text, why in (("tool=add", "no fault"), ("no-answer,close", "two faults"), ("p=2,close", "probability"),
                      ("call=0,close", "request number"), ("error=abc", "CODE"), ("close=1", "takes no value"),
                      ("method=tools/list,tool=x,close", "tool= picks"), ("delay=-1", "milliseconds"), ("boom", "unknown")):
        with pytest.raises(ConfigError, match=why):
            FaultRule(text)


def test_call_counts_the_requests_a_rule_picks_and_the_seed_fixes_the_draws() -> None:
    plan = FaultPlan(parse_faults(["tool=add,call=2,close"]))
    picked = [plan.pick("tools/call", {"name": n}, k) for k, n in enumerate(["add", "echo", "add", "add"], start=1)]
    assert [r.kind if r else None for r in picked] == [None, None, "close", None]
    assert plan.injected == ["request 3 (tools/call add): close [rule 'tool=add,call=2,close']"]

    def draws(seed: int) -> list[bool]:
        p = FaultPlan(parse_faults(["p=0.5,no-answer"]), seed)
        return [p.pick("tools/call", {"name": "add"}, k) is not None for k in range(40)]

    assert draws(3) == draws(3) == draws(3)
    assert draws(3) != draws(4)
    assert 5 < sum(draws(3)) < 35


def _lab(tape: Tape, *rules: str) -> LabEngine:
    return LabEngine(ReplayEngine(tape), LabOptions(faults=FaultPlan(parse_faults(rules))))


def test_each_fault_changes_what_the_client_gets() -> None:
    tape = make_tape(("c2s", INIT), ("s2c", res(1, {})), ("c2s", call(2, "add", a=1)),
                     ("s2c", note("notifications/message", {"level": "info", "data": "adding"})),
                     ("s2c", res(2, {"content": [{"type": "text", "text": "1"}]})))

    def answer(rule: str) -> tuple[list[str], LabEngine]:
        lab = _lab(tape, rule)
        lab.handle(json.dumps(INIT))
        return lab.handle(json.dumps(call(9, "add", a=1))), lab

    untouched, _ = answer("tool=other,close")
    assert json.loads(untouched[-1]) == {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "1"}]}}
    out, _ = answer("tool=add,error=-32099:down")
    assert json.loads(out[-1]) == {"jsonrpc": "2.0", "id": 9, "error": {"code": -32099, "message": "down"}}
    assert json.loads(out[0])["method"] == "notifications/message"  # what came before the answer still comes
    out, _ = answer("tool=add,is-error=nope")
    assert json.loads(out[-1])["result"] == {"content": [{"type": "text", "text": "nope"}], "isError": True}
    out, _ = answer("tool=add,no-answer")
    assert len(out) == 1 and "result" not in out[0]
    out, _ = answer("tool=add,malformed")
    with pytest.raises(json.JSONDecodeError):
        json.loads(out[-1])
    assert untouched[-1].startswith(out[-1])
    out, lab = answer("tool=add,close")
    assert len(out) == 1 and lab.closed and lab.hung_up
    report = lab.report().to_dict()
    assert report["injected"] == ["request 2 (tools/call add): close [rule 'tool=add,close']"]
    # Each HTTP session gets its own counts and draws.
    fresh = lab.fresh()
    assert not fresh.closed and fresh.report().to_dict().get("injected", []) == []


# --- served values ---------------------------------------------------------------------------


def test_placeholders_go_out_as_fixed_valid_values_and_secrets_stay_redacted() -> None:
    line = '{"result":{"at":"<TIMESTAMP>","id":"<UUID>","day":"<DAY>","t":"at <TIME>","key":"<REDACTED:env.X>","p":"<HOME>/x"}}'
    served = json.loads(serve_values(line))["result"]
    from datetime import datetime
    from uuid import UUID

    assert datetime.fromisoformat(served["at"]).strftime("%A") == served["day"] == "Wednesday"
    assert UUID(served["id"]).version == 4
    assert served["t"] == "at 12:00:00 AM"
    assert served["key"] == "<REDACTED:env.X>" and served["p"] == "<HOME>/x"
    assert serve_values(line) == serve_values(line)  # the same every run
    assert set(SERVED_VALUES) >= {"<TIMESTAMP>", "<UUID>", "<DAY>"}
    tape = make_tape(("c2s", INIT), ("s2c", res(1, {"now": "<TIMESTAMP>"})))
    assert "2025-01-01T00:00:00Z" in LabEngine(ReplayEngine(tape), LabOptions()).handle(json.dumps(INIT))[0]
    kept = LabEngine(ReplayEngine(tape), LabOptions(serve_placeholders=False)).handle(json.dumps(INIT))[0]
    assert "<TIMESTAMP>" in kept


def test_each_distinct_id_is_served_as_its_own_valid_id_and_a_client_can_send_it_back() -> None:
    # What ci writes for a server that answered two different ids, then the first again (normalize.py).
    from uuid import UUID

    from mcptape.diff.values import same
    from mcptape.volatility.normalize import Normalizer

    first, second = "123e4567-e89b-12d3-a456-426614174000", "9f2c4567-e89b-42d3-a456-426614174001"
    answer = {"made": [first, second], "again": first.upper()}
    normalized = Normalizer().value(answer)
    assert normalized == {"made": ["<UUID>", "<UUID#2>"], "again": "<UUID>"}
    assert Normalizer().value({"made": [first, first]}) == {"made": ["<UUID>", "<UUID>"]}  # the control
    assert same(normalized, {"made": ["<UUID>", "<UUID>"], "again": "<UUID>"})  # the number is not drift

    tape = make_tape(("c2s", INIT), ("s2c", res(1, {"protocolVersion": "2025-06-18", "capabilities": {}})),
                     ("c2s", call(2, "make")), ("s2c", res(2, {"structuredContent": normalized})),
                     ("c2s", call(3, "get", id="<UUID#2>")), ("s2c", res(3, {"structuredContent": {"got": 2}})),
                     ("c2s", call(4, "get", id="<UUID>")), ("s2c", res(4, {"structuredContent": {"got": 1}})))
    lab = LabEngine(ReplayEngine(tape), LabOptions())
    lab.handle(json.dumps(INIT))
    made = json.loads(lab.handle(json.dumps(call(2, "make")))[0])["result"]["structuredContent"]
    one, two = made["made"]
    assert one != two and made["again"] == one and {UUID(one).version, UUID(two).version} == {4}
    # The client sends each id back: each asks for what the tape recorded with that id.
    assert json.loads(lab.handle(json.dumps(call(3, "get", id=two)))[0])["result"]["structuredContent"] == {"got": 2}
    assert json.loads(lab.handle(json.dumps(call(4, "get", id=one)))[0])["result"]["structuredContent"] == {"got": 1}


# --- forks -----------------------------------------------------------------------------------


def test_a_fork_replaces_one_answer_keeps_the_rest_and_is_recognised_against_its_parent() -> None:
    parent = _timed_tape()
    header, events, footer = fork_tape(parent, 2, error=(-32000, "quota"), parent_name="p.tape.jsonl")
    fork = Tape(header=header, events=events, footer={"mcptape": "end", **footer})
    assert header["fork"] == {"parent": "p.tape.jsonl", "parent_crc32": None, "at": 2, "call": "tools/call slow",
                              "change": "error -32000: quota", "later": "kept"}
    assert events[3]["msg"]["error"] == {"code": -32000, "message": "quota"} and events[3]["kind"] == "error"
    assert len(events) == len(parent.events) and events[4:] == parent.events[4:]
    assert event_times(fork) == event_times(parent)
    assert is_fork_of(parent, fork) == header["fork"]
    # Anything else changed: not the declared fork.
    changed = Tape(header=header, events=[*events[:5], res(3, {"content": ["x"]})], footer=fork.footer)
    assert is_fork_of(parent, changed) is None
    assert is_fork_of(fork, parent) is None  # the parent declares no fork

    h2, cut, _ = fork_tape(parent, 2, drop=True, cut=True)
    assert h2["fork"]["later"] == "cut" and cut == parent.events[:3]
    assert is_fork_of(parent, Tape(header=h2, events=cut)) is not None
    _, replaced, _ = fork_tape(parent, 3, result={"content": [{"type": "text", "text": "9"}]})
    assert replaced[5]["msg"]["result"]["content"][0]["text"] == "9" and replaced[5]["params"] == {"name": "add", "arguments": {}}
    with pytest.raises(ConfigError, match="--at 4"):
        fork_tape(parent, 4, drop=True)
    with pytest.raises(ConfigError, match="exactly one"):
        fork_tape(parent, 1, drop=True, error=(1, "x"))
