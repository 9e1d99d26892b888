"""Pure parts of the recorder (record/): line reassembly, secrets in the command, names,
and the writer's frame -> tape logic fed through a real pipe (no server, no relay)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from mcptape.record.relay import FRAME, TAG_C2S, TAG_CTL, TAG_ERR, TAG_S2C
from mcptape.record.stdio import REDACTED, default_name, strip_command_secrets
from mcptape.record.writer import LineAssembler, TapeRecorder
from mcptape.tape.format import TapeWriter, make_header
from mcptape.tape.reader import read_tape

# --------------------------------------------------------------------------------------------
# LineAssembler


def test_lines_split_across_chunks_are_reassembled() -> None:
    asm = LineAssembler()
    assert asm.feed(b'{"a":') == []
    assert asm.feed(b"1}\n{") == [b'{"a":1}']
    assert asm.feed(b'"b":2}\n\n{"c"') == [b'{"b":2}', b""]
    assert asm.pending_bytes == 4
    assert asm.finish() == b'{"c"'
    assert asm.finish() is None


def test_many_lines_in_one_chunk_and_bytes_kept_exactly() -> None:
    asm = LineAssembler()
    data = b"one\r\ntwo\n\xe9\xff three\n"
    assert asm.feed(data) == [b"one\r", b"two", b"\xe9\xff three"]
    assert asm.finish() is None


def test_a_huge_line_in_many_pieces_is_one_line() -> None:
    asm = LineAssembler()
    piece = b"x" * (1 << 20)
    for _ in range(20):
        assert asm.feed(piece) == []
    assert asm.pending_bytes == 20 << 20
    (line,) = asm.feed(b"y\nrest")
    assert len(line) == (20 << 20) + 1 and line.endswith(b"xy")
    assert asm.finish() == b"rest"


# --------------------------------------------------------------------------------------------
# secrets in the server command


@pytest.mark.parametrize(
    ("argv", "clean", "values"),
    [
        (["srv", "--token=abc123"], ["srv", f"--token={REDACTED}"], ["abc123"]),
        (
            ["srv", "--api-key", "k-1", "--port", "80"],
            ["srv", "--api-key", REDACTED, "--port", "80"],
            ["k-1"],
        ),
        (["srv", "--password", "--verbose"], ["srv", "--password", "--verbose"], []),
        (["env", "GITHUB_TOKEN=ghp_x", "srv"], ["env", f"GITHUB_TOKEN={REDACTED}", "srv"], ["ghp_x"]),
        (["srv", "--client-secret", "s3"], ["srv", "--client-secret", REDACTED], ["s3"]),
        (
            ["srv", "--url", "https://me:hunter2@db.example/x?api_key=zz&mode=1"],
            ["srv", "--url", f"https://me:{REDACTED}@db.example/x?api_key={REDACTED}&mode=1"],
            ["hunter2", "zz"],
        ),
        (
            ["python", "server.py", "--port", "8080", "DEBUG=1"],
            ["python", "server.py", "--port", "8080", "DEBUG=1"],
            [],
        ),
        # Names are read as words (redact.secret_name): `author` is not `auth`, `auth-mode` is a setting.
        (
            ["srv", "--author", "Alice", "--auth-mode", "oauth", "AUTHOR_NAME=Alice Smith", "--auth", "u:pw123"],
            ["srv", "--author", "Alice", "--auth-mode", "oauth", "AUTHOR_NAME=Alice Smith", "--auth", REDACTED],
            ["u:pw123"],
        ),
    ],
)
def test_secret_values_are_stripped_from_the_command(
    argv: list[str], clean: list[str], values: list[str]
) -> None:
    got, found = strip_command_secrets(argv)
    assert got == clean
    assert sorted(found.values()) == sorted(values)
    for v in values:
        assert all(v not in a for a in got)


# --------------------------------------------------------------------------------------------
# default session names


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["python", "fixtures/servers/calc_server.py", "--variant", "x"], "calc_server"),
        (["/usr/bin/python3.11", "-m", "mcp_server_time"], "mcp_server_time"),
        (
            ["node", "node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
            "server-everything",
        ),
        (["npx", "-y", "@acme/weather-mcp"], "weather-mcp"),
        (["env", "A_TOKEN=x", "python", "srv.py"], "srv"),
        (["./my server"], "my-server"),
        (["uvx", "mcp-server-git", "--repository", "."], "mcp-server-git"),
    ],
)
def test_default_name(argv: list[str], name: str) -> None:
    assert default_name(argv) == name


# --------------------------------------------------------------------------------------------
# the writer's logic, fed frames through a real pipe


def _record(tmp_path: Path, frames: list[tuple[int, bytes]]) -> tuple[int, Path]:
    path = tmp_path / "t.tape.jsonl"
    writer = TapeWriter(path, make_header("t", server={"command": ["srv"]}))
    r, w = os.pipe()
    recorder = TapeRecorder(writer)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(recorder.run(r)))
    t.start()
    with os.fdopen(w, "wb") as fh:
        for tag, payload in frames:
            fh.write(FRAME.pack(tag, len(payload), time.monotonic()) + payload)
    t.join(30)
    os.close(r)
    return result[0], path


def test_otel_times_are_the_wire_times_the_tape_keeps(tmp_path: Path) -> None:
    """--otel and the footer's timing read one clock: the relay's, stamped in each frame when the
    bytes crossed the wire, not when the writer got to them (here 30 s and 20 s before)."""
    from mcptape.publish.telemetry import WireClock
    from mcptape.tape.timing import footer_times

    exported: list[tuple[Path, WireClock]] = []

    class Trace:  # the TapeTrace interface: what rec's writer calls once the tape is written
        def export(self, tape: Path, clock: WireClock, outlet: object) -> None:
            exported.append((tape, clock))

    path = tmp_path / "t.tape.jsonl"
    recorder = TapeRecorder(TapeWriter(path, make_header("t")), otel=Trace())  # type: ignore[arg-type]
    r, w = os.pipe()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(recorder.run(r)))
    t.start()
    now = time.monotonic()
    frames = [(TAG_C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', now - 30.0),
              (TAG_S2C, b'{"jsonrpc":"2.0","id":1,"result":{}}\n', now - 20.0),
              (*_end(0, "client_closed"), now)]
    with os.fdopen(w, "wb") as fh:
        for tag, payload, clock in frames:
            fh.write(FRAME.pack(tag, len(payload), clock) + payload)
    t.join(30)
    os.close(r)
    assert result == [0] and len(exported) == 1
    tape = read_tape(path)
    timed = exported[0][1].timed(tape.events)
    wall_now = time.time_ns()
    sent, answered = (at for at, ev in timed if ev["kind"] in ("request", "response"))
    assert 29.0e9 < wall_now - sent < 31.0e9  # the wire's instant, not the writer's
    assert abs((answered - sent) - 10.0e9) < 1e6
    ms = footer_times(tape.footer)
    assert ms is not None and ms[0] is not None and ms[1] is not None
    assert abs((ms[1] - ms[0]) * 1e6 - (answered - sent)) < 1e6  # the footer's own gap


def _end(returncode: int | None, reason: str, **extra: str) -> tuple[int, bytes]:
    return TAG_CTL, json.dumps({"returncode": returncode, "reason": reason, **extra}).encode()


def test_frames_become_events_with_echo_and_exit(tmp_path: Path) -> None:
    req = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add"}}\n'
    code, path = _record(
        tmp_path,
        [
            (TAG_C2S, req[:20]),
            (TAG_S2C, b"garbage line\n"),
            (TAG_C2S, req[20:]),
            (TAG_ERR, b"warn: one\nwarn: tw"),
            (TAG_S2C, b'{"jsonrpc":"2.0","id":7,"result":{}}\n'),
            (TAG_ERR, b"o\n"),
            _end(0, "client_closed"),
        ],
    )
    assert code == 0
    t = read_tape(path)
    assert t.complete
    assert [(e["kind"], e.get("dir")) for e in t.events] == [
        ("garbage", "s2c"),
        ("request", "c2s"),
        ("stderr", "s2c"),
        ("response", "s2c"),
        ("stderr", "s2c"),
        ("exit", None),
    ]
    assert t.events[3]["method"] == "tools/call" and t.events[3]["params"] == {"name": "add"}
    assert t.events[4]["text"] == "warn: two"
    assert t.events[-1] == {"kind": "exit", "code": 0}


def test_server_exit_mid_session_notes_unanswered_and_an_unterminated_last_line(tmp_path: Path) -> None:
    code, path = _record(
        tmp_path,
        [
            (TAG_C2S, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash"}}\n'),
            (TAG_S2C, b'{"jsonrpc":"2.0","method":"notifications/message"}'),  # no newline: last words
            _end(-9, "server_exited"),
        ],
    )
    assert code == 0
    t = read_tape(path)
    assert t.complete
    assert [e["kind"] for e in t.events] == ["request", "notification", "note", "exit", "note"]
    assert t.events[2] == {
        "kind": "note",
        "what": "unanswered",
        "detail": [{"dir": "c2s", "id": 1, "method": "tools/call"}],
    }
    assert t.events[3] == {"kind": "exit", "code": None, "signal": "SIGKILL"}
    assert t.events[4] == {"kind": "note", "what": "server_exited_mid_session"}


CUT = b'{"jsonrpc":"2.0","id":1,"res'


def test_no_end_record_means_the_recorder_was_killed(tmp_path: Path) -> None:
    code, path = _record(
        tmp_path,
        [
            (TAG_C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'),
            (TAG_S2C, CUT),  # cut mid-line
        ],
    )
    assert code == 0
    t = read_tape(path)
    assert not t.complete  # no footer: the tape says it was cut short
    assert t.events[0]["kind"] == "request"
    assert t.events[-1] == {
        "kind": "note",
        "what": "recorder_killed",
        "detail": {"partial_bytes": {"s2c": len(CUT)}},
    }


def test_a_writer_far_behind_costs_the_recording_not_the_wire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the backlog bound the relay drops frames, keeps the framing intact and says so."""
    from mcptape.record import relay as proxy

    monkeypatch.setattr(proxy, "TEE_BACKLOG_MAX", 1 << 20)
    r, w = os.pipe()
    tee = proxy._Tee(w)  # nobody reads yet: the pipe fills, then the backlog, then it overflows
    line = b'{"jsonrpc":"2.0","method":"notifications/x","params":{"v":"' + b"y" * 5000 + b'"}}\n'
    for _ in range(400):
        tee.send(TAG_S2C, line)  # never blocks
    assert tee.overflowed
    assert tee.pending_bytes < 1 << 20
    tee.send(TAG_CTL, json.dumps({"returncode": 0, "reason": "client_closed"}).encode())

    path = tmp_path / "o.tape.jsonl"
    recorder = TapeRecorder(TapeWriter(path, make_header("o")))
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(recorder.run(r)))
    t.start()
    tee.finish()
    t.join(60)
    os.close(r)
    tape = read_tape(path)
    assert not tape.complete  # events are missing, so no footer
    kinds = [e["kind"] for e in tape.events]
    assert kinds[-2:] == ["note", "exit"]
    assert tape.events[-2]["what"] == "recording_overflow"
    assert 0 < kinds.count("notification") < 400
    assert set(kinds[:-2]) == {"notification"}  # framing survived: no garbage, no torn lines


# --------------------------------------------------------------------------------------------
# the server's stderr: shown by the writer, scrubbed, in order, never raw


def _fake_github_token() -> str:
    # Built at run time so no token-shaped literal sits in the repository.
    return "ghp_" + "".join(chr(ord("a") + (i * 7) % 26) if i % 3 else str(i % 10) for i in range(36))


def _record_showing_stderr(tmp_path: Path, frames: list[tuple[int, bytes]]) -> tuple[int, Path, bytes]:
    """Like _record, with the stderr relay pointed at a pipe we read: (exit code, tape, shown bytes)."""
    path = tmp_path / "s.tape.jsonl"
    writer = TapeWriter(path, make_header("s", server={"command": ["srv"]}))
    shown_r, shown_w = os.pipe()
    shown = bytearray()
    reader = threading.Thread(target=lambda: shown.extend(_read_all(shown_r)))
    reader.start()
    r, w = os.pipe()
    recorder = TapeRecorder(writer, {"env.MY_SERVICE_TOKEN": "q7Rk2mZp9xLw4Nv8"}, stderr_fd=shown_w)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(recorder.run(r)))
    t.start()
    with os.fdopen(w, "wb") as fh:
        for tag, payload in frames:
            fh.write(FRAME.pack(tag, len(payload), time.monotonic()) + payload)
    t.join(30)
    reader.join(30)  # the recorder closed shown_w when it finished: EOF
    os.close(r)
    os.close(shown_r)
    return result[0], path, bytes(shown)


def _read_all(fd: int) -> bytes:
    out = bytearray()
    while chunk := os.read(fd, 65536):
        out += chunk
    return bytes(out)


def test_stderr_is_shown_scrubbed_line_by_line_with_the_partial_last_line(tmp_path: Path) -> None:
    token = _fake_github_token()
    code, path, shown = _record_showing_stderr(
        tmp_path,
        [
            (TAG_ERR, b"starting up\nusing tok"),
            (TAG_ERR, b"en " + token[:10].encode()),  # the token arrives split across chunks
            (TAG_ERR, token[10:].encode() + b" now\r\nraw \xff byte\n"),
            (TAG_S2C, b'{"jsonrpc":"2.0","method":"notifications/x"}\n'),
            (TAG_ERR, b"key is q7Rk2mZp9xLw4Nv8 (from env)\nbye without newline q7Rk2mZp9xLw4Nv8"),
            _end(0, "client_closed"),
        ],
    )
    assert code == 0
    assert token.encode() not in shown and b"q7Rk2mZp9xLw4Nv8" not in shown
    lines = shown.split(b"\n")
    assert lines[0] == b"starting up"
    assert lines[1].startswith(b"using token <REDACTED:github-token") and lines[1].endswith(b" now")
    assert lines[2] == b"raw \\xff byte"  # a byte that is not UTF-8 is shown as an escape, never raw
    assert lines[3] == b"key is <REDACTED:env.MY_SERVICE_TOKEN> (from env)"
    assert lines[4] == b"bye without newline <REDACTED:env.MY_SERVICE_TOKEN>"  # flushed at the end
    assert lines[5].startswith(b"mcptape rec: ") and b"events ->" in lines[5]  # after the last line
    texts = [e["text"] for e in read_tape(path).events if e["kind"] == "stderr"]
    # the tape holds the very same scrubbed lines
    assert [t.encode("utf-8") for t in texts[:2]] == [lines[0], lines[1].rstrip(b"\r")]
    assert texts[3:] == [lines[3].decode(), lines[4].decode()]
    assert token not in path.read_text(encoding="utf-8")


def test_an_overflow_drops_wire_frames_but_keeps_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stderr reaches the user only through the writer, so a backlog overflow must not eat it."""
    from mcptape.record import relay as proxy

    monkeypatch.setattr(proxy, "TEE_BACKLOG_MAX", 1 << 20)
    r, w = os.pipe()
    tee = proxy._Tee(w)
    line = b'{"jsonrpc":"2.0","method":"notifications/x","params":{"v":"' + b"y" * 5000 + b'"}}\n'
    for i in range(400):
        tee.send(TAG_S2C, line)
        if i % 50 == 0:
            tee.send(TAG_ERR, b"progress %d\n" % i)
    assert tee.overflowed
    tee.send(TAG_ERR, b"after the overflow\n")
    tee.send(TAG_CTL, json.dumps({"returncode": 0, "reason": "client_closed"}).encode())

    path = tmp_path / "o.tape.jsonl"
    shown_r, shown_w = os.pipe()
    shown = bytearray()
    reader = threading.Thread(target=lambda: shown.extend(_read_all(shown_r)))
    reader.start()
    recorder = TapeRecorder(TapeWriter(path, make_header("o")), stderr_fd=shown_w)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(recorder.run(r)))
    t.start()
    tee.finish()
    t.join(60)
    reader.join(60)
    os.close(r)
    os.close(shown_r)
    expected = [b"progress %d" % i for i in range(0, 400, 50)] + [b"after the overflow"]
    assert [ln for ln in shown.split(b"\n") if not ln.startswith(b"mcptape")][: len(expected)] == expected
    tape = read_tape(path)
    assert not tape.complete
    assert any(e.get("what") == "recording_overflow" for e in tape.events)
