"""`mcptape check --surface`: the security review over each configured server's whole surface, once.

For a repository adopting mcptape (and `mcptape init`, which shows the same table for the server it
just listed): the text rules the gate applies to what a PR adds (diff/surface_review.py,
text_rules.py) run over everything a live server lists — tools, prompts, resources, templates —
and its `instructions`, as if all of it were new. Each finding is a row: rule, item, field, the
words. `drift.fail_on`/`drift.ignore` apply as in the gate (diff/compare.py's Policy), so a project
that relaxed `security.url` sees those rows at info. Exit 0: nothing that fails; 2: a finding at
structural severity; 1: at output; 3: a server could not be listed.
The listing is the scripted client's (client.record_session: the handshake and the paginated
list walks `ci` runs), over the transport `ci` opens (live/launch.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcptape.config.load import LoadedConfig
from mcptape.config.models import Step
from mcptape.diff.classify import SURFACE_LISTS
from mcptape.diff.compare import Policy
from mcptape.diff.surface_review import SurfaceHit, review_surface
from mcptape.diff.text_rules import visible
from mcptape.errors import EXIT_OK, McptapeError
from mcptape.live.client import record_session
from mcptape.live.launch import open_transport
from mcptape.logsafe import safe_log
from mcptape.verdict.model import Finding
from mcptape.verdict.vocabulary import SECURITY_KINDS, SEVERITY_EXIT, worst_exit

_STEPS = ("list_tools", "list_prompts", "list_resources", "list_resource_templates")
_COLUMNS = (("rule", 26), ("item", 28), ("field", 32))


def listed_surface(events: Sequence[Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], str | None]:
    """(list method -> {list key: every item of its pages}, the instructions) from a recording's events."""
    lists: dict[str, dict[str, Any]] = {}
    instructions = None
    for event in events:
        msg, method = event.get("msg"), event.get("method")
        result = msg.get("result") if isinstance(msg, dict) and event.get("kind") == "response" else None
        if not isinstance(result, dict) or not isinstance(method, str):
            continue
        if method in ("initialize", "server/discover") and isinstance(result.get("instructions"), str):
            instructions = result["instructions"]
        if method in SURFACE_LISTS:
            key = SURFACE_LISTS[method][0]
            page = result.get(key)
            lists.setdefault(method, {key: []})[key].extend(page if isinstance(page, list) else [])
    return lists, instructions


def review_table(hits: Sequence[SurfaceHit], severities: Sequence[str] | None = None) -> str:
    """The findings as a plain-text table (untrusted words escaped), and the rules they broke."""
    if not hits:
        return "security review: no findings\n"
    head = "  ".join(name.ljust(width) for name, width in _COLUMNS) + "  found"
    lines = [head, "-" * len(head)]
    for i, hit in enumerate(hits):
        item = f"{hit.noun} {visible(hit.name)}".strip()
        level = f" [{severities[i]}]" if severities is not None else ""
        cells = (f"{hit.rule}{level}", item, visible(hit.field))
        found = hit.message.split(f" {hit.field} ", 1)[-1] if hit.field else hit.message
        lines.append("  ".join(_cell(c, w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)) + "  " + found)
    lines.append("")
    lines += [f"security.{rule}: {SECURITY_KINDS[rule]}" for rule in dict.fromkeys(h.rule for h in hits)]
    return safe_log("\n".join(lines) + "\n")


def _cell(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


def first_contact_text(*, tools: Sequence[Any] | None = None, prompts: Sequence[Any] | None = None,
                       resources: Sequence[Any] | None = None, resource_templates: Sequence[Any] | None = None,
                       instructions: str | None = None) -> str:
    """What `mcptape init` prints about the surface it listed: the review table, headed."""
    given = {"tools/list": tools, "prompts/list": prompts, "resources/list": resources,
             "resources/templates/list": resource_templates}
    lists = {method: list(items) for method, items in given.items() if items}
    return "\nsecurity review of the listed surface (as `mcptape check --surface` does):\n" + \
        review_table(review_surface(lists, instructions))


def run_surface(loaded: LoadedConfig) -> int:
    """List each server of the config and print the review of its surface; the worst severity's exit code."""
    policy = Policy.from_settings(loaded.config.drift)
    codes = [EXIT_OK]
    steps = [Step(action=a) for a in _STEPS]  # type: ignore[arg-type]
    for name, server in loaded.config.servers.items():
        try:
            transport = open_transport(server, base_dir=loaded.base_dir, env=server.env)
        except McptapeError as e:
            raise type(e)(f"server `{name}` failed to start: {e.message}", hint=e.hint) from e
        recording = record_session(transport, steps, loaded.config.client, session="check --surface",
                                   protocol=server.protocol)
        if recording.error is not None:
            raise type(recording.error)(f"listing server `{name}` failed: {recording.error.message}",
                                        hint=recording.error.hint)
        lists, instructions = listed_surface(recording.events)
        kept_hits: list[SurfaceHit] = []
        severities: list[str] = []
        for hit in review_surface(lists, instructions):
            kept = policy.apply([Finding.of("security", hit.rule, hit.field, hit.message)], None)
            if kept:
                kept_hits.append(hit)
                severities.append(kept[0].severity)
                codes.append(SEVERITY_EXIT[kept[0].severity])
        sizes = [(len(lists.get(m, {}).get(SURFACE_LISTS[m][0], [])), SURFACE_LISTS[m][2]) for m in SURFACE_LISTS]
        counts = ", ".join(f"{n} {noun}{'s' * (n != 1)}" for n, noun in sizes)
        print(safe_log(f"server {name}: {counts}{', instructions' if instructions else ''}"))
        print(review_table(kept_hits, severities), end="")
    return worst_exit(codes)
