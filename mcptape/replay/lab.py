"""play as an agent lab: an engine's answers paced, faulted, partly live, and with parseable values.

Owns `LabEngine`, which wraps a ReplayEngine (engine.py) with the same interface the stdio loop
(stdio.py) and the HTTP server (http.py) drive, and applies, per client request:

* live tools (`--live-tools NAME,...`): a `tools/call` of a named tool goes to the live server
  through the recorder (fallback.py's LiveFallback, the same live side as `--fallback`), never to
  the tape; everything else is replayed. The live side gets the client's handshake as --fallback's does;
* pacing (`--pace`, pacing.py): the answer waits for its recorded latency divided by the speed;
* faults (`--fault`, faults.py): the first rule that hits the request changes or withholds its answer;
* served values (served_values.py): a golden's normalization placeholders go out as fixed valid values;
* a task's poll interval served short unless paced (tasks.py), so a replayed task is not waited for.

Waits happen outside every lock, so HTTP play's concurrent requests are paced each on its own;
stdio play answers one request at a time (its loop is single-threaded), so there a paced or
delayed answer also holds up the requests behind it, as a server that handles requests one at a
time would. The report (LabReport) adds what was injected and what went live to the engine's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcptape.jsonrpc import classify, dumps, id_key, loads
from mcptape.replay.engine import Fallback, ReplayEngine
from mcptape.replay.index import RecordedCall
from mcptape.replay.outcome import ReplayReport
from mcptape.replay.outgoing import Outgoing, answering
from mcptape.replay.pacing import Pacer
from mcptape.replay.served_values import serve_values
from mcptape.replay.tasks import served_interval
from mcptape.tape.format import Tape

if TYPE_CHECKING:
    from mcptape.replay.faults import FaultPlan, FaultRule


class LabOptions:
    """What turns a replay into a lab run; the default (no pace, no faults, no live tools) only serves values."""

    def __init__(
        self,
        *,
        pace: float | None = None,
        faults: FaultPlan | None = None,
        live_tools: frozenset[str] = frozenset(),
        new_live: Callable[[], Fallback] | None = None,
        serve_placeholders: bool = True,
    ) -> None:
        self.pace = pace
        self.faults = faults
        self.live_tools = live_tools
        self.new_live = new_live
        self.serve_placeholders = serve_placeholders


class LabReport(ReplayReport):
    """The engine's report, plus the faults injected and the calls answered live by --live-tools."""

    def __init__(self, base: ReplayReport, injected: list[str], live: list[str], pace: str | None) -> None:
        super().__init__(base.tape)
        self.__dict__.update(base.__dict__)
        self.injected = injected
        self.live = live
        self.pace = pace

    def render(self) -> str:
        lines = [super().render()]
        if self.pace is not None:
            lines.append(f"  pace: {self.pace}")
        lines += [f"  live: {c} (--live-tools: answered by the live server)" for c in self.live]
        if self.injected:
            lines.append(f"  {len(self.injected)} fault(s) injected:")
            lines += [f"    {f}" for f in self.injected]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "injected": list(self.injected), "live_tools_calls": list(self.live),
                "pace": self.pace}


class LabEngine:
    """A ReplayEngine with lab options applied to its answers (see the module docstring)."""

    def __init__(self, engine: ReplayEngine, options: LabOptions, pace_text: str | None = None) -> None:
        self.engine = engine
        self.options = options
        self.pace_text = pace_text
        self.pacer = Pacer(engine.tape, options.pace) if options.pace is not None else None
        self.plan = options.faults
        # The live side of --live-tools: --fallback's, when there is one, else our own.
        self.live: Fallback | None = None
        self._own_live = False
        if options.live_tools:
            if engine.fallback is not None:
                self.live = engine.fallback
            elif options.new_live is not None:
                self.live = options.new_live()
                self._own_live = True
        self.live_calls: list[str] = []
        self._lock = threading.Lock()
        self._requests = 0
        self._hung_up = False
        self._plain = self.pacer is None and self.plan is None and self.live is None

    # --- the engine's interface (stdio.py, http.py, commands/play.py) -------------------

    @property
    def tape(self) -> Tape:
        return self.engine.tape

    @property
    def fallback(self) -> Fallback | None:
        return self.engine.fallback

    @property
    def own_live(self) -> Fallback | None:
        """The live side --live-tools started itself (its end is play's to call), if any."""
        return self.live if self._own_live else None

    @property
    def closed(self) -> bool:
        return self.engine.closed or self._hung_up

    @property
    def hung_up(self) -> bool:
        """An injected `close` ended the session (not the recorded server)."""
        return self._hung_up

    def pending_startup(self) -> list[str]:
        lines = self.engine.pending_startup()
        return [serve_values(line) for line in lines] if self.options.serve_placeholders else lines

    def lookahead(self) -> bool:
        return self.engine.lookahead()

    def http_status(self, live_id: Any) -> int | None:
        return self.engine.http_status(live_id)

    def answered_in_sse(self, live_id: Any) -> bool:
        return self.engine.answered_in_sse(live_id)

    def fresh(self) -> LabEngine:
        """The same lab for another client session: fresh engine, fault counts, seed and live side."""
        options = self.options
        if options.faults is not None:
            options = LabOptions(pace=options.pace, faults=options.faults.fresh(), live_tools=options.live_tools,
                                 new_live=options.new_live, serve_placeholders=options.serve_placeholders)
        return LabEngine(self.engine.fresh(), options, self.pace_text)

    def report(self) -> ReplayReport:
        base = self.engine.report()
        injected = self.plan.injected if self.plan is not None else []
        if self.plan is None and self.live is None and self.pacer is None:
            return base  # a plain replay reports as it always has
        pace = None
        if self.pacer is not None:
            pace = f"{self.pace_text} (recorded latencies x{1 / self.pacer.speed:g})"
            if not self.pacer.timed:
                pace += "; the tape carries no timing, so nothing was paced"
        return LabReport(base, list(injected), list(self.live_calls), pace)

    def handle(self, line: str) -> list[str]:
        return [o.line for o in self.exchange(line)]

    def exchange(self, line: str) -> list[Outgoing]:
        if self._plain:
            return self._served(self.engine.exchange(line))
        msg = self._parsed(line) if (self.plan is not None or self.live is not None) else None
        request = msg is not None and classify(msg) == "request"
        wait = 0.0
        rule: FaultRule | None = None
        with self._lock:
            if request:
                assert msg is not None
                self._requests += 1
            out = self._live(msg) if request else None
            call: RecordedCall | None = None
            if out is None:
                self.engine.last_answered = None
                out = self.engine.exchange(line)
                call = self.engine.last_answered
                if msg is not None and self._own_live and self.live is not None and not request:
                    self.live.saw(msg)  # a notification: the live side's handshake, or news for it
            if request and self._own_live and self.live is not None and msg is not None and msg.get("method") == "initialize":
                self.live.saw(msg)
            if request and self.plan is not None and msg is not None:
                rule = self.plan.pick(str(msg.get("method")), msg.get("params"), self._requests)
        if call is not None and self.pacer is not None:
            wait = self.pacer.delay_s(call.index, call.response)
        if rule is not None and msg is not None:
            out, extra = self._inject(rule, msg.get("id"), out)
            wait += extra
        if wait > 0:
            time.sleep(wait)
        return self._served(out)

    # --- the parts ------------------------------------------------------------------------

    @staticmethod
    def _parsed(line: str) -> dict[str, Any] | None:
        try:
            msg = loads(line.rstrip("\r\n"))
        except ValueError:
            return None
        return msg if isinstance(msg, dict) else None

    def _live(self, msg: dict[str, Any] | None) -> list[Outgoing] | None:
        """A --live-tools call's lines from the live server; None for any other request."""
        if self.live is None or msg is None or msg.get("method") != "tools/call":
            return None
        params = msg.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if name not in self.options.live_tools:
            return None
        label = f"tools/call {name}"
        self.live_calls.append(label)
        return answering(msg.get("id"), self.live.forward(msg, label))

    def _inject(self, rule: FaultRule, msg_id: Any, out: list[Outgoing]) -> tuple[list[Outgoing], float]:
        """The lines to send instead of `out` under `rule`, and the extra wait (seconds)."""
        if rule.kind == "delay":
            return out, rule.delay_ms / 1000.0
        want = id_key(msg_id)
        at = None
        for k, sent in enumerate(out):
            if sent.answer and id_key(sent.id) == want:
                at = k
        rest = out[:at] + out[at + 1:] if at is not None else list(out)
        if rule.kind == "no-answer":
            return rest, 0.0
        if rule.kind == "close":
            self._hung_up = True
            return rest, 0.0
        if rule.kind == "error":
            line = Outgoing(dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": rule.code, "message": rule.message}}),
                            True, msg_id)
        elif rule.kind == "is-error":
            line = Outgoing(dumps({"jsonrpc": "2.0", "id": msg_id,
                                   "result": {"content": [{"type": "text", "text": rule.message}], "isError": True}}),
                            True, msg_id)
        else:  # malformed: the recorded answer cut in half, so it is not JSON (nor an answer)
            recorded = out[at].line if at is not None else dumps({"jsonrpc": "2.0", "id": msg_id, "result": {}})
            line = Outgoing(recorded[: max(1, len(recorded) // 2)])
        return [*rest, line], 0.0

    def _served(self, out: list[Outgoing]) -> list[Outgoing]:
        paced = self.pacer is not None  # a task's poll interval: served short unless paced (tasks.py)
        for sent in out:
            line = served_interval(sent.line, paced=paced)
            sent.line = serve_values(line) if self.options.serve_placeholders else line
        return out


Served = ReplayEngine | LabEngine  # what stdio.py and http.py serve
