"""`play --pace recorded|xN`: answers at the recorded speed, or N times it, instead of at once.

Owns the pace option and the delay of one answer: its recorded latency (the footer's timing,
tape/timing.py) divided by the speed. `recorded` is x1; `x2` replays twice as fast (half the
latency), `x0.5` half as fast (twice the latency). The default is no pacing: every answer as fast
as play can send it. A tape without timing (a golden, a tape from before timing) is served
unpaced, and play says so once. lab.py waits the delay before sending the answer.
"""

from __future__ import annotations

from mcptape.errors import ConfigError
from mcptape.tape.format import Tape
from mcptape.tape.timing import footer_times, recorded_latency


def parse_pace(text: str | None) -> float | None:
    """The speed (`recorded` = 1.0, `xN` = N), or None for as fast as possible (no --pace)."""
    if text is None or text == "fast":
        return None
    if text == "recorded":
        return 1.0
    if text.startswith("x"):
        try:
            speed = float(text[1:])
        except ValueError:
            speed = 0.0
        if speed > 0:
            return speed
    raise ConfigError(f"--pace {text!r}: give `recorded` or a speed such as x2 or x0.5",
                      hint="x2 replays twice as fast as recorded, x0.5 half as fast")


class Pacer:
    """The delay of each replayed answer at one speed."""

    def __init__(self, tape: Tape, speed: float) -> None:
        self.speed = speed
        self.times = footer_times(tape.footer)

    @property
    def timed(self) -> bool:
        return self.times is not None

    def delay_s(self, request: int, answer: int | None) -> float:
        """Seconds to wait before sending the answer at event `answer` to the request at event `request`."""
        if answer is None:
            return 0.0
        latency = recorded_latency(request, answer, self.times)
        return 0.0 if latency is None else latency / 1000.0 / self.speed
