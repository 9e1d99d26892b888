"""Scripted answers to the server's own requests: which of mcptape.yml's answers a request gets.

Owns the choice among `client.sampling` / `client.elicitation` answers for one session (live/client.py
sends them, on the legacy wire as replies to server requests, on 2026-07-28 as `inputResponses`;
config/models.py checks their shape). Pure: no I/O.

What mcptape.yml may give for a method:
- nothing: sampling is declined (an error, as a user who refuses), elicitation declined;
- `decline`, or one answer: that, for every request (as before);
- a list, for conversations: a sampling loop with tools (tool_use → tool_result → final
  answer) asks several times, each time with more messages. Each item is either
  - an answer (a plain result object, or `decline`), used in order: the n-th request that no
    matched item answers gets the n-th such answer; or
  - a matched item `{when: {...}, contains: "...", answer: {...} | decline: true}`: it answers
    every request whose params hold `when` (a subset: objects key by key, lists item by item
    in any order, other values equal) and whose JSON text contains `contains`; the first
    matching item wins, before any answer in order. Matched items may answer many times.
  A request that no item fits is an error naming the request, the answers used and why
  none matched (`NoAnswer`, which live/client.py turns into the session's ConfigError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptape.jsonrpc import dumps

SCRIPT_KEYS = frozenset({"when", "contains", "answer", "decline"})
DECLINE = "decline"


class NoAnswer(Exception):
    """No scripted answer fits a request (message: which request, and why none fit)."""


def is_matched_item(item: Any) -> bool:
    """A list item of the matched form (`when`/`contains` with `answer` or `decline`)."""
    return isinstance(item, dict) and bool(set(item) & SCRIPT_KEYS)


def holds(want: Any, got: Any) -> bool:
    """Does `got` hold `want`? Objects: every key of `want`, recursively; lists: every item of
    `want` held by some item of `got`; anything else: equal."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and holds(v, got[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and all(any(holds(w, g) for g in got) for w in want)
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    return bool(want == got)


@dataclass
class Script:
    """The answers of one method for one session, and how many in-order ones were used."""

    method: str
    given: Any  # None | "decline" | one answer (dict) | list of items (module docstring)
    used: int = 0
    asked: int = field(default=0)

    def answer(self, params: Any) -> Any:
        """The result to send, DECLINE, or None when nothing is configured at all."""
        self.asked += 1
        given = self.given
        if given is None or given == DECLINE or isinstance(given, dict):
            return given
        text = dumps(params) if params is not None else ""
        messages = params.get("messages") if isinstance(params, dict) else None
        for item in given:
            if not is_matched_item(item):
                continue
            if holds(item.get("when") or {}, params if params is not None else {}) and str(item.get("contains") or "") in text:
                return DECLINE if item.get("decline") else item.get("answer")
        in_order = [item for item in given if not is_matched_item(item)]
        if self.used < len(in_order):
            self.used += 1
            return in_order[self.used - 1]
        matched = sum(1 for item in given if is_matched_item(item))
        # A conversation's newest turn is its last message: that is what tells two requests apart.
        shown = f"(last message {dumps(messages[-1])})" if isinstance(messages, list) and messages else text
        shown = shown if len(shown) <= 160 else shown[:159] + "…"
        raise NoAnswer(
            f"{self.method} request #{self.asked} {shown} fits no answer in `client.{_key(self.method)}`: "
            f"{len(in_order)} answer(s) in order, all used; {matched} matched answer(s) (`when`/`contains`), none "
            "holds this request"
        )


def _key(method: str) -> str:
    return "sampling" if method.startswith("sampling/") else "elicitation"
