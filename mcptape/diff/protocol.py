"""Cross-version diff: the 2026-07-28 envelope kept out of the behaviour verdict, the handshake as "the session".

Owns what changes when a server moves between the legacy MCP revisions (2024-11-05 ...
2025-11-25, opened with `initialize`) and the stateless 2026-07-28 (`server/discover`,
per-request `_meta`, input-required round trips): pure functions over plain data, applied to
both tapes before diff/compare.py pairs their calls (`prepare`), and the one session check that
reports the change (`check_protocol`, which checks.py registers as "protocol"; it asks
classify.check_protocol_version about everything that is not a change of era), and the
deprecations of its revision the fresh tape's server still relies on (`check_deprecations`,
info findings: logging, sampling and roots in 2026-07-28 terms, the HTTP+SSE transport). Pairing and
classifying stay calls.py's, align.py's and classify.py's.

Negotiation (in any pair of tapes): a `server/discover` probe refused before `initialize` (an
error of any code, an error with id null, an HTTP refusal noted by `rec --listen`) leaves the
tape before anything is compared (`without_refused_probe`): it is how client and server agreed.

Envelope (never behaviour, in any pair of tapes):
- results: `resultType: "complete"`, `ttlMs`, `_meta["io.modelcontextprotocol/serverInfo"]`, and
  `cacheScope` across eras only (a legacy answer has none): between two 2026-07-28 tapes
  `public` ↔ `private` is behaviour (who may see a cached answer) and is compared;
  (a `server/discover` result's serverInfo moves to `result.serverInfo`, where classify.py's
  session classifier reports a changed one, as it does for `initialize`);
- requests: `_meta` keys `io.modelcontextprotocol/protocolVersion`, `clientCapabilities`,
  `clientInfo`, `logLevel` (params left empty by that are absent params, as on legacy);
  `params: {}` is absent params, and `arguments: {}` of tools/call and prompts/get is absent
  arguments, in requests and notifications of the client alike (clients differ in this only).
A change of era (one tape legacy, the other 2026-07-28) is ONE structural finding, category
"protocol", placed first; beneath it the tapes are compared call by call as usual, except that
- the handshakes (`initialize`, `server/discover`, `notifications/initialized`) are "the
  session": they leave the call list and their results are compared here (serverInfo, an output
  finding if it changed; capabilities differ by era by design — list-changed moved to
  `subscriptions/listen` — so only the features declared are compared, a feature lost is
  structural and one gained output, as within an era, and the rest is named in the protocol finding);
- a 2026-07-28 input-required round trip becomes what the legacy wire did for the same question:
  the interim call disappears, its `inputRequests` become server requests answered with the
  `inputResponses` of the retry, and the retry loses `inputResponses`/`requestState`. So the
  question the server asks is still compared (classify.check_server_requests), by content
  (the SDK 2.3 renders an elicitation schema with a `title` on legacy and without on 2026-07-28:
  that shows as a changed server request, output, because it is what the user is asked);
- a `listen` step's stream mechanics (`subscriptions/listen`, its acknowledgement, the
  `notifications/cancelled` that ends it) leave; the notifications received stay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcptape.diff import classify
from mcptape.diff.calls import TapeCalls
from mcptape.diff.values import clip, show
from mcptape.jsonvalue import json_equal
from mcptape.mcp import (
    HANDSHAKE_METHODS,
    META_SERVER_INFO,
    REQUEST_ENVELOPE,
    RESULT_ENVELOPE,
    era,
    meta_version,
)
from mcptape.tape.format import Event, Tape
from mcptape.verdict.model import Finding

INPUT_KEYS = ("inputResponses", "requestState")
# Where prepare() leaves what the session check needs, in its private copies of the headers.
_SESSION_KEY = "_mcptape_session"


# --- envelope stripping (pure) ---------------------------------------------------------------


def strip_meta_keys(meta: Any, keys: frozenset[str]) -> Any:
    """`_meta` without the envelope `keys`; None when nothing else was in it."""
    if not isinstance(meta, dict):
        return meta
    rest = {k: v for k, v in meta.items() if k not in keys}
    return rest or None


# Requests whose `arguments: {}` says what no `arguments` says (the SDK sends `{}`, ci sends none).
_EMPTY_ARGUMENTS_MEAN_NONE = frozenset({"tools/call", "prompts/get"})


def strip_request_params(params: Any, method: Any = None) -> Any:
    """Request params without the 2026-07-28 envelope keys of `_meta`; None when nothing is left.

    Empty params are absent params (`"params": {}` from one client, none from another: one
    request), and `arguments: {}` of a tools/call or prompts/get is no `arguments`.
    """
    if not isinstance(params, dict):
        return params
    if not params:
        return None
    empty_arguments = method in _EMPTY_ARGUMENTS_MEAN_NONE and params.get("arguments") == {}
    if "_meta" not in params and not empty_arguments:
        return params
    out = {k: v for k, v in params.items() if k != "_meta" and not (empty_arguments and k == "arguments")}
    if "_meta" in params:
        meta = strip_meta_keys(params["_meta"], REQUEST_ENVELOPE)
        if meta is not None:
            out["_meta"] = meta
    return out or None


def strip_result(result: Any, method: str | None = None, *, cross: bool = False) -> Any:
    """A result without its envelope; a discover result's serverInfo moves to `result.serverInfo`.
    `cacheScope` leaves only `cross` eras (within 2026-07-28 it is behaviour: module docstring)."""
    if not isinstance(result, dict):
        return result
    if not ("resultType" in result or (cross and "cacheScope" in result) or "ttlMs" in result or "_meta" in result):
        return result
    envelope = ("cacheScope", "ttlMs", "_meta") if cross else ("ttlMs", "_meta")
    out = {k: v for k, v in result.items() if k not in envelope}
    if out.get("resultType") == "complete":
        del out["resultType"]
    meta = result.get("_meta")
    if isinstance(meta, dict):
        info = meta.get(META_SERVER_INFO)
        if method == "server/discover" and info is not None and "serverInfo" not in out:
            out["serverInfo"] = info
        rest = strip_meta_keys(meta, RESULT_ENVELOPE)
        if rest is not None:
            out["_meta"] = rest
    elif "_meta" in result:
        out["_meta"] = meta
    return out


def strip_event(event: Event, cross: bool = False) -> Event:
    """One event without envelope fields; the same object when it has none (big tapes stay cheap).
    `cross`: the two tapes are of different eras (strip_result)."""
    kind = event.get("kind")
    msg = event.get("msg")
    if not isinstance(msg, dict) or kind not in ("request", "response", "notification"):
        return event
    out: Event | None = None
    if kind in ("request", "notification") and event.get("dir") == "c2s":
        params = msg.get("params")
        new = strip_request_params(params, event.get("method"))
        if new is not params:
            out = dict(event)
            out["msg"] = _with(msg, "params", new)
    elif kind == "response" and event.get("dir") == "s2c":
        result = msg.get("result")
        new = strip_result(result, event.get("method"), cross=cross)
        echo = event.get("params")
        new_echo = strip_request_params(echo, event.get("method"))
        if new is not result or new_echo is not echo:
            out = dict(event)
            out["msg"] = _with(msg, "result", new)
            if new_echo is None:
                out.pop("params", None)
            else:
                out["params"] = new_echo
    if out is None:
        return event
    out.pop("raw", None)  # the wire bytes held the envelope; the message is the truth for comparison
    return out


def _with(msg: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = dict(msg)
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out


# --- the handshake as the session, input-required as server requests (pure) -------------------


def handshake_summary(events: list[Event]) -> dict[str, Any]:
    """How a tape opened: {"method", "protocol"?, "serverInfo"?, "capabilities"?, "instructions"?}."""
    for ev in events:
        if ev.get("kind") in ("response", "error") and ev.get("dir") == "s2c" and ev.get("method") in HANDSHAKE_METHODS:
            result = (ev.get("msg") or {}).get("result")
            if not isinstance(result, dict):
                continue  # a refused probe (auto's discover before initialize): not how it opened
            out: dict[str, Any] = {"method": ev["method"]}
            meta = result.get("_meta")
            meta = meta if isinstance(meta, dict) else {}
            info = result.get("serverInfo", meta.get(META_SERVER_INFO))
            for key, value in (("capabilities", result.get("capabilities")), ("serverInfo", info),
                               ("instructions", result.get("instructions"))):
                if value is not None:
                    out[key] = value
            return out
    return {}


def _is_handshake(ev: Event) -> bool:
    method = ev.get("method")
    if method in HANDSHAKE_METHODS:
        return ev.get("kind") in ("request", "response", "error")
    return method == "notifications/initialized" and ev.get("dir") == "c2s"


def session_mechanics(events: list[Event]) -> set[int]:
    """Indices of events that only open or end a 2026-07-28 listen stream (`subscriptions/listen`,
    its acknowledgement, the `notifications/cancelled` that ends it, its closing answer): a legacy
    session receives the same notifications without them. The notifications themselves stay."""
    listen_ids: set[str] = set()
    out: set[int] = set()
    for i, ev in enumerate(events):
        method, kind, direction = ev.get("method"), ev.get("kind"), ev.get("dir")
        if method == "subscriptions/listen" and kind in ("request", "response", "error"):
            listen_ids.add(repr(ev.get("id")))
            out.add(i)
        elif method == "notifications/subscriptions/acknowledged" and direction == "s2c":
            out.add(i)
        elif method == "notifications/cancelled" and direction == "c2s":
            params = (ev.get("msg") or {}).get("params")
            if isinstance(params, dict) and repr(params.get("requestId")) in listen_ids:
                out.add(i)
    return out


def collapse_input_rounds(events: list[Event], lines: list[int]) -> tuple[list[Event], list[int]]:
    """Input-required round trips as the legacy wire shows the same exchange (module docstring).

    Each interim call (its result is `resultType: "input_required"`) leaves; its input requests
    become s2c requests (ids `input:<key>`) answered by the next round's `inputResponses`,
    placed where the interim answer was. `lines` (tape line per event) is kept in step.
    """
    by_id: dict[str, int] = {}
    interim: dict[int, int] = {}  # request index -> response index, for interim rounds
    for i, ev in enumerate(events):
        key = repr(ev.get("id"))
        if ev.get("kind") == "request" and ev.get("dir") == "c2s":
            by_id[key] = i
        elif ev.get("kind") == "response" and ev.get("dir") == "s2c" and key in by_id:
            result = (ev.get("msg") or {}).get("result")
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                interim[by_id[key]] = i
    if not interim:
        return events, lines
    drop = set(interim) | set(interim.values())
    asked_at = {resp: req for req, resp in interim.items()}
    out: list[Event] = []
    out_lines: list[int] = []
    pending: dict[str, tuple[str, Any]] = {}  # input key -> (method, params) waiting for its answer
    for i, ev in enumerate(events):
        if i in asked_at:
            result = ev["msg"]["result"]
            for key, req in (result.get("inputRequests") or {}).items():
                if not isinstance(req, dict):
                    continue
                sid = f"input:{key}"
                msg = {"jsonrpc": "2.0", "id": sid, "method": req.get("method"), "params": req.get("params")}
                synthetic: Event = {"kind": "request", "dir": "s2c", "id": sid, "method": req.get("method"), "msg": msg}
                if "step" in ev:
                    synthetic["step"] = ev["step"]
                out.append(synthetic)
                out_lines.append(lines[i] if i < len(lines) else i + 2)
                pending[key] = (str(req.get("method")), req.get("params"))
            continue
        if i in drop:
            continue
        params = (ev.get("msg") or {}).get("params")
        if ev.get("kind") == "request" and ev.get("dir") == "c2s" and isinstance(params, dict) and any(
            k in params for k in INPUT_KEYS
        ):
            for key, answer in (params.get("inputResponses") or {}).items():
                method, asked = pending.pop(key, (None, None))
                sid = f"input:{key}"
                reply: Event = {"kind": "response", "dir": "c2s", "id": sid, "method": method, "params": asked,
                                "msg": {"jsonrpc": "2.0", "id": sid, "result": answer}}
                out.append(reply)
                out_lines.append(lines[i] if i < len(lines) else i + 2)
            ev = dict(ev)
            ev["msg"] = _with(ev["msg"], "params", {k: v for k, v in params.items() if k not in INPUT_KEYS})
            ev.pop("raw", None)
        elif ev.get("kind") == "response" and ev.get("dir") == "s2c" and isinstance(ev.get("params"), dict) and any(
            k in ev["params"] for k in INPUT_KEYS
        ):
            ev = dict(ev)
            ev["params"] = {k: v for k, v in ev["params"].items() if k not in INPUT_KEYS}
        out.append(ev)
        out_lines.append(lines[i] if i < len(lines) else i + 2)
    return out, out_lines


# --- a refused discover probe is negotiation (pure) -------------------------------------------


def refused_probe(events: list[Event]) -> set[int]:
    """Indexes of a refused `server/discover` probe before `initialize`: the probe, its error
    answer (by id, or with id null), and the HTTP note of its refusal. Empty if there is none.

    A client that probes first (FastMCP; ci's `auto` through `rec --listen`) and falls back to
    `initialize` asked the same of the server as one that opened with `initialize`: the probe is
    how the two agreed on a revision, not a call of the session. Only the events before the first
    `initialize` request are looked at, and only when that request follows (a probe that was
    answered, or a tape without initialize, is a 2026-07-28 session and keeps its discover).
    """
    probe: set[int] = set()
    probe_ids: list[Any] = []
    refused = False
    for i, ev in enumerate(events):
        kind, method = ev.get("kind"), ev.get("method")
        if kind == "request" and ev.get("dir") == "c2s":
            if method == "initialize":
                return probe if refused else set()
            if method != "server/discover":
                return set()
            probe.add(i)
            probe_ids.append(ev.get("id"))
        elif not probe:
            continue
        elif ((kind == "error" and ev.get("dir") == "s2c" and (ev.get("id") in probe_ids or ev.get("id") is None))
              or (kind == "note" and ev.get("what") == "http")
              # answered without 2026-07-28, and the client went on with initialize
              or (kind == "response" and ev.get("id") in probe_ids)):
            probe.add(i)
            refused = True
    return set()


def without_refused_probe(tape: Tape) -> Tape:
    """The tape without its refused probe (refused_probe); the same object when it has none."""
    drop = refused_probe(tape.events)
    if not drop:
        return tape
    lines = list(tape.event_lines) or [i + 2 for i in range(len(tape.events))]
    keep = [i for i in range(len(tape.events)) if i not in drop]
    return Tape(header=tape.header, events=[tape.events[i] for i in keep], footer=tape.footer, path=tape.path,
                event_lines=[lines[i] for i in keep])


# --- preparing a pair of tapes ---------------------------------------------------------------


def prepare(golden: Tape, fresh: Tape) -> tuple[Tape, Tape]:
    """Both tapes as diff/compare.py should see them (module docstring); untouched tapes are returned as is."""
    g_era, f_era = era(golden.protocol), era(fresh.protocol)
    cross = g_era is not None and f_era is not None and g_era != f_era
    return _prepare(golden, cross), _prepare(fresh, cross)


@dataclass
class Prepared:
    """A pair of tapes ready for diff/compare.py, the cheap way (`prepare_pair`)."""

    golden: Tape
    fresh: Tape
    # Within one era the envelope is stripped event by event, only where calls are built
    # (calls.build_calls's `prepare`); across eras the tapes above are already prepared.
    strip: Callable[[Event], Event] | None
    # The protocol each prepared tape reports, for the session check (TapeCalls.protocol_of), on
    # demand; None: read the prepared tapes' headers.
    protocols: tuple[Callable[[], str | None], Callable[[], str | None]] | None


def protocols(tape: Tape, *, raw: bool = True) -> tuple[str | None, str | None]:
    """(Tape.protocol, what the same tape reports once its envelope is stripped), in one pass.

    Stripping takes the `_meta` protocol version out of requests and discover echoes, so a
    stripped tape knows its version only from the header or the `initialize` result. With
    `raw=False` the first is not looked for (None unless the header or `initialize` says).
    """
    if tape.header.get("protocol"):
        declared = str(tape.header["protocol"])
        return declared, declared
    discovered: str | None = None
    stamped: str | None = None
    for ev in tape.events:  # Tape.protocol's scan, ordered so most events cost one or two lookups
        method = ev.get("method")
        if method == "initialize" or method == "server/discover":
            kind = ev.get("kind")
            if kind == "response":
                if method == "initialize":
                    result = ev.get("msg", {}).get("result")
                    version = result.get("protocolVersion") if isinstance(result, dict) else None
                    return (str(version), str(version)) if version else (None, None)
                if raw and discovered is None:
                    discovered = meta_version(ev.get("params"))
                continue
            if method == "server/discover" or kind != "request":
                continue
        if raw and stamped is None and ev.get("dir") == "c2s" and ev.get("kind") == "request":
            params = (ev.get("msg") or {}).get("params")
            if isinstance(params, dict) and "_meta" in params:
                stamped = meta_version(params)
    return discovered or stamped, None


def prepare_pair(golden: Tape, fresh: Tape) -> Prepared:
    """What `prepare` does, without touching events that no call will read (see Prepared)."""
    g_proto, g_stripped = protocols(golden)
    f_proto: str | None = None
    f_stripped: list[str | None] = []  # computed at most once, maybe never (Prepared.protocols)
    if era(g_proto) is not None:  # across eras only when both are known
        f_proto, stripped = protocols(fresh)
        f_stripped.append(stripped)
        f_era = era(f_proto)
        if f_era is not None and f_era != era(g_proto):
            return Prepared(_prepare(golden, True, g_proto), _prepare(fresh, True, f_proto), None, None)
    memo: dict[int, Event] = {}

    def strip(event: Event) -> Event:
        # Tapes read together share the objects of identical lines (diff/command.py): such an
        # event stripped in both stays one object, stripped once. Most events have no envelope
        # and are kept as they are: the memo holds only the others, so it stays small.
        out = memo.get(id(event))
        if out is None:
            out = strip_event(event)
            if out is not event:
                memo[id(event)] = out
        return out

    def fresh_protocol() -> str | None:
        if not f_stripped:
            f_stripped.append(protocols(fresh, raw=False)[1])
        return f_stripped[0]

    return Prepared(golden, fresh, strip, (lambda: g_stripped, fresh_protocol))


def _prepare(tape: Tape, cross: bool, protocol: Any = None) -> Tape:
    lines = list(tape.event_lines) or [i + 2 for i in range(len(tape.events))]
    events = tape.events
    changed = False
    header = tape.header
    if cross:
        header = dict(tape.header)
        header["protocol"] = tape.protocol if protocol is None else protocol
        header[_SESSION_KEY] = handshake_summary(events)
        mechanics = session_mechanics(events)
        keep = [i for i, ev in enumerate(events) if not _is_handshake(ev) and i not in mechanics]
        events = [events[i] for i in keep]
        lines = [lines[i] for i in keep]
        events, lines = collapse_input_rounds(events, lines)
        changed = True
    stripped = [strip_event(ev, cross) for ev in events]
    if not changed and all(a is b for a, b in zip(stripped, events, strict=True)):
        return tape
    return Tape(header=header, events=stripped, footer=tape.footer, path=tape.path, event_lines=lines)


# --- the finding -----------------------------------------------------------------------------


def protocol_findings(g_header: dict[str, Any], f_header: dict[str, Any]) -> list[Finding]:
    """The change of era as one structural finding (+ a changed serverInfo, output), from prepared headers."""
    g_session = g_header.get(_SESSION_KEY) or {}
    f_session = f_header.get(_SESSION_KEY) or {}
    g_proto, f_proto = g_header.get("protocol"), f_header.get("protocol")

    def opened(session: dict[str, Any]) -> str:
        return str(session.get("method") or "no handshake")

    before = {"protocol": g_proto, "handshake": opened(g_session), "capabilities": g_session.get("capabilities")}
    after = {"protocol": f_proto, "handshake": opened(f_session), "capabilities": f_session.get("capabilities")}
    message = (
        f"{g_proto} ({opened(g_session)}) → {f_proto} ({opened(f_session)}); the 2026-07-28 envelope "
        "(resultType, cacheScope, ttlMs, _meta serverInfo) is not compared, the calls are"
    )
    out = [Finding.of("protocol", "changed", "protocol", message, clip(before), clip(after))]
    out.extend(_features(g_session.get("capabilities"), f_session.get("capabilities")))
    g_info, f_info = g_session.get("serverInfo"), f_session.get("serverInfo")
    if not json_equal(g_info, f_info):
        out.append(Finding.of("session", "server_info", "serverInfo", f"server {show(g_info)} → {show(f_info)}",
                              clip(g_info), clip(f_info)))
    return out


def _features(a: Any, b: Any) -> list[Finding]:
    """Capabilities across eras: which features the server declares (tools, resources, prompts,
    logging, ...), by name only. What is inside one differs by era by design (list-changed
    moved to `subscriptions/listen`), so it is not judged; a feature gained or lost is named,
    as within an era: lost is structural, gained output (classify.py's session kinds)."""
    fa = set(a) if isinstance(a, dict) else set()
    fb = set(b) if isinstance(b, dict) else set()
    out = [Finding.of("session", "capability_removed", f"capabilities.{name}",
                      f"capability removed `{name}` (with the protocol change)", clip(a[name])) for name in sorted(fa - fb)]
    out.extend(Finding.of("session", "capability_added", f"capabilities.{name}",
                          f"capability added `{name}` (with the protocol change)", None, clip(b[name])) for name in sorted(fb - fa))
    return out


def check_protocol(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """A change of era: the findings above, first in the report; anything else: classify.py's check."""
    if _SESSION_KEY in g.tape.header and _SESSION_KEY in f.tape.header:
        return [(0, finding) for finding in protocol_findings(g.tape.header, f.tape.header)]
    return classify.check_protocol_version(g, f)


# --- deprecations the server still relies on (info) --------------------------------------------

# What the current revision deprecates (SEP-2577: roots, sampling, logging, still carried on the
# wire) and the HTTP+SSE transport (deprecated since 2025-03-26 for streamable HTTP).
_DEPRECATED_IN_MODERN = {
    "logging": "logging (notifications/message, the logging capability)",
    "sampling": "sampling (sampling/createMessage)",
    "roots": "roots (roots/list)",
}
_FEATURE_OF_METHOD = {"notifications/message": "logging", "sampling/createMessage": "sampling", "roots/list": "roots"}


def deprecated_features(tape: Tape, protocol: str | None) -> list[str]:
    """Deprecated features the server of `tape` relies on, in _DEPRECATED_IN_MODERN's order (+ "sse")."""
    used: set[str] = set()
    if era(protocol) == "modern":
        session = tape.header.get(_SESSION_KEY) or handshake_summary(tape.events)
        capabilities = session.get("capabilities")
        if isinstance(capabilities, dict) and "logging" in capabilities:
            used.add("logging")
        for ev in tape.events:
            if ev.get("dir") != "s2c":
                continue
            feature = _FEATURE_OF_METHOD.get(str(ev.get("method")))
            if feature is not None and ev.get("kind") in ("request", "notification"):
                used.add(feature)
            result = (ev.get("msg") or {}).get("result") if ev.get("kind") == "response" else None
            if isinstance(result, dict) and result.get("resultType") == "input_required":
                for req in (result.get("inputRequests") or {}).values():
                    if isinstance(req, dict) and req.get("method") in _FEATURE_OF_METHOD:
                        used.add(_FEATURE_OF_METHOD[req["method"]])
    out = [name for name in _DEPRECATED_IN_MODERN if name in used]
    if tape.header.get("transport") == "sse":
        out.append("sse")
    return out


def check_deprecations(g: TapeCalls, f: TapeCalls) -> list[tuple[int, Finding]]:
    """What the fresh tape's server still relies on that its revision deprecates: info findings
    (never a failure; a reviewer learns what the next revision may take away)."""
    end = len(f.tape.events)
    out: list[tuple[int, Finding]] = []
    protocol = f.protocol or f.tape.protocol  # within an era the tape still has its `_meta` versions
    for name in deprecated_features(f.tape, protocol):
        if name == "sse":
            message = "the server speaks HTTP+SSE, deprecated since 2025-03-26 (streamable HTTP replaces it)"
        else:
            message = f"the server relies on {_DEPRECATED_IN_MODERN[name]}, deprecated in {protocol} (SEP-2577)"
        out.append((end, Finding.of("protocol", "deprecated", f"deprecated.{name}", message, None, name)))
    return out
