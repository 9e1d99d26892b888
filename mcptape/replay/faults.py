"""`play --fault RULE`: faults injected into a replay, chosen by rules and a seeded random draw.

Owns the rule grammar, which request a rule hits, and what the client gets instead of (or with)
the recorded answer. What to answer is engine.py's; lab.py applies a fault to the engine's lines.

A rule is comma-separated `key=value` items (the same string in the pytest marker's `faults=[...]`):

    selectors (all optional, all must hold)   method=tools/call   tool=NAME   call=N   p=0.25
    exactly one fault                         delay=MS | no-answer | error=CODE[:message]
                                              | is-error[=text] | malformed | close

* `method` and `tool` (a `tools/call`'s name; `tool=` implies `method=tools/call`) pick requests by
  content; `call=N` picks the N-th request that the rule's other selectors match (1-based,
  counted per rule and per client session), so `tool=add,call=2` is the second call of `add`;
  `call=3` alone the third request of any kind. `p` (default 1) is the chance that a request the
  selectors pick is hit, drawn from one random generator seeded with `--fault-seed` (default 0),
  one draw per rule and picked request in arrival order: the same seed and the same requests give
  the same faults every run.
* The first rule that hits a request applies (every rule still counts and draws for it, so a
  rule's `call=` and draws do not depend on the rules before it); a request no rule hits is
  replayed untouched.
* Faults: `delay=MS` answers MS milliseconds late; `no-answer` never answers (the client's timeout
  fires); `error=CODE[:message]` answers with that JSON-RPC error; `is-error[=text]` with a tool
  result `{"content":[{"type":"text","text":...}],"isError":true}`; `malformed` with a line that
  is not JSON (the recorded answer cut in half); `close` hangs up instead of answering (stdio:
  play's stdout closes; HTTP: the request's connection drops, and so does every later one of the
  session, as when a server dies).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from mcptape.errors import ConfigError

FAULTS = ("delay", "no-answer", "error", "is-error", "malformed", "close")
_SELECTORS = ("method", "tool", "call", "p")
DEFAULT_MESSAGE = "injected by mcptape play --fault"


class FaultRule:
    """One parsed `--fault` rule."""

    __slots__ = ("text", "method", "tool", "call", "p", "kind", "delay_ms", "code", "message")

    def __init__(self, text: str) -> None:
        self.text = text
        self.method: str | None = None
        self.tool: str | None = None
        self.call: int | None = None
        self.p = 1.0
        self.kind = ""
        self.delay_ms = 0.0
        self.code = 0
        self.message = DEFAULT_MESSAGE
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            key, eq, value = item.partition("=")
            key = key.strip()
            value = value.strip()
            if key in _SELECTORS:
                self._selector(key, value)
            elif key in FAULTS:
                if self.kind:
                    raise _bad(text, f"two faults ({self.kind} and {key}); a rule injects one")
                self.kind = key
                self._fault(key, value, bool(eq))
            else:
                raise _bad(text, f"unknown item {key!r}")
        if not self.kind:
            raise _bad(text, "no fault")
        if self.tool is not None:
            if self.method not in (None, "tools/call"):
                raise _bad(text, "tool= picks tools/call requests; it cannot go with another method=")
            self.method = "tools/call"

    def _selector(self, key: str, value: str) -> None:
        if key == "method":
            self.method = value
        elif key == "tool":
            self.tool = value
        elif key == "call":
            if not value.isdigit() or int(value) < 1:
                raise _bad(self.text, f"call={value!r}: a request number from 1")
            self.call = int(value)
        else:
            try:
                self.p = float(value)
            except ValueError:
                self.p = -1.0
            if not 0.0 <= self.p <= 1.0:
                raise _bad(self.text, f"p={value!r}: a probability between 0 and 1")

    def _fault(self, key: str, value: str, has_value: bool) -> None:
        if key == "delay":
            try:
                self.delay_ms = float(value)
            except ValueError:
                self.delay_ms = -1.0
            if self.delay_ms < 0:
                raise _bad(self.text, f"delay={value!r}: milliseconds, 0 or more")
        elif key == "error":
            code, _, message = value.partition(":")
            try:
                self.code = int(code)
            except ValueError:
                raise _bad(self.text, f"error={value!r}: CODE[:message], CODE an integer such as -32000") from None
            self.message = message or DEFAULT_MESSAGE
        elif key == "is-error":
            self.message = value or DEFAULT_MESSAGE
        elif has_value:
            raise _bad(self.text, f"{key} takes no value")

    def picks(self, method: str, tool: str | None) -> bool:
        return (self.method is None or self.method == method) and (self.tool is None or self.tool == tool)

    def describe(self) -> str:
        if self.kind == "delay":
            return f"delay {self.delay_ms:g} ms"
        if self.kind == "error":
            return f"error {self.code}: {self.message}"
        if self.kind == "is-error":
            return f"isError result: {self.message}"
        return self.kind


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(
        f"--fault {text!r}: {why}",
        hint="e.g. --fault 'tool=add,error=-32000:boom' or 'method=tools/call,p=0.3,delay=500'; "
        f"faults: {', '.join(FAULTS)}",
    )


def parse_faults(texts: Sequence[str]) -> list[FaultRule]:
    return [FaultRule(t) for t in texts]


class FaultPlan:
    """The rules of one client session, with their counts and the seeded draw (thread-safe via lab.py's lock)."""

    def __init__(self, rules: Sequence[FaultRule], seed: int = 0) -> None:
        self.rules = list(rules)
        self.seed = seed
        self._random = random.Random(seed)
        self._seen = [0] * len(self.rules)
        self.injected: list[str] = []  # what was injected, in order, for play's report

    def fresh(self) -> FaultPlan:
        """The same rules and seed for another client session (HTTP play: one per session)."""
        return FaultPlan(self.rules, self.seed)

    def pick(self, method: str, params: Any, number: int) -> FaultRule | None:
        """The fault for the client's `number`-th request (`method`, `params`), if a rule hits it."""
        tool = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
        tool = tool if isinstance(tool, str) else None
        hit: FaultRule | None = None
        # Every rule counts and draws for each request it picks, whether or not an earlier rule hit
        # it: a rule's `call=N` and its draws do not depend on the rules before it.
        for k, rule in enumerate(self.rules):
            if not rule.picks(method, tool):
                continue
            self._seen[k] += 1
            drawn = rule.p >= 1.0 or self._random.random() < rule.p
            if hit is None and drawn and (rule.call is None or rule.call == self._seen[k]):
                hit = rule
        if hit is not None:
            what = f"{method} {tool}" if tool else method
            self.injected.append(f"request {number} ({what}): {hit.describe()} [rule {hit.text!r}]")
        return hit
