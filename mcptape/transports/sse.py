"""Server-sent events, as streamable HTTP and HTTP+SSE frame MCP messages: parse a stream, write an event.

Stdlib only: the HTTP transport (http.py, with httpx), `rec --listen` (record/http.py) and
`play --listen` (replay/http.py, which must not import httpx) share it. Knows no MCP method.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

SESSION_HEADER = "Mcp-Session-Id"  # a legacy streamable-HTTP session's id, on every request after initialize


@dataclass
class SseEvent:
    """One dispatched server-sent event. `data` lines are joined with "\\n" as the spec says."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseParser:
    """Incremental text/event-stream parser: feed bytes as they arrive, get whole events back.

    Works on bytes so a UTF-8 character or a CRLF split across two chunks is reassembled
    before decoding; a lone CR at the end of a chunk is held back because the next chunk may
    start with the LF that completes it.
    """

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self.last_event_id: str | None = None  # what a client resuming the stream sends as Last-Event-ID
        self.retry: int | None = None  # the server's last `retry` (ms): how long to wait before resuming
        self.dispatched = 0  # events dispatched so far, priming events (no data) included

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buf += chunk
        events: list[SseEvent] = []
        for line in self._lines():
            ev = self._line(line)
            if ev is not None:
                events.append(ev)
        return events

    def _lines(self) -> Iterator[bytes]:
        buf = self._buf
        start = 0
        n = len(buf)
        i = 0
        while i < n:
            c = buf[i]
            if c == 0x0A:  # LF
                yield buf[start:i]
                i += 1
                start = i
            elif c == 0x0D:  # CR, CRLF
                if i + 1 == n:
                    break  # maybe half of a CRLF: wait for the next chunk
                yield buf[start:i]
                i += 2 if buf[i + 1] == 0x0A else 1
                start = i
            else:
                nl = min((p for p in (buf.find(b"\n", i), buf.find(b"\r", i)) if p >= 0), default=n)
                i = nl
        self._buf = buf[start:]

    def _line(self, raw: bytes) -> SseEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            return None  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            # The reconnection time is set as the field is read (the SSE spec), whatever the event.
            self._retry = self.retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
        if self._data or self._id is not None:
            self.dispatched += 1
        data = "\n".join(self._data)
        if not data.strip():
            # Blank data carries no message: MCP servers send such events only to prime
            # resumption with an id (a browser would dispatch them; we have nothing to deliver).
            self._data, self._event, self._id, self._retry = [], "", None, None
            return None
        ev = SseEvent(data=data, event=self._event or "message", id=self._id, retry=self._retry)
        self._data, self._event, self._id, self._retry = [], "", None, None
        return ev


def format_sse(data: str, *, event: str = "message", event_id: str | None = None) -> bytes:
    """One SSE event as bytes (multi-line data split into data lines)."""
    parts = []
    if event != "message":
        parts.append(f"event: {event}\n")
    else:
        parts.append("event: message\n")
    if event_id is not None:
        parts.append(f"id: {event_id}\n")
    for line in data.split("\n"):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode("utf-8")
