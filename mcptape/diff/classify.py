"""Classifiers: small pure functions that turn one difference into Findings, found by name.

Three kinds (small pure functions found by name: CONTRIBUTING.md), which the engine runs from the registry it is given (checks.py,
where `default_checks` lists mcptape's own explicitly):
- result classifiers, by method: compare the `result` of two paired calls ("tools/list" ->
  surface + schema, "initialize" -> session, anything else -> `classify_result`);
- call checks, run on every paired call in order (arguments, answer, notifications, garbage);
  a pair that is the same events on both sides has nothing to compare and is not checked;
- session checks, run once per pair of tapes (server requests, process events, protocol).

What each finding kind means, its default severity, the severities its check may give instead and
how reports say it are the drift table's (verdict/vocabulary.py); findings are built through it
(`Pair.found`, `Finding.of`), so a kind or severity it does not hold fails where it is made.
Every Finding carries golden_line/fresh_line: the tape line of the event it is about.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcptape.diff.calls import Call, TapeCalls
from mcptape.diff.schema_change import (
    Role,
    SchemaChange,
    annotation_changes,
    prompt_argument_changes,
    schema_changes,
)
from mcptape.diff.values import MAX_DIFFS, Change, changes, clip, contrast, describe, fast_same, join, show
from mcptape.jsonrpc import canonical
from mcptape.mcp import HANDSHAKE_METHODS, strip_meta
from mcptape.placeholders import untag
from mcptape.tape.events import UNCOMPARED_NOTES
from mcptape.verdict.model import Finding
from mcptape.verdict.vocabulary import Severity
from mcptape.volatility.normalize import FLOATING_NOTIFICATIONS


@dataclass
class SurfaceNote:
    """A finding that puts a name into a column of the tool-surface table (kept only if the finding is)."""

    finding: Finding
    column: str  # added | removed | breaking | compatible | cosmetic
    name: str


@dataclass
class Pair:
    """Two paired calls and their tapes: what every call classifier gets."""

    golden: Call
    fresh: Call
    g: TapeCalls
    f: TapeCalls
    added_surface: Severity = "structural"
    surface: list[SurfaceNote] = field(default_factory=list)
    # The engine's result classifiers by method (checks.py); a method not listed: classify_result.
    result_classifiers: Mapping[str, ResultClassifier] = field(default_factory=dict)

    def found(
        self,
        category: str,
        kind: str,
        path: str,
        message: str,
        before: Any = None,
        after: Any = None,
        *,
        severity: Severity | None = None,
        g_event: int | None = None,
        f_event: int | None = None,
    ) -> Finding:
        """A finding of this pair (verdict/model.py's `finding`: the drift table's severity unless
        given), placed at the events it is about (by default the calls' answers or requests)."""
        g_ev = g_event if g_event is not None else _answer_or_request(self.golden)
        f_ev = f_event if f_event is not None else _answer_or_request(self.fresh)
        return Finding.of(category, kind, path, message, clip(before), clip(after), severity=severity,
                          golden_line=self.g.line(g_ev), fresh_line=self.f.line(f_ev))


def _answer_or_request(call: Call) -> int | None:
    return call.answer_event if call.answer_event is not None else call.request_event


ResultClassifier = Callable[[Pair, Any, Any], list[Finding]]
CallCheck = Callable[[Pair], list[Finding]]
# A session check returns (fresh event index that places it, finding) pairs.
SessionCheck = Callable[[TapeCalls, TapeCalls], list[tuple[int, Finding]]]

def _more(pair: Pair, found: list[Change], category: str, kind: str, prefix_findings: list[Finding]) -> list[Finding]:
    """The first MAX_DIFFS findings and one that says there were more, of the same class (so the
    `fail_on` or `ignore` rule that relaxes the others relaxes it too)."""
    if len(found) > MAX_DIFFS:
        prefix_findings = prefix_findings[:MAX_DIFFS]
        prefix_findings.append(pair.found(category, kind, "", "… and more differences (list cut short)"))
    return prefix_findings


# --- per call --------------------------------------------------------------------------------


def check_arguments(pair: Pair) -> list[Finding]:
    """Calls paired by identity whose params differ: the client asked something else."""
    if fast_same(pair.golden.params, pair.fresh.params):
        return []
    found = changes(_params(pair.golden), _params(pair.fresh), "params")
    out = [pair.found("call", "arguments", c.path, describe(c), c.before, c.after,
                      g_event=pair.golden.request_event, f_event=pair.fresh.request_event) for c in found]
    return [*client_protocol(pair), *_more(pair, found, "call", "arguments", out)]


def _params(call: Call) -> Any:
    params = strip_meta(call.params)
    if call.method in HANDSHAKE_METHODS and isinstance(params, dict):
        # clientInfo is who the client is; protocolVersion is client_protocol's
        params = {k: v for k, v in params.items() if k not in ("clientInfo", "protocolVersion")}
    return params


def _asked_version(call: Call) -> Any:
    return call.params.get("protocolVersion") if call.method == "initialize" and isinstance(call.params, dict) else None


def _answered_version(call: Call) -> Any:
    result = call.answer.get("result") if isinstance(call.answer, dict) else None
    return result.get("protocolVersion") if isinstance(result, dict) else None


def client_protocol(pair: Pair) -> list[Finding]:
    """`initialize` asked another protocol version: the client's change, never the server's.

    Current clients ask 2025-11-25, older ones (and mcptape before 0.2) 2025-06-18: a golden and
    a tape of the same steps recorded behind another client differ in that alone. When the
    server accepted what each client asked (answered the version asked), or answered both the
    same, it behaved the same: info. When its answer changed otherwise (it no longer accepts
    the version asked), output, ranked as the client's own change (after every server drift).
    """
    asked_g, asked_f = _asked_version(pair.golden), _asked_version(pair.fresh)
    if fast_same(asked_g, asked_f):
        return []
    got_g, got_f = _answered_version(pair.golden), _answered_version(pair.fresh)
    same = fast_same(got_g, got_f) or (fast_same(got_g, asked_g) and fast_same(got_f, asked_f))
    answer = f"answered {show(got_g)} → {show(got_f)}" if not fast_same(got_g, got_f) else f"answered {show(got_f)}"
    message = f"the client asked protocol {show(asked_g)} → {show(asked_f)}; the server {answer}" + (
        " (it accepted each: the client's change, not the server's)" if same else "")
    return [pair.found("session", "client_protocol", "params.protocolVersion", message,
                       {"asked": asked_g, "answered": got_g}, {"asked": asked_f, "answered": got_f},
                       severity="info" if same else "output", g_event=pair.golden.request_event,
                       f_event=pair.fresh.request_event)]


def check_answer(pair: Pair) -> list[Finding]:
    """Result vs result (by method's classifier), result vs error, error vs error, answer vs none."""
    g, f = pair.golden, pair.fresh
    if g.notify or f.notify:
        return []
    if g.answer is None and f.answer is None:
        return []
    if f.answer is None:
        # A line that is no JSON-RPC message (not UTF-8, not JSON) may have been the answer: say so.
        why = "the server wrote a line that does not parse instead" if f.garbage else "the server did not respond"
        return [pair.found("process", "no_answer", "", f"no answer ({why})", _answer_summary(g.answer))]
    if g.answer is None:
        return [pair.found("process", "answered", "", "answered now, had no answer in the golden tape", None,
                           _answer_summary(f.answer))]
    ga, fa = g.answer, f.answer
    if "error" in ga and "error" not in fa:
        if _is_error_result(fa.get("result")):  # the call still fails, reported another way
            return [pair.found("error", "error_to_result", "",
                               f"JSON-RPC error {_error_brief(ga)} → isError result {_error_result_brief(fa)}",
                               ga.get("error"), clip(fa.get("result")))]
        return [pair.found("error", "error_to_result", "", f"error {_error_brief(ga)} → result",
                           ga.get("error"), clip(fa.get("result")))]
    if "error" in fa and "error" not in ga:
        if _is_error_result(ga.get("result")):
            return [pair.found("error", "result_to_error", "",
                               f"isError result {_error_result_brief(ga)} → JSON-RPC error {_error_brief(fa)}",
                               clip(ga.get("result")), fa.get("error"))]
        return [pair.found("error", "result_to_error", "", f"result → error {_error_brief(fa)}",
                           clip(ga.get("result")), fa.get("error"))]
    if "error" in ga:
        return _error_changes(pair, ga.get("error"), fa.get("error"))
    ra, rb = ga.get("result"), fa.get("result")
    if fast_same(ra, rb):
        return []
    classifier = pair.result_classifiers.get(g.method, classify_result)
    return classifier(pair, ra, rb)


def _is_error_result(result: Any) -> bool:
    """A tool's failure reported as a result (`isError: true`), not as a JSON-RPC error."""
    return isinstance(result, dict) and result.get("isError") is True


def _error_result_brief(answer: dict[str, Any]) -> str:
    """An isError result in a few words: its first text, as a reviewer would read it."""
    result = answer.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    texts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    return show(texts[0]) if texts else "(no text)"


def _error_brief(answer: dict[str, Any]) -> str:
    err = answer.get("error") if isinstance(answer.get("error"), dict) else {}
    assert isinstance(err, dict)
    return f"{err.get('code')} {show(err.get('message'))}"


def _answer_summary(answer: dict[str, Any] | None) -> Any:
    if answer is None:
        return None
    return {"error": answer["error"]} if "error" in answer else {"result": clip(answer.get("result"), 200)}


# Codes a revision change moved for the same condition: resource not found was -32002 and is
# -32602 (invalid params) in the current revisions; -32002 is retired, never reused.
_MOVED_CODES = {("resources/read", frozenset({-32002, -32602})): "resource not found"}


def _moved_code(pair: Pair, ca: Any, cb: Any) -> str | None:
    """What condition changed its code with the protocol revision (None: the server's change)."""
    if pair.g.protocol == pair.f.protocol or pair.g.protocol is None or pair.f.protocol is None:
        return None
    return _MOVED_CODES.get((pair.golden.method, frozenset({ca, cb}))) if ca != cb else None


def _error_changes(pair: Pair, ea: Any, eb: Any) -> list[Finding]:
    ea = ea if isinstance(ea, dict) else {}
    eb = eb if isinstance(eb, dict) else {}
    out: list[Finding] = []
    moved = _moved_code(pair, ea.get("code"), eb.get("code"))
    if moved is not None:
        # The protocol's change, said once per pair of tapes (the protocol finding names the revisions).
        said = pair.f.said
        if moved not in said:
            said.add(moved)
            out.append(pair.found("error", "code", "error.code",
                                  f"{show(ea.get('code'))} → {show(eb.get('code'))}: {moved}, as protocol "
                                    f"{pair.f.protocol} says it (was {pair.g.protocol}): the protocol's change",
                                  ea.get("code"), eb.get("code"), severity="info"))
    elif not fast_same(ea.get("code"), eb.get("code")):
        out.append(pair.found("error", "code", "error.code",
                              f"{show(ea.get('code'))} → {show(eb.get('code'))}", ea.get("code"),
                              eb.get("code")))
    if not fast_same(ea.get("message"), eb.get("message")):
        out.append(pair.found("error", "message", "error.message",
                              f"{show(ea.get('message'))} → {show(eb.get('message'))}", ea.get("message"),
                              eb.get("message")))
    rest_a = {k: v for k, v in ea.items() if k not in ("code", "message")}
    rest_b = {k: v for k, v in eb.items() if k not in ("code", "message")}
    found = changes(rest_a, rest_b, "error")
    out.extend(pair.found("error", "data", c.path, describe(c), c.before, c.after) for c in found)
    return out


def classify_result(pair: Pair, ra: Any, rb: Any) -> list[Finding]:
    """Any result: path-level differences; a tool result flipping `isError` is an error drift."""
    out: list[Finding] = []
    if pair.golden.method == "tools/call" and isinstance(ra, dict) and isinstance(rb, dict):
        ia, ib = bool(ra.get("isError")), bool(rb.get("isError"))
        if ia != ib:
            out.append(pair.found("error", "is_error", "result.isError",
                                  "tool result became an error" if ib else "tool error became a result",
                                  ra.get("isError"), rb.get("isError")))
    found = changes(ra, rb, "result")
    for c in found:
        if c.path == "result.isError" and out:
            continue
        out.append(pair.found("result", c.kind, c.path, describe(c), c.before, c.after))
    return _more(pair, found, "result", "changed", out)


# --- surface and schema ----------------------------------------------------------------------

# list method -> (result key, item identity field, noun, surface-table prefix)
SURFACE_LISTS = {
    "tools/list": ("tools", "name", "tool", ""),
    "prompts/list": ("prompts", "name", "prompt", "prompt:"),
    "resources/list": ("resources", "uri", "resource", "resource:"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate", "resource template", "template:"),
}


def classify_surface(pair: Pair, ra: Any, rb: Any) -> list[Finding]:
    """Items added/removed (surface), and per item the schema classification of what changed."""
    list_key, id_field, noun, prefix = SURFACE_LISTS[pair.golden.method]
    ra = ra if isinstance(ra, dict) else {}
    rb = rb if isinstance(rb, dict) else {}
    la, lb = ra.get(list_key), rb.get(list_key)
    items_a = _by_id(la, id_field)
    items_b = _by_id(lb, id_field)
    out: list[Finding] = []
    base = join("result", list_key)
    for name, item in items_a.items():
        if name not in items_b:
            f = pair.found("surface", "removed", f"{base}[{name}]", f"{noun} `{name}` removed", item)
            out.append(f)
            pair.surface.append(SurfaceNote(f, "removed", prefix + name))
    for name, item in items_b.items():
        if name not in items_a:
            f = pair.found("surface", "added", f"{base}[{name}]", f"{noun} `{name}` added", None, item,
                           severity=pair.added_surface)
            out.append(f)
            pair.surface.append(SurfaceNote(f, "added", prefix + name))
    for name, item_a in items_a.items():
        item_b = items_b.get(name)
        if item_b is None or fast_same(item_a, item_b):
            continue
        for change in _item_changes(pair.golden.method, item_a, item_b, f"{base}[{name}]"):
            f = pair.found("schema", change.kind, change.path, f"{noun} `{name}`: {change.message}",
                           change.before, change.after)
            out.append(f)
            pair.surface.append(SurfaceNote(f, change.kind, prefix + name))
    # Everything beside the list (nextCursor, _meta): a plain result difference.
    rest_a = {k: v for k, v in ra.items() if k != list_key}
    rest_b = {k: v for k, v in rb.items() if k != list_key}
    out.extend(pair.found("result", c.kind, c.path, describe(c), c.before, c.after)
               for c in changes(rest_a, rest_b, "result"))
    if not isinstance(la, list) or not isinstance(lb, list):
        out.extend(classify_result(pair, {list_key: la}, {list_key: lb}))
    return out


def _by_id(items: Any, id_field: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                out.setdefault(str(item.get(id_field)), item)
    return out


def _item_changes(method: str, a: dict[str, Any], b: dict[str, Any], path: str) -> Iterable[SchemaChange]:
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if fast_same(va, vb):
            continue
        p = join(path, key)
        if method == "tools/list" and key in ("inputSchema", "outputSchema"):
            role: Role = "input" if key == "inputSchema" else "output"
            if va is None:
                yield SchemaChange(p, "compatible", f"{key} added", None, vb)
            elif vb is None:
                yield SchemaChange(p, "breaking", f"{key} removed", va, None)
            else:
                yield from schema_changes(va, vb, p, role)
        elif method == "tools/list" and key == "annotations":
            yield from annotation_changes(va, vb, p)
        elif method == "prompts/list" and key == "arguments":
            yield from prompt_argument_changes(va, vb, p)
        elif key == "_meta":
            yield from _item_meta_changes(va, vb, p)
        elif method == "tools/list" and key == "execution":
            yield from _execution_changes(va, vb, p)
        elif key in ("description", "title", "icons"):
            yield SchemaChange(p, "cosmetic", f"{key} {contrast(va, vb)}", va, vb)
        else:
            # name/uri never differ here (they are the key); mimeType, size, execution, ...
            yield SchemaChange(p, "compatible", f"{key} {show(va)} → {show(vb)}", va, vb)


# `_meta` keys of a tool (resource, prompt) that are behaviour: MCP Apps' `ui` (the UI resource
# a host renders for the tool, and who may call it), in its current and its first spelling.
_BEHAVIOUR_META = ("ui", "ui/resourceUri")


def _item_meta_changes(a: Any, b: Any, path: str) -> Iterable[SchemaChange]:
    """An item's `_meta`: notes for clients (cosmetic), except what a host does with it (MCP
    Apps' `ui`): a UI lost is breaking (hosts no longer show the app), gained or changed compatible."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    rest_a = {k: v for k, v in a.items() if k not in _BEHAVIOUR_META}
    rest_b = {k: v for k, v in b.items() if k not in _BEHAVIOUR_META}
    for key in _BEHAVIOUR_META:
        va, vb = a.get(key), b.get(key)
        if fast_same(va, vb):
            continue
        p = join(path, key)
        if vb is None:
            yield SchemaChange(p, "breaking", f"MCP Apps UI removed {show(va)}", va, None)
        elif va is None:
            yield SchemaChange(p, "compatible", f"MCP Apps UI added {show(vb)}", None, vb)
        else:
            for c in changes(va, vb, p):
                yield SchemaChange(c.path, "compatible", f"MCP Apps UI {describe(c)}", c.before, c.after)
    if not fast_same(rest_a, rest_b):
        yield SchemaChange(path, "cosmetic", f"_meta {contrast(rest_a or None, rest_b or None)}", rest_a or None,
                           rest_b or None)


# A tool's `execution.taskSupport` (2025-11-25 tasks): how a caller may invoke it. Absent means
# "forbidden" (the tool runs only as a plain call).
_TASK_DEFAULT = "forbidden"


def _execution_changes(a: Any, b: Any, path: str) -> Iterable[SchemaChange]:
    """A tool's `execution`: task support compared after its default. Restating the default is
    cosmetic; a tool that became task-only (`required`) breaks callers that do not use tasks,
    one that stopped supporting tasks breaks callers that do: both breaking; a tool that now
    also runs as a task (`optional`) is compatible."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    ta, tb = a.get("taskSupport", _TASK_DEFAULT), b.get("taskSupport", _TASK_DEFAULT)
    p = join(path, "taskSupport")
    if fast_same(ta, tb):
        if not fast_same(a.get("taskSupport"), b.get("taskSupport")):
            yield SchemaChange(p, "cosmetic", f"taskSupport {show(a.get('taskSupport'))} → {show(b.get('taskSupport'))} "
                               f"(the same under the default {show(_TASK_DEFAULT)})", a.get("taskSupport"), b.get("taskSupport"))
    elif tb == "required":
        yield SchemaChange(p, "breaking", f"became task-only (taskSupport {show(ta)} → \"required\")", ta, tb)
    elif tb == _TASK_DEFAULT:
        yield SchemaChange(p, "breaking", f"stopped supporting tasks (taskSupport {show(ta)} → \"forbidden\")", ta, tb)
    else:
        yield SchemaChange(p, "compatible", f"taskSupport {show(ta)} → {show(tb)}", ta, tb)
    rest_a = {k: v for k, v in a.items() if k != "taskSupport"}
    rest_b = {k: v for k, v in b.items() if k != "taskSupport"}
    for c in changes(rest_a, rest_b, path):
        yield SchemaChange(c.path, "compatible", describe(c), c.before, c.after)


# --- session ---------------------------------------------------------------------------------


def classify_session(pair: Pair, ra: Any, rb: Any) -> list[Finding]:
    """The handshake: protocol version and lost capabilities are structural; serverInfo is output."""
    ra = ra if isinstance(ra, dict) else {}
    rb = rb if isinstance(rb, dict) else {}
    out: list[Finding] = []
    client_asked = not fast_same(_asked_version(pair.golden), _asked_version(pair.fresh))
    for key in ("protocolVersion", "supportedVersions"):
        if key == "protocolVersion" and client_asked:
            continue  # the answer follows the question: client_protocol says both
        if not fast_same(ra.get(key), rb.get(key)):
            out.append(pair.found("session", "protocol", f"result.{key}",
                                  f"protocol version {show(ra.get(key))} → {show(rb.get(key))}", ra.get(key),
                                  rb.get(key)))
    out.extend(_capabilities(pair, ra.get("capabilities"), rb.get("capabilities"), "result.capabilities"))
    for c in changes(ra.get("serverInfo"), rb.get("serverInfo"), "result.serverInfo"):
        out.append(pair.found("session", "server_info", c.path, f"server {describe(c)}", c.before, c.after))
    rest = ("protocolVersion", "supportedVersions", "capabilities", "serverInfo")
    for c in changes({k: v for k, v in ra.items() if k not in rest}, {k: v for k, v in rb.items() if k not in rest},
                     "result"):
        out.append(pair.found("session", "changed", c.path, describe(c), c.before, c.after))
    return out


def _capabilities(pair: Pair, a: Any, b: Any, path: str) -> list[Finding]:
    out: list[Finding] = []
    for c in changes(a, b, path):
        if c.kind == "removed":
            out.append(pair.found("session", "capability_removed", c.path,
                                  f"capability removed {show(c.before)}", c.before))
        elif c.kind == "added":
            out.append(pair.found("session", "capability_added", c.path, f"capability added {show(c.after)}",
                                  None, c.after))
        else:
            lost = c.before is True and c.after is not True
            out.append(pair.found("session", "capability_changed", c.path, f"capability {describe(c)}",
                                  c.before, c.after, severity="structural" if lost else "output"))
    return out


# --- notifications and garbage within a call -------------------------------------------------


def check_notifications(pair: Pair) -> list[Finding]:
    """Per call, per method, as multisets: identical ones pair first, the rest pair in order."""
    return compare_notifications(pair, pair.golden.notifications, pair.fresh.notifications)


def compare_notifications(pair: Pair, g_events: list[int], f_events: list[int]) -> list[Finding]:
    if not g_events and not f_events:
        return []
    g_evs, f_evs = pair.g.tape.events, pair.f.tape.events
    out: list[Finding] = []
    g_by: dict[str, list[int]] = defaultdict(list)
    f_by: dict[str, list[int]] = defaultdict(list)
    for i in g_events:
        g_by[str(g_evs[i].get("method"))].append(i)
    for i in f_events:
        f_by[str(f_evs[i].get("method"))].append(i)
    for method in list(dict.fromkeys([*f_by, *g_by])):
        gl, fl = g_by.get(method, []), f_by.get(method, [])
        pool: dict[str, list[int]] = defaultdict(list)
        for i in gl:
            pool[untag(canonical(g_evs[i]["msg"].get("params")))].append(i)
        used: set[int] = set()
        rest_f: list[int] = []
        for i in fl:
            candidates = pool.get(untag(canonical(f_evs[i]["msg"].get("params"))))
            if candidates:
                used.add(candidates.pop(0))
            else:
                rest_f.append(i)
        rest_g = [i for i in gl if i not in used]
        path = f"notifications[{method}]"
        for gi, fi in zip(rest_g, rest_f, strict=False):
            for c in changes(g_evs[gi]["msg"].get("params"), f_evs[fi]["msg"].get("params"), path + ".params"):
                out.append(pair.found("notification", "changed", c.path, describe(c), c.before, c.after,
                                      g_event=gi, f_event=fi))
        severity, why = _one_sided(pair, method)
        for gi in rest_g[len(rest_f):]:
            out.append(pair.found("notification", "removed", path, f"{method} no longer sent{why}",
                                  g_evs[gi]["msg"].get("params"), severity=severity, g_event=gi))
        for fi in rest_f[len(rest_g):]:
            out.append(pair.found("notification", "added", path, f"{method} sent now{why}", None,
                                  f_evs[fi]["msg"].get("params"), severity=severity, f_event=fi))
    out.extend(_progress_order(pair))
    return out


def _one_sided(pair: Pair, method: str) -> tuple[Severity, str]:
    """How a notification on one side only counts. Over streamable HTTP a racing notification the
    server sends outside any request (a list_changed after `initialized`) travels on the GET stream a
    client may or may not hold open in time: whether it is on a tape says which client recorded it
    and when its stream opened, not what the server does. It is said, at info; otherwise output."""
    over_http = "http" in (pair.g.tape.header.get("transport"), pair.f.tape.header.get("transport"))
    if over_http and method in FLOATING_NOTIFICATIONS:
        return "info", " (over HTTP: outside a request, it reaches only a client listening on a GET stream)"
    return "output", ""


def _progress_order(pair: Pair) -> list[Finding]:
    """Progress must precede the response of its request (the one order the protocol fixes)."""
    def late(call: Call, events: list[dict[str, Any]]) -> bool:
        if call.answer_event is None:
            return False
        return any(events[i].get("method") == "notifications/progress" and i > call.answer_event
                   for i in call.notifications)

    g_late, f_late = late(pair.golden, pair.g.tape.events), late(pair.fresh, pair.f.tape.events)
    if f_late and not g_late:
        return [pair.found("notification", "order", "notifications[notifications/progress]",
                           "progress sent after the response")]
    return []


def check_garbage(pair: Pair) -> list[Finding]:
    if not pair.golden.garbage and not pair.fresh.garbage:
        return []
    return compare_garbage(pair.g, pair.f, pair.golden.garbage, pair.fresh.garbage, pair)


def compare_garbage(g: TapeCalls, f: TapeCalls, g_idx: list[int], f_idx: list[int], pair: Pair | None) -> list[Finding]:
    def text(tc: TapeCalls, i: int) -> str:
        ev = tc.tape.events[i]
        return str(ev.get("text") if "text" in ev else "b64:" + str(ev.get("b64")))

    pool: dict[str, list[int]] = defaultdict(list)
    for i in g_idx:
        pool[untag(text(g, i))].append(i)
    added: list[int] = []
    for i in f_idx:
        if pool.get(untag(text(f, i))):
            pool[untag(text(f, i))].pop()
        else:
            added.append(i)
    removed = [i for lst in pool.values() for i in lst]
    out: list[Finding] = []
    for i in added:
        out.append(Finding.of("process", "garbage", "stdout", f"non-JSON stdout line now: {show(text(f, i))}",
                              None, clip(text(f, i)), fresh_line=f.line(i)))
    for i in removed:
        out.append(Finding.of("process", "garbage", "stdout", f"non-JSON stdout line gone: {show(text(g, i))}",
                              clip(text(g, i)), golden_line=g.line(i)))
    return out


# --- session-wide ----------------------------------------------------------------------------


def check_server_requests(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """Server-initiated requests as a multiset over the session: their timing races the calls."""
    pool: dict[str, list[int]] = defaultdict(list)
    for k, sreq in enumerate(g.server_requests):
        pool[sreq.key].append(k)
    out: list[tuple[int, Finding]] = []
    added = []
    for sreq in f.server_requests:
        if pool.get(sreq.key):
            pool[sreq.key].pop(0)
        else:
            added.append(sreq)
    removed = sorted(k for ks in pool.values() for k in ks)
    # What is left of one method on both sides pairs in order: a sampling loop asked other
    # questions (the same turns, another content), said as what changed in each, not as requests
    # gone and new ones whose text is cut before the difference.
    for sreq in list(added):
        same = next((i for i in removed if g.server_requests[i].method == sreq.method), None)
        if same is None:
            continue
        removed.remove(same)
        added.remove(sreq)
        old = g.server_requests[same]
        path = f"server_request[{sreq.method}].params"
        for c in changes(old.params, sreq.params, path):
            out.append((sreq.event, Finding.of("call", "server_request_changed", c.path, describe(c), c.before,
                                               c.after, golden_line=g.line(old.event),
                                               fresh_line=f.line(sreq.event))))
    for sreq in added:
        out.append((sreq.event, Finding.of("call", "server_request_added", f"server_request[{sreq.method}]",
                                           f"server now sends {sreq.method} {show(sreq.params)}", None,
                                           clip(sreq.params), fresh_line=f.line(sreq.event))))
    for k in removed:
        sreq = g.server_requests[k]
        out.append((len(f.tape.events), Finding.of("call", "server_request_removed",
                                                   f"server_request[{sreq.method}]",
                                                   f"server no longer sends {sreq.method}", clip(sreq.params),
                                                   golden_line=g.line(sreq.event))))
    return out


def _exit_status(tc: TapeCalls) -> tuple[Any, Any] | None:
    if not tc.exits:
        return None
    ev = tc.tape.events[tc.exits[-1]]
    return ev.get("code"), ev.get("signal")


def _abnormal(status: tuple[Any, Any] | None) -> bool:
    # mcptape's own shutdown ends servers with EOF, SIGTERM or SIGKILL; anything else is the server's doing.
    if status is None:
        return False
    code, sig = status
    return (code not in (0, None)) or (sig is not None and sig not in ("SIGTERM", "SIGKILL"))


def check_process(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """Exit status, garbage before any call, and mcptape's own notes (timeouts, ...)."""
    out: list[tuple[int, Finding]] = []
    gs, fs = _exit_status(g), _exit_status(f)
    if gs != fs and (gs is not None or _abnormal(fs)):
        where = f.exits[-1] if f.exits else len(f.tape.events)
        crash = _abnormal(fs) and not _abnormal(gs)
        out.append((where, Finding.of("process", "crash" if crash else "exit", "exit",
                                      f"server {'crashed' if crash else 'exited'}: {_status_text(gs)} → {_status_text(fs)}",
                                      _status_text(gs), _status_text(fs),
                                      severity="structural" if crash else "output",
                                      golden_line=g.line(g.exits[-1]) if g.exits else None,
                                      fresh_line=f.line(f.exits[-1]) if f.exits else None)))
    for finding in compare_garbage(g, f, g.prelude_garbage, f.prelude_garbage, None):
        out.append((0, finding))
    g_notes = defaultdict(list)
    for i in g.notes:
        g_notes[str(g.tape.events[i].get("what"))].append(i)
    for i in f.notes:
        what = str(f.tape.events[i].get("what"))
        if what in UNCOMPARED_NOTES:  # about stderr, which is never compared
            continue
        if g_notes.get(what):
            g_notes[what].pop(0)
            continue
        out.append((i, Finding.of("process", "note", "note",
                                  f"mcptape noted: {what} {show(f.tape.events[i].get('detail'))}", None,
                                  clip(f.tape.events[i].get("detail")), fresh_line=f.line(i))))
    for what, idx in g_notes.items():
        for i in idx if what not in UNCOMPARED_NOTES else ():
            out.append((len(f.tape.events), Finding.of("process", "note", "note", f"no longer noted: {what}",
                                                       clip(g.tape.events[i].get("detail")),
                                                       golden_line=g.line(i))))
    return out


def _status_text(status: tuple[Any, Any] | None) -> str:
    if status is None:
        return "still running at the end of the tape"
    code, sig = status
    return f"signal {sig}" if sig else f"exit code {code}"


def check_protocol_version(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """A protocol change the handshake did not already show (2026-07-28 tapes have none), within an era
    (protocol.py's check_protocol reports a change of era and asks this one otherwise)."""
    if g.has_handshake() and f.has_handshake():
        return []  # the session classifier compares protocolVersion on the paired handshake
    gp, fp = g.protocol, f.protocol  # may scan the tape when the header lacks it: once each
    if gp == fp:
        return []
    return [(0, Finding.of("session", "protocol", "protocol", f"protocol version {show(gp)} → {show(fp)}", gp,
                           fp))]


def check_complete(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """A fresh tape cut short (no footer: the recorder died) where the golden one is whole."""
    if g.tape.complete and not f.tape.complete:
        return [(len(f.tape.events), Finding.of("process", "crash", "tape",
                                                "fresh tape was cut short (no footer)", True, False))]
    return []
