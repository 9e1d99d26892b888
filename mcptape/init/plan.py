"""What init's session calls, and why each call it does not make is commented out.

Owns the plan of each listed tool (Plan): its example arguments (scaffold.py: from its inputSchema, the
server's own hints first: a directory its command names, a resource URI it lists, a file of the type
the tool reads), whether it runs on the first `ci`, and the reason when it does not. In order:
  - plan_calls: a tool that may write or reaches the network is commented out (scaffold.tool_safety),
    and so is one whose arguments could not be built; a read-only tool is active, a query-named one a
    probe candidate;
  - clear_of_goldens: a call whose path argument holds the golden dir (`path: .`) is commented out:
    `ci -u` writes tapes/ there after the run that recorded its answer, so every later run would drift;
  - probed: the candidates are called once (probe.py) and kept only if they answered; a server that
    refused every call after server/discover gets them again after `initialize`, pinned if they answer;
  - unstable: a call whose answer differed between the trial runs where no rule helps (trial.py) is
    commented out, saying what differed, since its golden tape would drift on every run.
Coverage says what the gate covers, and whether nothing is safe to call at all.

Progress goes to the `progress` callback the command gives; this module never prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcptape.init.probe import probe_calls
from mcptape.init.scaffold import Hints, example_arguments, file_hints, tool_safety
from mcptape.init.server import LEGACY_PROTOCOL, Progress, Surface, server_model
from mcptape.init.text import one_line
from mcptape.live.client import schema_violation

# MCP's defaults of a tool's hints (the spec's ToolAnnotations): what an unannotated tool is taken to be.
SPEC_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
# The reasons no user can change by filling in arguments: with only these, nothing is safe to call.
UNSAFE = frozenset({"may write", "need the network"})


@dataclass(frozen=True)
class Plan:
    """What the file says about one tool: its arguments, whether it runs, and why not."""

    arguments: dict[str, Any] | None
    active: bool
    why: str = ""  # why it is commented out (or, for a probed tool, why it runs)
    category: str = ""  # for the coverage line: may write | need the network | failed on example arguments | ...


def plan_calls(surface: Surface, hints: Hints, root: Path | None = None) -> dict[str, Plan]:
    """Each listed tool's plan before probing: read-only ones active, the rest commented out with why.
    `root`: where the server runs; a tool that reads files is given one of the type it names, under
    the directory its command names (the `path` hint) or under `root` (scaffold.file_hints)."""
    shown_root = next((value for key, value in hints if key == "path"), None)
    unsaid = sdk_defaults(surface.tools or [])
    plans: dict[str, Plan] = {}
    for tool in surface.tools or []:
        tname = tool.get("name")
        if not isinstance(tname, str) or not tname or tname in plans:
            continue
        schema = tool.get("inputSchema")
        own = file_hints(tool, root / shown_root if shown_root else root, shown_root) if root is not None else ()
        arguments = example_arguments(schema, own + hints)
        problem = "no valid arguments could be built from its inputSchema" if arguments is None else \
            schema_violation(arguments, schema)
        # Annotations an SDK wrote for every tool alike say nothing of any one: its name decides, as for
        # a tool nobody annotated (and init's probe, as for one).
        safety = tool_safety({k: v for k, v in tool.items() if k != "annotations"} if unsaid else tool)
        if not safety.safe and not safety.probe:
            category = "need the network" if safety.kind == "network" else "may write"
            plans[tname] = Plan(arguments, False, safety.reason, category)
        elif problem is not None:
            plans[tname] = Plan(arguments, False, f"fill in its arguments ({one_line(problem, 120)})",
                                "need arguments filled in")
        elif safety.probe:
            plans[tname] = Plan(arguments, False, f"{safety.reason}: not probed (--no-probe)", "query")
        else:
            plans[tname] = Plan(arguments, True)
    return plans


def sdk_defaults(tools: list[dict[str, Any]]) -> bool:
    """Does every tool carry exactly MCP's default hints, written out (mcp-go writes readOnlyHint false,
    destructiveHint true, idempotentHint false, openWorldHint true on each tool its author did not
    annotate)? Then they are the SDK's, not the author's word: `excel_read_sheet` is not destructive."""
    if len(tools) < 2:
        return False
    for tool in tools:
        annotations = tool.get("annotations")
        hints = {k: v for k, v in annotations.items() if k in SPEC_DEFAULTS} if isinstance(annotations, dict) else None
        if hints != SPEC_DEFAULTS:
            return False
    return True


def listed_hints(surface: Surface) -> Hints:
    """Argument values the server's own lists offer: the first resource URI it listed."""
    for resource in surface.resources or []:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri:
            return (("uri", uri),)
    return ()


def clear_of_goldens(plans: Mapping[str, Plan], cwd: Path, golden: Path) -> dict[str, Plan]:
    """The plans with each call commented out whose arguments name a directory the golden tapes will
    be written into (`path: .` in the repository): `ci -u` makes tapes/ appear there after the run that
    recorded the answer, so a listing or a search of it drifts on every later run."""
    out = dict(plans)
    for tname, plan in plans.items():
        if not (plan.active or plan.category == "query"):
            continue
        for key, value in _strings(plan.arguments):
            try:
                place = (cwd / value).resolve() if value else None
                holds = place is not None and place.is_dir() and golden.resolve().is_relative_to(place)
            except (OSError, ValueError):
                holds = False
            if holds:
                shown = os.path.relpath(golden, cwd)
                out[tname] = Plan(plan.arguments, False,
                                  f"its {key} {value!r} holds {shown}/, where `ci -u` writes the golden tapes: every "
                                  "later run would see them appear; point it at a directory of test data",
                                  "would see the golden tapes")
                break
    return out


def _strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """(property name, value) of each string an argument holds, nested ones included."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _strings(v, str(k))]
    if isinstance(value, list):
        return [pair for v in value for pair in _strings(v, key)]
    return []


def probed(entry: Mapping[str, Any], plans: dict[str, Plan], directory: Path, env: Mapping[str, str], *,
           probe: bool, start_timeout: float, progress: Progress) -> tuple[dict[str, Plan], str | None]:
    """Call the read-only and (unless --no-probe) the query-named tools once; keep those that answered.
    Also the protocol to pin when the calls answered only in a session opened with `initialize`."""
    wanted = [(n, p.arguments or {}) for n, p in plans.items() if p.active or (probe and p.category == "query")]
    if not probe:  # --no-probe: nothing is called before the user says so; read-only ones run unchecked
        return plans, None
    if not wanted:
        return plans, None
    model = server_model(entry)
    outcomes = probe_calls(model, wanted, base_dir=directory, env=env, protocol=model.protocol, progress=progress,
                           start_timeout=start_timeout)
    legacy = None
    refusals = {o.detail for o in outcomes.values() if o.kind == "refused"}
    if not model.protocol and len(refusals) == 1 and all(o.kind == "refused" for o in outcomes.values()):
        # A server that answers server/discover and lists its tools, then refuses every call with one
        # refusing code ("-32600 initialize is required": an rmcp server whose tools need the peer's
        # initialize) speaks the legacy handshake for calls: its arguments were never looked at.
        progress(f"the server refused every call after server/discover ({one_line(refusals.pop(), 80)}); "
            "trying initialize")
        again = probe_calls(model.model_copy(update={"protocol": LEGACY_PROTOCOL}), wanted, base_dir=directory,
                            env=env, protocol=LEGACY_PROTOCOL, progress=progress, start_timeout=start_timeout)
        if any(o.ok for o in again.values()):
            outcomes, legacy = again, LEGACY_PROTOCOL
            progress(f"its calls answered after initialize: the file pins `protocol: {LEGACY_PROTOCOL}` for it")
    out = dict(plans)
    for tname, _ in wanted:
        outcome = outcomes.get(tname)
        plan = plans[tname]
        if outcome is None:
            continue
        if outcome.ok:
            why = "" if plan.active else "not annotated readOnlyHint; named like a query, and init's call answered"
            out[tname] = Plan(plan.arguments, True, why, "probed" if not plan.active else "")
            continue
        detail = one_line(outcome.detail, 100)
        if outcome.kind == "network":
            out[tname] = Plan(plan.arguments, False, f"it needs the network (init's call answered: {detail})",
                              "need the network")
        elif outcome.kind == "timeout":
            out[tname] = Plan(plan.arguments, False, f"init's call timed out ({detail})", "timed out")
        elif outcome.kind == "refused":
            out[tname] = Plan(plan.arguments, False, f"the server refused init's call ({detail}): a protocol or "
                              "transport mismatch, not its arguments (try --protocol)", "refused by the server")
        else:
            out[tname] = Plan(plan.arguments, False, f"init's call with these example arguments failed ({detail}); "
                              "put real ones here", "failed on example arguments")
    return out, legacy


def unstable(plans: Mapping[str, Plan], unstable: Mapping[str, str]) -> dict[str, Plan]:
    """The plans with each unstable call commented out, saying what differed."""
    out = dict(plans)
    for tname, what in unstable.items():
        out[tname] = Plan(plans[tname].arguments, False,
                          f"its answer differed between init's two trial runs where no normalize rule helps "
                          f"({one_line(what, 100)}), so its golden tape would drift on every run; "
                          "`mcptape ci --repeat 3` shows how", "answer differs every run")
    return out


@dataclass
class Coverage:
    """How much of the listed surface the session calls: the tools called of those listed, and why
    each other one is commented out (the plans' categories, counted)."""

    total: int
    called: int
    probed: int  # called because init's probe answered, not because of an annotation
    why_not: dict[str, int] = field(default_factory=dict)  # reason -> how many tools

    @classmethod
    def of(cls, plans: Mapping[str, Plan]) -> Coverage:
        out = cls(len(plans), sum(1 for p in plans.values() if p.active),
                  sum(1 for p in plans.values() if p.active and p.category == "probed"))
        for plan in plans.values():
            if not plan.active:
                label = "not annotated readOnlyHint, not probed (--no-probe)" if plan.category == "query" else plan.category
                out.why_not[label] = out.why_not.get(label, 0) + 1
        return out

    @property
    def nothing_safe(self) -> bool:
        """No tool called, and none could be: each may write or needs the network."""
        return self.total > 0 and self.called == 0 and set(self.why_not) <= UNSAFE

    def line(self) -> str:
        """"12 of 26 tools called; 14 commented out (8 may write, ...)"."""
        line = f"{self.called} of {self.total} tool{'s' * (self.total != 1)} called"
        if self.probed:
            line += f" ({self.probed} unannotated, kept because init's call answered)"
        if self.why_not:
            why = ", ".join(f"{n} {label}" for label, n in sorted(self.why_not.items(), key=lambda kv: (-kv[1], kv[0])))
            line += f"; {self.total - self.called} commented out ({why})"
        return line
