"""Tape format v1: deterministic bytes, cut-short tapes, versioning, events built from wire lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcptape.errors import TapeError
from mcptape.tape import (
    EventBuilder,
    TapeWriter,
    exit_event,
    make_header,
    read_tape,
    tape_bytes,
    wire_text,
    write_atomic,
)


def _session() -> list[dict]:
    b = EventBuilder()
    return [
        b.line("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2}}}'),
        b.line("s2c", b'{"result":{"content":[{"type":"text","text":"caf\xc3\xa9"}]},"jsonrpc":"2.0","id":1}'),
        b.line("s2c", b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}'),
        exit_event(-9),
    ]


def test_same_session_gives_same_bytes() -> None:
    header = make_header("calc", server={"command": ["calc"]})
    assert tape_bytes(header, _session()) == tape_bytes(header, _session())


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
