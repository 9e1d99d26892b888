"""Timing on a tape: when each event crossed the wire, kept in the footer, never in a golden.

Owns the one timing fact a tape carries and what is read off it. A recording (`rec` over stdio
or `--listen`, `ci`'s fresh tapes written with `--out-dir`) ends with a footer holding

    "timing": {"unit": "ms", "at": [0.0, 0.4, 12.9, null, ...]}

one entry per event, in the tape's order: milliseconds since the first timed event at which the
event's line crossed the wire (the moment its last byte reached the recorder), or null for an
event that did not cross it (mcptape's notes, a server exit). Everything else is derived:

* an answer's latency: `at[answer] - at[request]` (`call_times`), what `show`, `ls` and
  `play --pace recorded` use;
* the gaps between client messages: `at[k] - at[previous client message]` (`client_gaps`).

Why the footer and by position: the footer is written last, so a streaming recorder (rec's
writer) adds nothing per line and keeps its key-order contract for events (tape/events.py:
nothing but `raw` and `step` after `msg`, which play's verbatim reading relies on); a golden is
written without it (ci/session.py), so goldens stay byte-stable and `git diff` never shows a
clock. ci's fresh tapes (`--out-dir`, the Action's artifact) are golden candidates: accepting a
change copies them into golden_dir as they are. So they stay byte for byte what the golden would
be, and their timing goes beside them, in `NAME.tape.timing.json` (`sidecar_path`), which every
reader of timing here consults when the footer has none (`recorded_times`). A tape cut short has no footer and so no timing; a tape from before timing existed reads
as "no timing". Readers that do not know the key keep it (tape/format.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.jsonrpc import dumps, id_key, loads
from mcptape.tape.events import C2S, S2C, in_session
from mcptape.tape.format import TAPE_SUFFIX, Tape

TIMING_KEY = "timing"
SIDECAR_SUFFIX = ".tape.timing.json"


def timing_footer(times: Sequence[float | None]) -> dict[str, Any] | None:
    """The footer's `timing` from per-event monotonic clock readings (seconds); None if none is known."""
    start = min((t for t in times if t is not None), default=None)
    if start is None:
        return None
    return {"unit": "ms", "at": [None if t is None else round((t - start) * 1000.0, 2) for t in times]}


def sidecar_path(tape: Path) -> Path:
    """Where the timing of a tape that must stay golden-ready is kept: `NAME.tape.timing.json`."""
    name = tape.name[: -len(TAPE_SUFFIX)] if tape.name.endswith(TAPE_SUFFIX) else tape.name
    return tape.with_name(f"{name}{SIDECAR_SUFFIX}")


def sidecar_bytes(timing: dict[str, Any]) -> bytes:
    return dumps({"mcptape": "timing", TIMING_KEY: timing}).encode() + b"\n"


def _times(timing: Any) -> list[float | None] | None:
    if not isinstance(timing, dict) or timing.get("unit") != "ms" or not isinstance(timing.get("at"), list):
        return None
    at: list[Any] = timing["at"]
    return [float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None for t in at]


def footer_times(footer: dict[str, Any] | None) -> list[float | None] | None:
    """The footer's per-event times (ms) as recorded; None if it carries no timing. Needs no events:
    play reads it before a streamed tape's events are parsed."""
    return _times((footer or {}).get(TIMING_KEY))


def recorded_times(tape: Tape) -> list[float | None] | None:
    """The tape's per-event times (ms): its footer's, else its sidecar's (ci's fresh tapes, which stay
    byte for byte what the golden would be, so accepting one by copying it never adds a clock)."""
    times = footer_times(tape.footer)
    if times is not None or tape.path is None:
        return times
    try:
        data = loads(sidecar_path(tape.path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _times(data.get(TIMING_KEY)) if isinstance(data, dict) and data.get("mcptape") == "timing" else None


def event_times(tape: Tape) -> list[float | None] | None:
    """Per event, ms since the tape's first timed event; None if the tape carries no timing."""
    out = recorded_times(tape)
    if out is None:
        return None
    # A tape with events appended later (play --fallback) has more events than times: those are unknown.
    out += [None] * (len(tape.events) - len(out))
    return out[: len(tape.events)]


@dataclass(frozen=True)
class CallTime:
    """One client request and how long its answer took."""

    request: int  # event index of the request
    answer: int | None  # event index of its answer, None if it never came
    method: str
    label: str  # `tools/call add`, `resources/read calc://x`, or the method
    sent_ms: float | None  # when the request crossed the wire (ms since the tape's start)
    latency_ms: float | None  # answer time minus request time; None when either is unknown

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request + 1, "answer": None if self.answer is None else self.answer + 1,
                "call": self.label, "sent_ms": self.sent_ms, "latency_ms": self.latency_ms}


def call_label(method: str, params: Any) -> str:
    """How a call is named in timing rows: the method and its target (tool, prompt, resource)."""
    if isinstance(params, dict):
        for key in ("name", "uri"):
            if isinstance(params.get(key), str):
                return f"{method} {params[key]}"
    return method


def call_times(tape: Tape, times: list[float | None] | None = None) -> list[CallTime]:
    """Every client request of the tape, in order, with its answer's latency (if timed)."""
    if times is None:
        times = event_times(tape)
    open_calls: dict[str, int] = {}
    answers: dict[int, int] = {}
    for i, ev in enumerate(tape.events):
        kind, direction = ev.get("kind"), ev.get("dir")
        if kind == "request" and direction == C2S:
            open_calls[in_session(ev.get("session"), id_key(ev.get("id")))] = i
        elif kind in ("response", "error") and direction == S2C:
            req = open_calls.pop(in_session(ev.get("session"), id_key(ev.get("id"))), None)
            if req is not None:
                answers[req] = i
    out: list[CallTime] = []
    for i, ev in enumerate(tape.events):
        if ev.get("kind") != "request" or ev.get("dir") != C2S:
            continue
        method = str(ev.get("method"))
        answer = answers.get(i)
        sent = times[i] if times is not None else None
        got = times[answer] if times is not None and answer is not None else None
        latency = round(got - sent, 2) if sent is not None and got is not None else None
        params = (ev.get("msg") or {}).get("params")
        out.append(CallTime(i, answer, method, call_label(method, params), sent, latency))
    return out


def client_gaps(tape: Tape, times: list[float | None] | None = None) -> list[tuple[int, float]]:
    """(event index, ms since the previous client message) for each timed client message but the first."""
    if times is None:
        times = event_times(tape)
    if times is None:
        return []
    out: list[tuple[int, float]] = []
    last: float | None = None
    for i, ev in enumerate(tape.events):
        t = times[i]
        if ev.get("dir") != C2S or ev.get("kind") not in ("request", "notification", "response", "error") or t is None:
            continue
        if last is not None:
            out.append((i, round(t - last, 2)))
        last = t
    return out


def recorded_latency(request: int, answer: int, times: list[float | None] | None) -> float | None:
    """The recorded latency (ms) of the answer at event `answer` to the request at event `request`
    (`times`: footer_times or event_times)."""
    if times is None or request >= len(times) or answer >= len(times):
        return None
    sent, got = times[request], times[answer]
    return None if sent is None or got is None else max(0.0, got - sent)


def summary(tape: Tape) -> dict[str, Any] | None:
    """What `ls` shows: the calls' total latency and the slowest call; None without timing."""
    times = event_times(tape)
    if times is None:
        return None
    timed = [c for c in call_times(tape, times) if c.latency_ms is not None]
    if not timed:
        return {"total_ms": 0.0, "slowest": None}
    slowest = max(timed, key=lambda c: c.latency_ms or 0.0)
    return {"total_ms": round(sum(c.latency_ms or 0.0 for c in timed), 2),
            "slowest": {"call": slowest.label, "latency_ms": slowest.latency_ms, "request": slowest.request + 1}}
