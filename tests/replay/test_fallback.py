"""What --fallback-url appends to a tape (replay/fallback.py's append_recording): the live run as the tape numbers sessions."""

from __future__ import annotations

from typing import Any

from mcptape.replay.fallback import _in_sessions_of
from mcptape.tape.format import Tape, make_header


def test_a_live_run_recorded_by_rec_listen_follows_the_sessions_of_the_tape_it_is_appended_to() -> None:
    live: list[dict[str, Any]] = [{"kind": "request", "dir": "c2s", "id": 0, "method": "initialize", "msg": {}, "session": 1},
            {"kind": "response", "dir": "s2c", "id": 0, "method": "initialize", "msg": {}, "session": 1, "sse": True},
            {"kind": "note", "what": "cors", "detail": {"cors": "answer", "headers": {}}}]
    with_sessions = Tape(header=make_header("t", transport="http", sessions=True),
                         events=[{"kind": "request", "dir": "c2s", "id": 0, "method": "ping", "msg": {}, "session": 7}])
    assert [ev.get("session") for ev in _in_sessions_of(with_sessions, live)] == [8, 8, None]  # its own session 8
    plain = Tape(header=make_header("t"), events=[])  # format 2: no session to follow, no marks it would not read
    assert [sorted(ev) for ev in _in_sessions_of(plain, live)[:2]] == [["dir", "id", "kind", "method", "msg"]] * 2
