"""Hostile tapes: a message line whose `msg` is not an object is an unreadable tape (exit 3, file:line).

Play says so before it serves anything (not when the line's batch is parsed mid-session, nor by
sending `"notadict"` to the client as the server's answer); show and diff say the same.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcptape.tape.format import FORMAT_VERSION
from tests.conftest import mcptape_command
from tests.replay.test_engine import _long_tape, call, req


@pytest.mark.parametrize("value", ['"notadict"', "7", "[1,2]", "null"])
@pytest.mark.parametrize("where", [3, 401])  # the first answer, and one far into a streamed tape
def test_a_message_whose_msg_is_not_an_object_makes_the_tape_unplayable_up_front(
    tmp_path: Path, value: str, where: int
) -> None:
    path = tmp_path / "odd.tape.jsonl"
    _long_tape(path, 300)
    lines = path.read_bytes().split(b"\n")
    event = json.loads(lines[where - 1])
    assert event["kind"] in ("request", "response")
    head = json.dumps({k: v for k, v in event.items() if k not in ("msg", "raw")}, separators=(",", ":"))
    lines[where - 1] = head[:-1].encode() + b',"msg":' + value.encode() + b"}"
    path.write_bytes(b"\n".join(lines))
    init = json.dumps(req(0, "initialize", {"protocolVersion": "2025-06-18"})) + "\n"
    late = json.dumps(call(1, "add", a=1, b=1)) + "\n"
    # Edited by hand (its seal no longer matches): read as such, so the reader's own check is what speaks.
    proc = subprocess.run(mcptape_command("play", str(path), "--allow-edited"), input=(init + late).encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert f"{path}:{where}: a {event['kind']} event whose msg is ".encode() in proc.stderr
    assert proc.stdout == b""  # refused before serving: nothing reached the client
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
    for command in (("show", str(path)), ("diff", str(path), str(path), "--allow-edited"), ("ls", str(tmp_path))):
        other = subprocess.run(mcptape_command(*command), capture_output=True, timeout=60)
        assert b"Traceback" not in other.stderr and b"internal error" not in other.stderr, command
        if command[0] != "ls":  # ls lists what it can read and names what it cannot
            assert other.returncode == 3, (command, other.stderr)
            assert f"{path}:{where}: a {event['kind']} event".encode() in other.stderr, command


def test_the_same_tape_with_an_object_msg_plays(tmp_path: Path) -> None:
    path = tmp_path / "fine.tape.jsonl"
    _long_tape(path, 300)
    init = json.dumps(req(0, "initialize", {"protocolVersion": "2025-06-18"})) + "\n"
    proc = subprocess.run(mcptape_command("play", str(path)), input=init.encode(), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["result"] == {"ok": 1}


def test_a_header_whose_format_is_a_quoted_number_says_so(tmp_path: Path) -> None:
    path = tmp_path / "quoted.tape.jsonl"
    _long_tape(path, 1)
    lines = path.read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b'"format":%d' % FORMAT_VERSION, b'"format":"%d"' % FORMAT_VERSION)
    path.write_bytes(b"\n".join(lines))
    proc = subprocess.run(mcptape_command("show", str(path)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert f'{path}:1: the header\'s "format" is the string \'{FORMAT_VERSION}\', and the tape format is a number' in proc.stderr
    assert f'write "format":{FORMAT_VERSION} (no quotes)' in proc.stderr


@pytest.mark.parametrize("kind", ['{"a":1}', "[1]", "7"])
def test_an_event_whose_kind_is_not_a_name_is_an_unreadable_tape(tmp_path: Path, kind: str) -> None:
    # Found by the fuzz campaign (tape seed 5054): show, ls, diff crashed hashing it.
    path = tmp_path / "odd.tape.jsonl"
    _long_tape(path, 3)
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"kind":"request"', b'"kind":' + kind.encode(), 1)
    path.write_bytes(b"\n".join(lines))
    for command in (("show", str(path)), ("diff", str(path), str(path), "--allow-edited"),
                    ("play", str(path), "--allow-edited")):
        proc = subprocess.run(mcptape_command(*command), input=b"", capture_output=True, timeout=60)
        assert proc.returncode == 3, (command, proc.stderr)
        assert f"{path}:5: an event whose kind is".encode() in proc.stderr, command
    listed = subprocess.run(mcptape_command("ls", "--json", str(tmp_path)), capture_output=True, timeout=60)
    assert listed.returncode == 0 and b"an event whose kind is" in listed.stdout


@pytest.mark.parametrize(("key", "value"), [("method", '["tools/list"]'), ("dir", '{"a":1}')])
def test_an_event_whose_method_or_dir_is_not_a_name_is_an_unreadable_tape(tmp_path: Path, key: str, value: str) -> None:
    # An edited tape read with --allow-edited: diff ended as "internal error in diff: unhashable type:
    # 'list'" in its pagination merge; said here with the line, as for `kind`.
    path = tmp_path / "odd.tape.jsonl"
    _long_tape(path, 3)
    lines = path.read_bytes().split(b"\n")
    event = json.loads(lines[4])
    lines[4] = lines[4].replace(f'"{key}":{json.dumps(event[key])}'.encode(), f'"{key}":{value}'.encode(), 1)
    path.write_bytes(b"\n".join(lines))
    for command in (("diff", str(path), str(path), "--allow-edited"), ("show", str(path)),
                    ("play", str(path), "--allow-edited")):
        proc = subprocess.run(mcptape_command(*command), input=b"", capture_output=True, timeout=60)
        assert proc.returncode == 3, (command, proc.stderr)
        assert f"{path}:5: an event whose {key} is".encode() in proc.stderr, command
