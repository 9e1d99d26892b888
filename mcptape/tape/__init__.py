"""The tape: format v1 (format.py) and the events it holds (events.py)."""

from mcptape.tape.events import (
    C2S,
    S2C,
    EventBuilder,
    exit_event,
    garbage_event,
    is_message,
    note_event,
    stderr_event,
    wire_text,
)
from mcptape.tape.format import (
    FORMAT_VERSION,
    TAPE_SUFFIX,
    Event,
    Tape,
    TapeWriter,
    make_footer,
    make_header,
    read_tape,
    serialize,
    tape_bytes,
    write_atomic,
)

__all__ = [
    "C2S",
    "FORMAT_VERSION",
    "S2C",
    "TAPE_SUFFIX",
    "Event",
    "EventBuilder",
    "Tape",
    "TapeWriter",
    "exit_event",
    "garbage_event",
    "is_message",
    "make_footer",
    "make_header",
    "note_event",
    "read_tape",
    "serialize",
    "stderr_event",
    "tape_bytes",
    "wire_text",
    "write_atomic",
]
