"""Tape format v2: deterministic bytes, cut-short tapes, versioning, events built from wire lines."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mcptape.errors import TapeError
from mcptape.jsonrpc import dumps
from mcptape.tape import events as events_module
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import EventBuilder, exit_event, wire_text
from mcptape.tape.format import TapeWriter, make_header, serialize, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.tape.seal import check


def _session(text: bytes = b"caf\xc3\xa9") -> list[dict]:
    b = EventBuilder()
    return [
        b.line("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2}}}'),
        b.line("s2c", b'{"result":{"content":[{"type":"text","text":"' + text + b'"}]},"jsonrpc":"2.0","id":1}'),
        b.line("s2c", b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}'),
        exit_event(-9),
    ]


def test_same_session_gives_same_bytes() -> None:
    header = make_header("calc", server={"command": ["calc"]})
    assert tape_bytes(header, _session()) == tape_bytes(header, _session())
    # Positive control: one changed character of a result is that line changed (and the footer's checksum).
    same, changed = (tape_bytes(header, s).split(b"\n") for s in (_session(), _session(b"cafe")))
    assert [n for n, (x, y) in enumerate(zip(same, changed, strict=True)) if x != y] == [2, 5]


def test_response_echoes_its_request_and_keeps_raw_only_when_needed() -> None:
    b = EventBuilder()
    b.line("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}')
    compact = b.line("s2c", b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert compact["method"] == "tools/call" and compact["params"] == {"name": "add"}
    assert "raw" not in compact
    b.line("c2s", b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
    spaced = b.line("s2c", b'{"jsonrpc": "2.0", "id": 2, "result": {}}')
    assert spaced["raw"] == '{"jsonrpc": "2.0", "id": 2, "result": {}}'
    assert wire_text(spaced) == spaced["raw"]


def test_server_request_ids_do_not_collide_with_client_ids() -> None:
    b = EventBuilder()
    b.line("c2s", b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}')
    b.line("s2c", b'{"jsonrpc":"2.0","id":0,"method":"roots/list"}')
    client_answer = b.line("c2s", b'{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}')
    server_answer = b.line("s2c", b'{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}')
    assert client_answer["method"] == "roots/list"
    assert server_answer["method"] == "tools/list"


def test_garbage_and_non_utf8_lines_are_kept() -> None:
    b = EventBuilder()
    assert b.line("s2c", b"hello") == {"kind": "garbage", "dir": "s2c", "text": "hello", "bytes": 5}
    latin = b.line("s2c", b"caf\xe9")
    assert latin["kind"] == "garbage" and latin["b64"] == "Y2Fm6Q=="
    assert b.take_notes() == []  # garbage that answers nothing is just garbage


def test_an_answer_that_is_not_utf8_is_garbage_and_a_note_that_closes_its_request() -> None:
    b = EventBuilder()
    b.line("c2s", b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"latin1"}}')
    b.line("c2s", b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
    event = b.line("s2c", b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"caf\xe9"}]}}')
    assert event["kind"] == "garbage" and "b64" in event
    assert b.take_notes() == [{"kind": "note", "what": "garbled_answer", "detail": {
        "id": 3, "method": "tools/call", "error": "not UTF-8: byte 0xe9 at offset 71; recorded as garbage"}}]
    assert b.take_notes() == []  # taken once
    assert [k for _, k, _ in b.open_requests()] == ["4"]  # answered, if badly: not "unanswered" at the end
    b.line("s2c", b'{"jsonrpc":"2.0","id":99,"result":{"t":"\xff"}}')  # answers nothing open
    assert b.take_notes() == []


def test_a_line_nested_past_max_depth_is_a_message_with_raw_and_a_note() -> None:
    b = EventBuilder()
    request = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deep"}}'
    b.line("c2s", request)
    line = b'{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"v":' + b"[" * 500 + b"0" + b"]" * 500 + b"}}}"
    event, text = b.line_and_text("s2c", line)
    assert event["kind"] == "response" and event["method"] == "tools/call" and event["params"] == {"name": "deep"}
    assert event["raw"] == line.decode() and wire_text(event) == line.decode()
    assert text == dumps(event) and json.loads(text) == event  # a tape line any reader parses
    (note,) = b.take_notes()
    assert note["what"] == "deep_json" and "nested 503 levels" in note["detail"] and "id 1" in note["detail"]
    # Without `raw` (normalization dropped it), the wire text is rebuilt from the markers.
    assert wire_text({k: v for k, v in event.items() if k != "raw"}) == line.decode()
    shallow = b'{"jsonrpc":"2.0","id":2,"result":{"v":' + b"[" * 60 + b"0" + b"]" * 60 + b"}}"
    assert "raw" not in b.line("s2c", shallow) and b.take_notes() == []


# Values whose serialization splicing must get exactly right: escapes, raw UTF-8, U+2028, and
# lone surrogates (they make dumps ASCII-escape a whole line, so a part of it cannot be spliced).
_NASTY: list[Any] = [1, 0, -3, 10**20, 1.5, "a", 'q"uote', "back\\slash", "é", "\u2028", "\ud800", "日本", None, True]


def _nasty_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        return {rng.choice(["a", "msg", "params", "é", "\ud801"]): _nasty_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if depth < 2 and roll < 0.4:
        return [_nasty_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice(_NASTY)


def _nasty_line(rng: random.Random, ids: list[Any]) -> bytes:
    """A random stdout/stdin line: mostly JSON-RPC in either key order, compact or spaced."""
    roll = rng.random()
    if roll < 0.05:
        return rng.choice([b"not json", b"caf\xe9", b"[1,2]", b'{"jsonrpc":"2.0"}', b"{}"])
    msg_id = rng.choice(ids) if ids and rng.random() < 0.6 else rng.choice(_NASTY[:11])
    if roll < 0.5:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": rng.choice(["tools/call", "pïng", "\udc00x"])}
        if rng.random() < 0.1:
            del msg["id"]  # a notification
        if rng.random() < 0.8:
            msg["params"] = _nasty_value(rng) if rng.random() < 0.5 else {"name": "echo", "arguments": {"t": _nasty_value(rng)}}
        if rng.random() < 0.2:  # params not the last member
            msg = dict(reversed(list(msg.items())))
        if "id" in msg:
            ids.append(msg_id)
    else:
        key = "result" if rng.random() < 0.8 else "error"
        msg = {"jsonrpc": "2.0", "id": msg_id, key: _nasty_value(rng)}
        if rng.random() < 0.2:
            msg = dict(reversed(list(msg.items())))
    text = dumps(msg) if rng.random() < 0.7 else json.dumps(msg, ensure_ascii=rng.random() < 0.5)
    return text.encode("utf-8", "surrogatepass") + (b"\r" if rng.random() < 0.1 else b"")  # a surrogate: not UTF-8


def _reference_dumps(obj: Any) -> str:
    """jsonrpc.dumps as specified, written out here so that a change to it cannot hide here."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":"))
    return text


def test_line_and_text_is_the_compact_json_of_the_event_line_builds() -> None:
    """The spliced text rec writes must be exactly dumps(event), on any line, in any session."""
    rng = random.Random(20261129)
    spliced = 0
    for _ in range(300):
        plain, splicing = EventBuilder(), EventBuilder()
        ids: list[Any] = []
        for _ in range(rng.randint(1, 12)):
            direction = rng.choice(["c2s", "s2c"])
            line = _nasty_line(rng, ids)
            event, text = splicing.line_and_text(direction, line)
            assert event == plain.line(direction, line)
            assert text == _reference_dumps(event), line
            spliced += "msg" in event
    assert spliced > 1000  # the generator must reach the message path, not only garbage


def test_a_compact_message_is_serialized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event's text is spliced, not made by a second dumps over the whole event."""
    b = EventBuilder()
    calls: list[Any] = []
    def counting(obj: Any) -> str:
        calls.append(obj)
        return dumps(obj)

    monkeypatch.setattr(events_module, "dumps", counting)
    b.line_and_text("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2}}}')
    b.line_and_text("s2c", b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
    b.line_and_text("s2c", b'{"jsonrpc": "2.0", "method": "notifications/message"}')  # raw kept, still spliced
    assert calls == []


def test_exit_event_names_the_signal() -> None:
    assert exit_event(-9) == {"kind": "exit", "code": None, "signal": "SIGKILL"}
    assert exit_event(3) == {"kind": "exit", "code": 3}


def test_round_trip_and_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.tape.jsonl"
    write_atomic(path, tape_bytes(make_header("calc"), _session()))
    tape = read_tape(path)
    assert tape.complete and len(tape.events) == 4
    assert tape.line_of(0) == 2 and tape.events[1]["msg"]["result"]["content"][0]["text"] == "café"
    assert "é" in path.read_text(encoding="utf-8")  # raw UTF-8, reviewable


def test_cut_short_tape_is_readable_up_to_the_last_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.tape.jsonl"
    writer = TapeWriter(path, make_header("calc"))
    for ev in _session()[:2]:
        writer.write(ev)
    writer.abandon()
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"notification","dir":"s2c","msg":{"jso')  # the recorder died mid-line
    tape = read_tape(path)
    assert not tape.complete and len(tape.events) == 2


def test_held_lines_reach_the_file_whole_on_flush_close_or_abandon(tmp_path: Path) -> None:
    """rec's writer holds a batch of lines and writes them in one go; the tape reads the same (only
    its seal lines, one per flush, sit elsewhere), and both are sealed."""
    header = make_header("calc")
    events = [*_session(), exit_event(0)]
    streamed, held = tmp_path / "streamed.tape.jsonl", tmp_path / "held.tape.jsonl"
    writer = TapeWriter(streamed, header)
    for ev in events:
        writer.write(ev)
    writer.close()
    writer = TapeWriter(held, header)
    writer.write_line(serialize(events[0]), flush=False)
    writer.write_line(serialize(events[1]), flush=False)
    assert read_tape(held).events == [] and writer.count == 2  # held: counted, not yet in the file
    writer.flush()
    assert read_tape(held).events == events[:2]
    for ev in events[2:]:
        writer.write_line(serialize(ev), flush=False)
    writer.close()  # writes what is held, then the footer over all of it
    assert read_tape(held).events == read_tape(streamed).events == events
    assert held.read_bytes().count(b'{"mcptape":"seal"') == 1  # one flush before close; close seals with the footer
    assert streamed.read_bytes().count(b'{"mcptape":"seal"') == len(events)  # write() flushes
    assert check(held.read_bytes()).state == check(streamed.read_bytes()).state == "sealed"

    cut = tmp_path / "cut.tape.jsonl"
    writer = TapeWriter(cut, header)
    for ev in events[:3]:
        writer.write_line(serialize(ev), flush=False)
    writer.abandon()  # killed: what is held still lands, without a footer
    tape = read_tape(cut)
    assert tape.events == events[:3] and not tape.complete


def test_unknown_format_version_says_how_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "future.tape.jsonl"
    path.write_text(json.dumps({"mcptape": "tape", "format": 9, "version": "9.0"}) + "\n", encoding="utf-8")
    with pytest.raises(TapeError, match="re-record it with mcptape"):
        read_tape(path)


def test_not_a_tape(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a":1}\n', encoding="utf-8")
    with pytest.raises(TapeError, match="not an mcptape tape"):
        read_tape(path)
    with pytest.raises(TapeError, match="cannot read"):
        read_tape(tmp_path / "missing.jsonl")


def test_unknown_fields_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.tape.jsonl"
    header = make_header("calc", future_field={"x": 1})
    events = [{"kind": "side_effect", "dir": "s2c", "new_field": [1, 2]}]
    write_atomic(path, tape_bytes(header, events))
    tape = read_tape(path)
    assert tape.header["future_field"] == {"x": 1} and tape.events[0]["new_field"] == [1, 2]


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "golden" / "g.tape.jsonl"
    write_atomic(path, b"one\n")
    write_atomic(path, b"two\n")
    assert path.read_bytes() == b"two\n"
    assert [p.name for p in path.parent.iterdir()] == ["g.tape.jsonl"]


def test_corrupt_line_in_the_middle_is_named(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.tape.jsonl"
    good = tape_bytes(make_header("calc"), _session()).split(b"\n")
    good.insert(2, b"1,2")  # valid JSON fragments: must not shift the events after it
    path.write_bytes(b"\n".join(good))
    with pytest.raises(TapeError, match=r"corrupt.tape.jsonl:3: line is not a JSON object"):
        read_tape(path)


def test_blank_lines_keep_line_numbers_true(tmp_path: Path) -> None:
    path = tmp_path / "blank.tape.jsonl"
    lines = tape_bytes(make_header("calc"), _session()).split(b"\n")
    lines.insert(1, b"")
    path.write_bytes(b"\n".join(lines))
    tape = read_tape(path)
    assert tape.complete and tape.line_of(0) == 3 and tape.events[0]["kind"] == "request"
