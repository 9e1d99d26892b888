"""What a session's tapes say about the server's surface as a whole: its context cost and its coverage.

Context cost: every agent that loads a server's tools puts its `tools/list` result (and the
server's `instructions`) into its context, on every conversation. It is measured here in bytes
of UTF-8 JSON, each tool as the server listed it (compact, as sent on the wire) — not in tokens:
the well-kept tokenizers (tiktoken) fetch their vocabularies from the network on first use, which a
CI runner may not reach, and a count that depends on the model an agent uses would not be one
number anyway. Roughly four bytes of such JSON make one token for today's models; reports say
"bytes". `drift.budget` caps the total (`budget_drift`).

Coverage: which listed tools, prompts and resources the session called (tools/call, prompts/get,
resources/read); report/surface_notes.py adds up the sessions of one server.
Pure: the facts go into report.model.SurfaceFacts; rendering is report/'s.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcptape.diff.compare import Policy  # the one place fail_on and ignore are applied
from mcptape.tape.format import Tape
from mcptape.verdict.model import DiffResult, Drift, Finding, SurfaceFacts
from mcptape.verdict.vocabulary import SEVERITY_EXIT, VERDICT_EXIT

if TYPE_CHECKING:
    from mcptape.config.models import DriftSettings

INSTRUCTIONS = "instructions"  # the key of the server's instructions in SurfaceFacts.size
_LISTS = {"tools/list": ("tools", "name", "tools"), "prompts/list": ("prompts", "name", "prompts"),
          "resources/list": ("resources", "uri", "resources")}
_CALLS = {"tools/call": ("name", "tools"), "prompts/get": ("name", "prompts"), "resources/read": ("uri", "resources")}


def size_of(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON: what it costs in a context, near enough to what was sent."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))  # a lone surrogate a server sent counts, not crashes


def _sizes(tape: Tape) -> tuple[dict[str, int], dict[str, list[str]], dict[str, list[str]]]:
    """(size per tool and of the instructions, names listed per kind, names called per kind)."""
    size: dict[str, int] = {}
    listed: dict[str, dict[str, None]] = {}
    called: dict[str, dict[str, None]] = {}
    for event in tape.events:
        method = event.get("method")
        msg = event.get("msg")
        if not isinstance(msg, dict) or not isinstance(method, str):
            continue
        if event.get("kind") == "request" and event.get("dir") == "c2s" and method in _CALLS:
            key, kind = _CALLS[method]
            params = msg.get("params")
            name = params.get(key) if isinstance(params, dict) else None
            if isinstance(name, str):
                called.setdefault(kind, {})[name] = None
            continue
        result = msg.get("result")
        if event.get("kind") != "response" or not isinstance(result, dict):
            continue
        if method in ("initialize", "server/discover") and isinstance(result.get("instructions"), str):
            size[INSTRUCTIONS] = size_of(result["instructions"])
        if method in _LISTS:
            list_key, id_field, kind = _LISTS[method]
            items = result.get(list_key)
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get(id_field), str):
                    listed.setdefault(kind, {})[item[id_field]] = None
                    if method == "tools/list":
                        size[f"tool:{item[id_field]}"] = size_of(item)
    return size, {k: list(v) for k, v in listed.items()}, {k: list(v) for k, v in called.items()}


def surface_facts(fresh: Tape, golden: Tape | None = None, server: str | None = None) -> SurfaceFacts:
    """The fresh tape's surface cost and coverage, and the golden tape's cost when it lists tools too."""
    size, listed, called = _sizes(fresh)
    golden_size = None
    if golden is not None:
        g_size, g_listed, _ = _sizes(golden)
        # Compare only what both measured: a golden that never listed tools has no cost to compare.
        if "tools" in g_listed and "tools" in listed:
            golden_size = g_size
    return SurfaceFacts(server=server, size=size, golden_size=golden_size, listed=listed, called=called)


def budget_drift(facts: SurfaceFacts, drift: DriftSettings | None) -> Drift | None:
    """A `context.budget` drift when the surface costs more than `drift.budget` (fail_on/ignore applied)."""
    if drift is None or drift.budget is None or "tools" not in facts.listed:
        return None
    total = facts.total()
    if total <= drift.budget:
        return None
    biggest = sorted(((n, s) for n, s in facts.size.items()), key=lambda t: -t[1])[:3]
    top = ", ".join(f"`{n.removeprefix('tool:')}` {s}" for n, s in biggest)
    finding = Finding.of("context", "budget", "result.tools",
                         f"the surface costs {total} bytes for every agent that loads it, over drift.budget "
                         f"{drift.budget} (largest: {top})", drift.budget, total)
    kept = Policy.from_settings(drift).apply([finding], None)
    return Drift(None, kept) if kept else None


def add_budget_drift(diff: DiffResult, facts: SurfaceFacts, drift: DriftSettings | None) -> None:
    """`diff` with the budget drift (if any) added and its verdict raised to match."""
    found = budget_drift(facts, drift)
    if found is None:
        return
    diff.drifts.append(found)
    if SEVERITY_EXIT[found.severity] > VERDICT_EXIT[diff.verdict]:
        diff.verdict = found.severity  # type: ignore[assignment]
        diff.drifts.insert(0, diff.drifts.pop())  # the worst drift heads the report
