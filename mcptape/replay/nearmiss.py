"""Near misses: why no recorded call answers a live request, naming the nearest recordings and why
each was rejected (vcrpy's most-matches error), and the closest one --lenient may answer with.

Owns the wording of play's miss messages and keeping live secrets out of them: a live value that
stood for a redacted recorded value is shown as the recording shows it, and every message goes
through the built-in redactor (imported at the first miss only). Which recordings match is
matching.py's and the engine's (engine.py), which it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from mcptape.jsonrpc import dumps
from mcptape.replay.index import RecordedCall
from mcptape.replay.matching import (
    HIDDEN,
    compared,
    describe_call,
    hide_redacted,
    json_diff,
    recorded_equal,
    target,
)

MAX_NEAREST = 3  # recordings named in a miss message


def explain(
    method: str,
    params: Any,
    same: list[RecordedCall],
    calls: list[RecordedCall],
    used: Container[int],
    reasons_of: Callable[[RecordedCall, Any], list[str]],
) -> tuple[str, RecordedCall | None, str]:
    """Why no recorded call matched, naming the nearest ones; the closest recording of the same
    method and target (None if the tape holds none); the live call. `same` are the recorded
    calls of `method`, `calls` all of them, `used` the event indices of those this replay
    answered with, `reasons_of` the engine's matchers (why a recording does not match).

    The explanation and the live call's description are scrubbed of secrets: live values that
    stood for a redacted recorded value are shown as the recording shows them.
    """
    secrets: set[str] = set()
    live = describe_call(method, scrubbed(params))
    if not same:
        held = sorted({c.method for c in calls})
        why = f"the tape holds no {method} request at all (it holds: {', '.join(held)})"
        return scrub(why, secrets), None, scrub(live, secrets)
    asked_name = params.get("name") if isinstance(params, dict) else None

    def rank(c: RecordedCall) -> tuple[int, int, int, int]:
        other_name = isinstance(c.params, dict) and c.params.get("name") != asked_name
        return (int(other_name), int(c.index in used), len(reasons_of(c, params)), c.index)

    ranked = sorted(same, key=rank)
    parts: list[str] = []
    for c in ranked[:MAX_NEAREST]:
        reasons = reasons_of(c, params)
        notes: list[str] = []
        json_diff(compared(c.params), compared(params), limit=1 << 30, notes=notes)
        if not reasons:
            n = sum(1 for o in same if not reasons_of(o, params))
            parts.append(f"{c.label} (line {c.line}): already answered (the tape holds {n} such call(s))")
        else:
            parts.append(f"{c.label} (line {c.line}): {'; '.join(reasons + notes)}")
    # --lenient's candidate: the same method and target (tool, prompt, resource), never another.
    asked_target = target(compared(params))
    same_target = [c for c in ranked if recorded_equal(target(compared(c.params)), asked_target)]
    unconsumed = [c for c in same_target if c.index not in used]
    closest = unconsumed[0] if unconsumed else (same_target[0] if same_target else None)
    for c in same:  # every value compared with a redacted one, whichever call it was compared with
        hide_redacted(compared(c.params), compared(params), secrets)
    if secrets:
        live = describe_call(method, scrubbed(hide_redacted(compared((closest or ranked[0]).params), compared(params))))
    return scrub("nearest: " + " | ".join(parts), secrets), closest, scrub(live, secrets)


def scrub(text: str, secrets: set[str]) -> str:
    """`text` without the live `secrets` (as text or JSON-escaped) and through the redactor."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:  # shorter ones were replaced where they stood (hide_redacted)
            text = text.replace(secret, HIDDEN).replace(dumps(secret)[1:-1], HIDDEN)
    from mcptape.redact.redactor import builtin_redactor  # only now: it costs play's start-up ~15 ms

    return builtin_redactor().redact_text(text)


def scrubbed(params: Any) -> Any:
    """`params` with the secrets the redactor finds replaced, before describe_call cuts the text
    short: a token cut in half has no shape left for `scrub` to find, and half a token leaks."""
    from mcptape.redact.redactor import builtin_redactor  # only now: it costs play's start-up ~15 ms

    return builtin_redactor().redact_obj(params)


def target_only(params: Any) -> Any:
    """A call's params reduced to what it names, to describe "this tool" in a message."""
    named = target(compared(params))
    if named is None:
        return None
    return {"uri" if isinstance(params, dict) and "uri" in params else "name": named}
