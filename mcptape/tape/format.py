"""Tape format v2: JSONL with a header line, one event per line, and a footer marking a clean end.

Owns the bytes of a tape: serialization (deterministic: fixed key order, no wall-clock times,
raw UTF-8), the header and footer, and writing (streamed and flushed per event or batch for
rec, whole for golden tapes). Reading is reader.py's, atomic file writes atomic.py's, what an
event *means* events.py's.

    {"mcptape":"tape","format":2,"version":"0.1.0","name":"calc","transport":"stdio",...}  header
    {"kind":"request","dir":"c2s","id":1,"method":"tools/call","msg":{...}}               events
    {"kind":"response","dir":"s2c","id":1,"method":"tools/call","params":{...},"msg":{...}}
    {"mcptape":"end","events":2,"sha256":"4a1c…","lines":"Qx3a…"}                          footer

A tape without its footer was cut short (crash, kill); it is still readable up to the last
complete line, and `Tape.complete` says so. Fields a reader does not know are kept.

The footer's `sha256` covers every byte before the footer line, and a streamed (rec) tape has
a seal line after each flush: seal.py owns both and says what they prove. A tape whose digest
matches is, byte for byte, what our writer wrote: then every line is the compact serialization
of its event, which lets play send a recorded message's bytes without parsing them
(reader.written_verbatim, reader.TapeStream). Format 1 tapes (a crc32 in the footer) still read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mcptape.jsonrpc import dumps
from mcptape.mcp import meta_version
from mcptape.tape.seal import Sealer
from mcptape.version import __version__

FORMAT_VERSION = 2
# Format 3: format 2 whose message events may carry `session`, the HTTP session they crossed in (rec
# --listen: several clients in one tape, each numbering its requests from 0). An older reader that
# ignored the field would pair one session's answers with another's requests, so such a tape says
# format 3 and older readers refuse it ("re-record it with mcptape X") instead of misreading it.
SESSIONS_FORMAT = 3
READABLE_FORMATS = (1, FORMAT_VERSION, SESSIONS_FORMAT)  # format 1: the same lines, a crc32 footer, no seal lines
TAPE_SUFFIX = ".tape.jsonl"

Event = dict[str, Any]


def make_header(name: str, *, transport: str = "stdio", sessions: bool = False, **fields: Any) -> dict[str, Any]:
    """A header line: format version first so any reader can refuse what it does not know
    (`sessions`: the events may carry `session`, SESSIONS_FORMAT)."""
    header: dict[str, Any] = {
        "mcptape": "tape",
        "format": SESSIONS_FORMAT if sessions else FORMAT_VERSION,
        "version": __version__,
        "name": name,
        "transport": transport,
    }
    header.update({k: v for k, v in fields.items() if v is not None})
    return header


def make_footer(event_count: int, sealer: Sealer | None = None, **fields: Any) -> dict[str, Any]:
    """A footer line; `sealer` has seen every byte of the tape before it (seal.py: sha256, lines)."""
    footer: dict[str, Any] = {"mcptape": "end", "events": event_count}
    footer.update({k: v for k, v in fields.items() if v is not None})
    if sealer is not None:
        footer.update(sealer.footer_fields())
    return footer


def serialize(line: dict[str, Any]) -> bytes:
    """One tape line as bytes, newline included. Key order is the producer's (fixed by design)."""
    return (dumps(line) + "\n").encode("utf-8")


@dataclass
class Tape:
    """A tape read from disk: header, events in order, footer (None if cut short)."""

    header: dict[str, Any]
    events: list[Event]
    footer: dict[str, Any] | None = None
    path: Path | None = None
    # 1-based line number in the file of each event, for annotations and error messages.
    event_lines: list[int] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.footer is not None

    @property
    def name(self) -> str:
        return str(self.header.get("name") or (self.path.name if self.path else "tape"))

    @property
    def protocol(self) -> str | None:
        """Negotiated protocol version: the header's, else read off the handshake.

        Legacy: the `initialize` result's protocolVersion (it wins: a session that initialized is
        legacy, whatever a discover probe before it got). 2026-07-28 (no handshake): the version
        the client's requests carry in `_meta` — the answered `server/discover`'s first, else the
        first request that has one (a tape recorded without discover).
        """
        if self.header.get("protocol"):
            return str(self.header["protocol"])
        discovered: str | None = None
        stamped: str | None = None
        for ev in self.events:
            kind, method = ev.get("kind"), ev.get("method")
            if kind == "response" and method == "initialize":
                result = ev.get("msg", {}).get("result")
                version = result.get("protocolVersion") if isinstance(result, dict) else None  # a server may answer `true`
                return str(version) if version else None
            if kind == "response" and method == "server/discover" and discovered is None:
                discovered = meta_version(ev.get("params"))
            elif stamped is None and kind == "request" and ev.get("dir") == "c2s" and method != "server/discover":
                stamped = meta_version((ev.get("msg") or {}).get("params"))
        return discovered or stamped

    def line_of(self, index: int) -> int:
        return self.event_lines[index] if index < len(self.event_lines) else index + 2


class TapeWriter:
    """Streams a tape to disk in whole lines, flushed as they come (or a batch at a time, see
    write_line), so a crash leaves a readable prefix; each flush ends with a seal line (seal.py)
    written with the batch, so that prefix verifies up to its last complete event."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.count = 0
        data = serialize(header)
        self._fh.write(data)
        self._fh.flush()
        self._sealer = Sealer()  # of everything written so far, for the seal lines and the footer
        self._sealer.add(data)
        self._held: list[bytes] = []  # lines written with flush=False, not yet in the file

    def write(self, event: Event) -> None:
        self.write_line(serialize(event))

    def write_line(self, data: bytes, *, flush: bool = True) -> None:
        """Write one event already serialized (newline included), e.g. by Redactor.line_bytes.

        With flush=False the line is held until the next flush(), which writes every held line
        in one system call: rec's writer flushes once per batch read off the tee, not per line.
        """
        self._held.append(data)
        self._sealer.add(data)
        self.count += 1
        if flush:
            self.flush()

    def flush(self, *, seal: bool = True) -> None:
        if not self._held:
            return
        if seal:  # the footer that follows a last flush seals it anyway
            self._held.append(self._sealer.seal_line(self.count))
        data = b"".join(self._held)
        self._held.clear()
        self._fh.write(data)
        self._fh.flush()

    def close(self, **footer_fields: Any) -> None:
        if self._fh.closed:
            return
        self.flush(seal=False)
        self._fh.write(serialize(make_footer(self.count, self._sealer, **footer_fields)))
        self._fh.flush()
        self._fh.close()

    def abandon(self) -> None:
        """Close without a footer: the tape stays marked as cut short (held lines still written)."""
        if not self._fh.closed:
            try:
                self.flush()
            finally:
                self._fh.close()


def tape_bytes(header: dict[str, Any], events: Iterable[Event], **footer_fields: Any) -> bytes:
    """The whole tape as bytes: what write_tape_atomic writes and what redaction verifies."""
    parts = [serialize(header)]
    sealer = Sealer()
    sealer.add(parts[0])
    for ev in events:
        parts.append(serialize(ev))
        sealer.add(parts[-1])
    parts.append(serialize(make_footer(len(parts) - 1, sealer, **footer_fields)))
    return b"".join(parts)  # one copy of a tape that may be large
