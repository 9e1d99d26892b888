"""What one replay did: `ReplayReport` (answered, misses, --lenient substitutions, calls answered
live, recorded calls never asked, warnings) and its exit code, and `Miss`, one request the tape
could not answer exactly. Owns the report's wording and its JSON form (`play --report`); what
counts as a miss is the engine's (engine.py), printing it the command's (commands/play.py).
"""

from __future__ import annotations

from typing import Any

from mcptape.errors import EXIT_OK, EXIT_OUTPUT_DRIFT


class Miss:
    """A live request the tape could not answer exactly (or a client answer that diverged)."""

    __slots__ = ("method", "call", "why", "id", "substituted")

    def __init__(self, method: str, call: str, why: str, id: Any = None, substituted: str | None = None) -> None:
        self.method = method
        self.call = call  # the live call, described
        self.why = why  # the near-miss explanation sent to the client
        self.id = id
        self.substituted = substituted  # --lenient: the recorded call answered instead

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Miss) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Miss({self.to_dict()!r})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"method": self.method, "call": self.call, "why": self.why, "id": self.id}
        if self.substituted is not None:
            d["substituted"] = self.substituted
        return d


class ReplayReport:
    """What a replay answered, missed and left unused; exit 0 clean, 1 misses."""

    def __init__(self, tape: str) -> None:
        self.tape = tape
        self.answered = 0
        self.misses: list[Miss] = []
        self.substitutions: list[Miss] = []
        self.forwarded: list[str] = []  # --fallback: calls answered live (and recorded)
        self.unused: list[str] = []
        self.warnings: list[str] = []
        self.refused: list[str] = []  # handshakes answered by a refusal play made up, not the tape
        self.handshake_answered = False  # an initialize or server/discover answered from the tape

    @property
    def only_refused(self) -> bool:
        """The client was refused a handshake by play and never got one from the tape after."""
        return bool(self.refused) and not self.handshake_answered

    @property
    def exit_code(self) -> int:
        """0 every request answered by its own recording; 1 a miss, a --lenient substitution
        (the client got an answer, but one recorded for other arguments), or only a made-up refusal."""
        return EXIT_OUTPUT_DRIFT if self.misses or self.substitutions or self.only_refused else EXIT_OK

    def render(self) -> str:
        """A short plain-text report for stderr."""
        verdict = "clean" if not self.misses else f"{len(self.misses)} miss(es)"
        if self.only_refused:
            verdict += f"; {', '.join(self.refused)} answered only by a refusal play made up (no session followed)"
        lines = [f"mcptape play: {self.tape}: {self.answered} request(s) answered from the tape, {verdict}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        for m in self.misses:
            lines.append(f"  miss: {m.call}: {m.why}")
        for m in self.substitutions:
            lines.append(f"  lenient: {m.call} answered with {m.substituted}: {m.why}")
        for f in self.forwarded:
            lines.append(f"  live: {f} (--fallback: not on the tape; answered by the live server, recorded)")
        if self.unused:
            lines.append(f"  {len(self.unused)} recorded call(s) never asked:")
            lines += [f"    {u}" for u in self.unused]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tape": self.tape,
            "answered": self.answered,
            "exit_code": self.exit_code,
            "misses": [m.to_dict() for m in self.misses],
            "substitutions": [m.to_dict() for m in self.substitutions],
            "forwarded": list(self.forwarded),
            "unused": list(self.unused),
            "warnings": list(self.warnings),
            "refused": list(self.refused),
        }
