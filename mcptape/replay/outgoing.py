"""What play sends a client: `Outgoing`, one message's wire line and what routing needs to know of it.

Owns the type only. The engine (engine.py) makes one for each line as it writes it, knowing then
whether the line answers a request and which, so HTTP play (http.py) routes an answer to the
stream of the request it answers, and lab.py finds the answer a fault replaces, without parsing
again what the engine just wrote (or copied from the tape).
"""

from __future__ import annotations

from typing import Any


class Outgoing:
    """One line to send: its wire text, and, if it is a response or an error, the id it answers."""

    __slots__ = ("line", "answer", "id")

    def __init__(self, line: str, answer: bool = False, id: Any = None) -> None:
        self.line = line  # the wire text, without its newline
        self.answer = answer  # a response or an error (to `id`, which may be null)
        self.id = id

    def __repr__(self) -> str:
        return f"Outgoing({self.line!r}, answer={self.answer!r}, id={self.id!r})"


def answering(msg_id: Any, lines: list[str]) -> list[Outgoing]:
    """Lines from the live server (fallback.py's `forward`): whatever came first, then the answer to `msg_id`."""
    if not lines:
        return []
    return [*(Outgoing(line) for line in lines[:-1]), Outgoing(lines[-1], True, msg_id)]
