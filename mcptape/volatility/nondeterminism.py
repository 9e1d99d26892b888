"""Nondeterminism check: what differs between N runs of one session, and the rules that make it stable.

The analysis behind `mcptape ci --repeat N` (ci.py runs the sessions and prints). Pure: tapes
in, plain data out; no I/O, no clock.

`find_volatile(tapes)` pairs the events of N tapes of one session by identity — kind,
direction, method, tool/prompt/URI name, step, and the occurrence number among events with
that identity — and walks each event's compared value in all runs at once (`msg` of a
message, `changes` of a side effect, `text` of a garbage line), descending into strings that
hold JSON (path `result.content[0].text(json).datetime`, as diff/ names it). It reports:
  - "value": a leaf (or a list whose length varies) with different values; a normalize rule fixes it;
  - "presence": an event, or a key, present in some runs only — no placeholder can add what is
    missing, so these come with advice (a `listen` step, a `drift.ignore` rule) instead;
  - "content": a side effect (sandbox file) whose size or hash differs — a file's bytes are not
    normalized, so the advice is to make the file deterministic or keep it out of the sandbox.

`carried_state(v)` tells state the server carried from one run into the next (the first run
differs and the rest agree, or a list grows run by run) from volatility: it gets no rule, only
the advice to reset the state per run. No rule, and no ignore hint, covers a whole array or
object (`whole`), and every ignore hint is scoped to its call (`ignore_hint`).

`suggest_rules(volatiles)` proposes, for the "value" ones, the narrowest rule that the
normalizer (normalize.py) actually applies and that makes every run equal, checked by
applying it: a regex when the differing part is a token inside an otherwise stable string
(`(?<=Task )\\w+`), else `$..key` (or `$..parent.key`) when the key selects nothing
that is stable, else the absolute path from the message (`$.params.data`). Inside JSON text
only descendant rules and regexes apply (normalize.py's rule), so only those are proposed
there. A candidate that would also rewrite stable values ("collateral") loses to one that
does not; the rule dicts are what `normalize:` in mcptape.yml takes, plus `seen` (example
values, for a comment — `ci --repeat` shows them through the outlet, publish/outlet.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal

from mcptape.jsonrpc import MAX_DEPTH, canonical, is_deep, loads_depth
from mcptape.tape.format import Tape
from mcptape.volatility.normalize import Normalizer


class _Missing:
    """A value absent in one run (the event, or the key, did not occur)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


class _JsonMarker:
    """The step into a string that holds JSON: `text(json)`."""

    def __repr__(self) -> str:
        return "(json)"


JSON: Any = _JsonMarker()
Part = Any  # str (key) | int (index) | JSON
Kind = Literal["value", "presence", "content"]

# Keys too common in MCP results for `$..key` alone: such a rule would hide real drift elsewhere.
GENERIC_KEYS = frozenset(
    {
        "text", "content", "contents", "result", "params", "data", "value", "values", "message",
        "messages", "id", "name", "uri", "type", "arguments", "description", "title", "items",
        "error", "code", "meta", "_meta", "properties", "role", "structuredContent", "method",
    }
)
_SIMPLE_KEY = re.compile(r"[\w$@-]+\Z")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_:.\-]")
MAX_SEEN = 4


@dataclass
class _Group:
    """One event identity across the runs: its compared value per run (MISSING where absent)."""

    key: str
    label: str
    target: str  # msg | text | changes | other
    docs: list[Any]


@dataclass
class Volatile:
    """One place that differs between runs."""

    kind: Kind
    where: str  # the event, as a reader names it: "step 2 · tools/call get_current_time (response)"
    path: str  # inside the event's message: "result.structuredContent.datetime"; "" for the whole event
    values: list[Any]  # per run; MISSING where absent
    advice: str = ""
    parts: tuple[Part, ...] = ()
    group: _Group | None = field(default=None, repr=False, compare=False)
    corpus: list[_Group] = field(default_factory=list, repr=False, compare=False)

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def present(self) -> int:
        return sum(1 for v in self.values if v is not MISSING)

    @property
    def distinct(self) -> int:
        return len({canonical(v) for v in self.values if v is not MISSING})

    def line(self) -> str:
        """One line for a report: where, what, how often."""
        place = f"{self.where} · {self.path}" if self.path else self.where
        if self.kind == "presence":
            return f"{place}: present in {self.present}/{self.runs} runs"
        return f"{place}: {self.distinct} different values in {self.runs} runs"

    def seen(self) -> list[str]:
        out: list[str] = []
        for v in self.values:
            shown = "(absent)" if v is MISSING else _show(v)
            if shown not in out:
                out.append(shown)
        return out[:MAX_SEEN]


def _show(value: Any, limit: int = 48) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_path(parts: Sequence[Part]) -> str:
    """`result.content[0].text(json).datetime` (diff/values.py's spelling)."""
    out = ""
    for p in parts:
        if p is JSON:
            out += "(json)"
        elif isinstance(p, int):
            out += f"[{p}]"
        elif _SIMPLE_KEY.match(p) and not p[:1].isdigit():
            out += f".{p}" if out else p
        else:
            out += f"[{json.dumps(p, ensure_ascii=False)}]"
    return out


# -- pairing events across runs -------------------------------------------------------------------


_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "logging/setLevel": "level"}


def _name(event: dict[str, Any]) -> str | None:
    """The tool/prompt/URI a call is about (what makes two calls in one step different calls)."""
    param = _NAME_PARAM.get(str(event.get("method")))
    params = event.get("params")
    msg = event.get("msg")
    if params is None and isinstance(msg, dict):
        params = msg.get("params")
    if param and isinstance(params, dict) and isinstance(params.get(param), str):
        return str(params[param])
    return None


def _identity(event: dict[str, Any]) -> tuple[str, str, str, Any] | None:
    """(identity key, label, target, compared value) of an event; None for events not compared."""
    kind = event.get("kind")
    step = event.get("step")
    at = f"step {step}" if isinstance(step, int) else "outside the steps"
    if kind in ("request", "notification", "response", "error"):
        method = str(event.get("method") or "?")
        name = _name(event)
        who = "server" if event.get("dir") == "s2c" else "client"
        role = {"request": f"{who} request", "notification": f"{who} notification"}.get(
            str(kind), "answer" if event.get("dir") == "s2c" else "our answer"
        )
        head = method + (f" {name}" if name else "")
        key = f"{kind}|{event.get('dir')}|{method}|{name}|{step}"
        return key, f"{at} · {head} ({role})", "msg", event.get("msg")
    if kind == "side_effect":
        changes = event.get("changes")
        by_path = {
            str(c.get("path")): {k: v for k, v in c.items() if k != "path"}
            for c in changes or []
            if isinstance(c, dict)
        }
        return f"side_effect|{step}", f"{at} · side effects", "changes", by_path
    if kind == "garbage":
        return f"garbage|{event.get('dir')}|{step}", f"{at} · non-JSON stdout line", "text", event.get("text")
    if kind == "exit":
        return "exit", "server exit", "other", {"code": event.get("code"), "signal": event.get("signal")}
    if kind == "note":
        return f"note|{event.get('what')}", f"mcptape note {event.get('what')}", "other", event.get("detail")
    return None  # stderr: diff does not compare it either (logs carry clocks)


def _groups(tapes: Sequence[Tape]) -> list[_Group]:
    runs = len(tapes)
    groups: dict[str, _Group] = {}
    for r, tape in enumerate(tapes):
        seen: dict[str, int] = {}
        for event in tape.events:
            ident = _identity(event)
            if ident is None:
                continue
            key, label, target, doc = ident
            n = seen.get(key, 0)
            seen[key] = n + 1
            if n:
                key, label = f"{key}#{n}", f"{label} #{n + 1}"
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group(key, label, target, [MISSING] * runs)
            group.docs[r] = doc
    return list(groups.values())


# -- walking values --------------------------------------------------------------------------------


def _json_container(value: Any, level: int) -> Any:
    """The object or array a string at nesting `level` holds, if it fits in the levels left
    (jsonrpc.MAX_DEPTH: deeper embedded JSON is compared as text, as diff does)."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and level < MAX_DEPTH:
        try:
            doc, cut = loads_depth(value, MAX_DEPTH - level)
        except ValueError:
            return None
        return doc if isinstance(doc, (dict, list)) and not cut else None
    return None


def _walk(values: list[Any], parts: tuple[Part, ...], out: list[tuple[Kind, tuple[Part, ...]]]) -> None:
    """Differences among `values` (only runs where the event is present), as (kind, path) pairs."""
    first = canonical(values[0])
    if all(canonical(v) == first for v in values[1:]):
        return
    if all(isinstance(v, dict) and not is_deep(v) for v in values):  # a deep part is one value
        keys: dict[str, None] = {}
        for v in values:
            keys.update(dict.fromkeys(v))
        for key in keys:
            sub = [v.get(key, MISSING) for v in values]
            if any(s is MISSING for s in sub):
                out.append(("presence", (*parts, key)))
            else:
                _walk(sub, (*parts, key), out)
        return
    if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
        for i in range(len(values[0])):
            _walk([v[i] for v in values], (*parts, i), out)
        return
    if all(isinstance(v, str) for v in values):
        docs = [_json_container(v, len(parts)) for v in values]
        if all(d is not None for d in docs):
            _walk(docs, (*parts, JSON), out)
            return
    out.append(("value", parts))


def value_at(doc: Any, parts: Sequence[Part]) -> Any:
    """The value at `parts`; a placeholder that replaced an ancestor stands for everything below it."""
    node = doc
    for level, p in enumerate(parts):
        if p is JSON:
            inner = _json_container(node, level)
            if inner is None:
                return node
            node = inner
        elif isinstance(node, dict):
            if p not in node:
                return MISSING
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int):
            if not -len(node) <= p < len(node):
                return MISSING
            node = node[p]
        else:
            return node
    return node


def find_volatile(tapes: Sequence[Tape]) -> list[Volatile]:
    """Every place that differs between the runs (tapes of one session, normalized alike)."""
    if len(tapes) < 2:
        return []
    runs = len(tapes)
    groups = _groups(tapes)
    out: list[Volatile] = []
    for group in groups:
        present = [d for d in group.docs if d is not MISSING]
        if len(present) < runs:
            out.append(Volatile("presence", group.label, "", [_presence(d) for d in group.docs],
                                _event_advice(group), (), group, groups))
        if len(present) < 2:
            continue
        found: list[tuple[Kind, tuple[Part, ...]]] = []
        _walk(present, (), found)
        for kind, parts in found:
            values = [MISSING if d is MISSING else value_at(d, parts) for d in group.docs]
            if group.target == "changes":
                file = parts[0] if parts else "?"
                advice = (
                    f"the file {file} is written differently in different runs: make what the server writes "
                    "deterministic, or keep that file out of the declared sandbox"
                )
                out.append(Volatile("content" if kind == "value" else "presence", group.label,
                                    render_path(parts), values, advice, parts, group, groups))
                continue
            found_here = Volatile(kind, group.label, render_path(parts), values, "", parts, group, groups)
            if kind == "presence":
                found_here.advice = ("a key that is present in some runs only cannot be normalized; if that is "
                                     f"expected, ignore it: {ignore_hint(found_here)}")
            out.append(found_here)
    return out


def _presence(doc: Any) -> Any:
    return MISSING if doc is MISSING else "present"


def _event_advice(group: _Group) -> str:
    kind, direction, method = (group.key.split("|") + ["", "", ""])[:3]
    if kind == "notification" and direction == "s2c":
        return (
            f"{method} arrives in some runs only (a timer or a race): add a `listen:` step with a `duration:` "
            f"long enough for it to always arrive, or ignore it: "
            f'drift: {{ignore: [{{path: "notifications[{method}]"}}]}}'
        )
    if kind == "request" and direction == "s2c":
        return (
            f"the server sends {method} in some runs only: add a `listen:` step with a `duration:` so it always "
            f'fires, or ignore it: drift: {{ignore: [{{path: "server_request[{method}]"}}]}}'
        )
    if kind == "side_effect":
        return "files in the sandbox change in some runs only: the server's writes depend on timing or state"
    if kind in ("garbage", "exit", "note"):
        return "the server process behaves differently between runs (stdout noise, exit, timeouts): check its stderr"
    return (
        "the calls differ between runs: the server keeps state between sessions (give it a fresh store per run, "
        "e.g. an env var pointing at a new file) or the session depends on timing"
    )


# -- suggesting rules ------------------------------------------------------------------------------


def _rule_obj(rule: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(path=rule.get("path"), pattern=rule.get("pattern"), replace=rule.get("replace", "<NORMALIZED>"),
                           order=rule.get("order"))


def _normalizer(rules: Sequence[dict[str, Any]]) -> Any:
    return Normalizer([_rule_obj(r) for r in rules], paths={})


def _apply(norm: Any, group: _Group, doc: Any) -> Any:
    if doc is MISSING:
        return doc
    if group.target == "msg":
        return norm.value(doc)
    if group.target == "text" and isinstance(doc, str):
        return norm.text(doc)
    return doc


def fixed_by(volatile: Volatile, rules: Sequence[dict[str, Any]]) -> bool:
    """Do `rules`, applied as the normalizer applies them, make the runs agree at this place?"""
    if volatile.kind != "value" or volatile.group is None or not rules:
        return False
    norm = _normalizer(rules)
    seen: set[str] = set()
    for doc in volatile.group.docs:
        if doc is MISSING:
            continue
        value = value_at(_apply(norm, volatile.group, doc), volatile.parts)
        if value is MISSING:
            return False
        seen.add(canonical(value))
    return len(seen) == 1


def _leaves(node: Any, parts: tuple[Part, ...], out: dict[tuple[Part, ...], str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _leaves(v, (*parts, k), out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _leaves(v, (*parts, i), out)
    else:
        inner = _json_container(node, len(parts))
        if inner is not None:
            _leaves(inner, (*parts, JSON), out)
        else:
            out[parts] = canonical(node)


def _related(a: tuple[Part, ...], b: tuple[Part, ...]) -> bool:
    n = min(len(a), len(b))
    return all((x is JSON and y is JSON) or x == y for x, y in zip(a[:n], b[:n], strict=True))


def collateral(rule: dict[str, Any], volatiles: Sequence[Volatile], corpus: Sequence[_Group]) -> int:
    """How many stable values (in the first run that has each event) the rule would also rewrite."""
    norm = _normalizer([rule])
    volatile_parts: dict[str, list[tuple[Part, ...]]] = {}
    for v in volatiles:
        if v.group is not None:
            volatile_parts.setdefault(v.group.key, []).append(v.parts)
    count = 0
    for group in corpus:
        if group.target not in ("msg", "text"):
            continue
        doc = next((d for d in group.docs if d is not MISSING), MISSING)
        if doc is MISSING:
            continue
        before: dict[tuple[Part, ...], str] = {}
        after: dict[tuple[Part, ...], str] = {}
        _leaves(doc, (), before)
        _leaves(_apply(norm, group, doc), (), after)
        mine = volatile_parts.get(group.key, [])
        for parts in set(before) | set(after):
            if before.get(parts) == after.get(parts):
                continue
            if any(_related(parts, vp) for vp in mine):
                continue
            count += 1
    return count


def _placeholder(name: str) -> str:
    return "<" + (re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() or "VOLATILE") + ">"


def _render_rule_path(descendant: bool, keys: Sequence[Part]) -> str | None:
    out = "$"
    for i, k in enumerate(keys):
        if isinstance(k, int):
            out += f"[{k}]"
        elif i == 0 and descendant:
            if not _SIMPLE_KEY.match(k):
                return None  # `$..["a b"]` is outside the supported path subset
            out += f"..{k}"
        elif _SIMPLE_KEY.match(k):
            out += f".{k}"
        elif "'" not in k:
            out += f"['{k}']"
        else:
            return None
    return out


def _path_candidates(v: Volatile) -> list[dict[str, Any]]:
    parts = v.parts
    inner_at = max((i for i, p in enumerate(parts) if p is JSON), default=-1)
    inner = parts[inner_at + 1:]
    out: list[dict[str, Any]] = []
    last_key = next((p for p in reversed(inner) if isinstance(p, str)), "value")
    for k in range(1, len(inner) + 1):
        suffix = inner[-k:]
        if not isinstance(suffix[0], str):
            continue
        if k == 1 and suffix[0] in GENERIC_KEYS:
            continue
        path = _render_rule_path(True, suffix)
        if path:
            out.append({"path": path, "replace": _placeholder(last_key)})
    if inner_at < 0 and parts and isinstance(parts[0], str):
        path = _render_rule_path(False, parts)
        if path and all(path != c["path"] for c in out):
            out.append({"path": path, "replace": _placeholder(last_key)})
    return out


def path_candidates(v: Volatile) -> list[dict[str, Any]]:
    """The path rules that select this place by key, shortest first (`$..format.description`, then
    longer ones); none with a list index, which another run may give to another item (a tool list
    in random order). init turns one into an `order: sorted` rule when the runs differ in order only."""
    return [c for c in _path_candidates(v) if "[" not in c["path"]]


def _shape(text: str) -> str:
    """`3f2a-19` -> `\\w+\\-\\d+`: character-class runs, punctuation literal. A run of letters and
    digits may hold an underscore the next run has (Python's temp names, nanoids: `tmpi2_1xi6e`):
    one seen without it must not make a rule that misses the next."""
    out: list[str] = []
    for m in re.finditer(r"\w+|.", text, re.DOTALL | re.ASCII):
        tok = m.group(0)
        if tok.isdigit():
            out.append(r"\d+")
        elif tok.isalpha():
            out.append("[A-Za-z]+")
        elif tok.isascii() and (tok[0].isalnum() or tok[0] == "_"):
            out.append(r"\w+")
        else:
            out.append(re.escape(tok))
    return "".join(out)


def _escape(text: str) -> str:
    return re.escape(text).replace("\\ ", " ")  # a space needs no escape, and reads better unescaped


_LABEL = re.compile(r"\s*[A-Za-z][A-Za-z _-]{0,30}: ")


def _line_pattern(lines: Sequence[str]) -> tuple[str, str] | None:
    """(regex, placeholder name) for the part that differs in one line across runs, or None."""
    distinct = list(dict.fromkeys(lines))
    prefix = os.path.commonprefix(distinct)
    shortest = min(len(s) for s in distinct)
    suffix = os.path.commonprefix([s[::-1] for s in distinct])[::-1]
    suffix = suffix[len(suffix) - min(len(suffix), shortest - len(prefix)):] if shortest > len(prefix) else ""
    label = _LABEL.match(prefix)
    # The token boundary: a common run of token characters belongs to the token (1:53:2|4 -> 1:53:24).
    while prefix and _TOKEN_CHARS.match(prefix[-1]):
        prefix = prefix[:-1]
    while suffix and _TOKEN_CHARS.match(suffix[0]):
        suffix = suffix[1:]
    # Context must not hold digits: what is equal in these runs (today's date) may not be tomorrow.
    left = re.split(r"\d", prefix)[-1]
    if len(left) > 20:
        left = left[-20:]
        left = left[left.index(" ") + 1:] if " " in left else left  # start at a word
    if len(left.lstrip(" :;,.=-")) >= 2:
        left = left.lstrip(" :;,.=-")  # start at a word, not at the punctuation after a number
    middles = [s[len(prefix): len(s) - len(suffix)] for s in distinct]
    token = all(m and all(_TOKEN_CHARS.match(c) for c in m) for m in middles)
    # Only a stable *prefix* anchors a token rule. A value whose first word varies is free text
    # (server-everything logs "Debug-level message" and "Alert level-message"): a suffix seen in
    # five runs says nothing about the sixth, so that is left to a path rule.
    if token and len(left.strip()) >= 2:
        shapes = {_shape(m) for m in middles}
        if len(shapes) == 1:
            body = shapes.pop()
        elif all(re.fullmatch(r"[0-9a-fA-F]+", m) for m in middles):
            body = "[0-9a-fA-F]+"
        elif all(re.fullmatch(r"\w+", m, re.ASCII) for m in middles):
            body = r"\w+"
        else:
            body = r"[\w.:-]+"
        pattern = f"(?<={_escape(left)})" + body
        return pattern, "TIME" if ":" in body else "NUMBER" if body == r"\d+" else "ID"
    if label is not None:
        # `created: Sun Nov 29 2026 14:11:03 GMT`: the rest of a labelled line.
        return f"(?<={_escape(label.group(0).lstrip())}).+", label.group(0).strip(" :").upper()
    return None


def regex_candidate(values: Sequence[str]) -> dict[str, Any] | None:
    """A regex for what differs inside otherwise equal strings, anchored on its stable context.

    Line by line when every run has the same number of lines; None when the whole value differs
    (a path rule says that better) or no stable context anchors it.
    """
    distinct = list(dict.fromkeys(values))
    if len(distinct) < 2:
        return None
    split = [s.split("\n") for s in distinct]
    if len({len(x) for x in split}) != 1:
        split = [[s] for s in distinct]
    found: list[tuple[str, str]] = []
    for i in range(len(split[0])):
        lines = [x[i] for x in split]
        if len(set(lines)) == 1:
            continue
        got = _line_pattern(lines)
        if got is None:
            return None
        if got not in found:
            found.append(got)
    if not found:
        return None
    if len(found) == 1:
        pattern, name = found[0]
    else:
        pattern = "(?:" + "|".join(p for p, _ in found) + ")"
        name = found[0][1] if len({n for _, n in found}) == 1 else "VOLATILE"
    return {"pattern": pattern, "replace": f"<{name}>"}


def _candidates(v: Volatile) -> list[dict[str, Any]]:
    present = [x for x in v.values if x is not MISSING]
    regex = regex_candidate(present) if present and all(isinstance(x, str) for x in present) else None
    paths = _path_candidates(v) if v.group is not None and v.group.target == "msg" else []
    return ([regex] if regex else []) + paths


def carried_state(v: Volatile) -> bool:
    """Is this difference state the server carried from one run into the next, not volatility?

    Two signs, each needing 3 runs or more: the first run differs and every later run agrees
    (run 1 wrote a store that runs 2..N read: server-memory's `create_entities` answers the new
    entity once, then `[]`), or a list grows run after run (each run adds to what the last left).
    A rule for it would hide the very store a real change shows in, so none is proposed.
    """
    values = v.values
    if len(values) < 3 or v.kind not in ("value", "presence"):
        return False
    first, rest = canonical(values[0]), {canonical(x) for x in values[1:]}
    if len(rest) == 1 and first not in rest:
        return True
    if not all(isinstance(x, list) for x in values):
        return False
    sizes = [len(x) for x in values]
    return all(a < b for a, b in zip(sizes, sizes[1:], strict=False))


def whole(v: Volatile) -> bool:
    """Does the difference cover a whole array or object (a list whose length varies)? A rule for
    it would hide every change inside, so none is proposed: the answer itself must be made stable."""
    return any(isinstance(x, (list, dict)) for x in v.values if x is not MISSING)


def suggest_rules(volatiles: Sequence[Volatile]) -> list[dict[str, Any]]:
    """`normalize:` rules (path | pattern, replace, reason) for the "value" volatiles, plus `seen`.

    Volatiles no candidate fixes get no rule; `unfixed(volatiles, rules)` lists them. State
    carried between runs (carried_state) and whole arrays or objects (whole) get none either:
    a rule is only ever as wide as a volatile leaf.
    """
    chosen: list[tuple[dict[str, Any], int, list[Volatile]]] = []  # (rule, collateral, what it covers)
    for v in (v for v in volatiles if v.kind == "value" and not carried_state(v) and not whole(v)):
        fixer = next((cov for rule, _, cov in chosen if fixed_by(v, [rule])), None)
        if fixer is not None:
            fixer.append(v)
            continue
        best = _best_rule(v, volatiles)
        if best is not None:
            chosen.append((best[0], best[1], [v]))
    return [_described(rule, extra, cov) for rule, extra, cov in chosen]


def _best_rule(v: Volatile, volatiles: Sequence[Volatile]) -> tuple[dict[str, Any], int] | None:
    """The candidate rule that fixes `v` and rewrites the fewest stable values (the first such,
    in _candidates' order), and how many it rewrites."""
    best: tuple[int, int, dict[str, Any]] | None = None
    for order, candidate in enumerate(_candidates(v)):
        if not fixed_by(v, [candidate]):
            continue
        extra = collateral(candidate, volatiles, v.corpus)
        if best is None or (extra, order) < (best[0], best[1]):
            best = (extra, order, candidate)
        if extra == 0:
            break
    return None if best is None else (dict(best[2]), best[0])


def _described(rule: dict[str, Any], extra: int, cov: list[Volatile]) -> dict[str, Any]:
    """The rule with the reason and the values seen a reader weighs it by."""
    first = cov[0]
    more = f" (+{len(cov) - 1} more place{'s' if len(cov) > 2 else ''})" if len(cov) > 1 else ""
    reason = f"{first.distinct} different values in {first.runs} runs at {first.where} · {first.path}{more}"
    if extra:
        reason += f"; also rewrites {extra} stable value{'s' if extra > 1 else ''}"
    seen: list[str] = []
    for v in cov:
        for s in v.seen():
            if s not in seen:
                seen.append(s)
    return {**rule, "reason": reason, "seen": seen[:MAX_SEEN]}


def unfixed(volatiles: Sequence[Volatile], rules: Sequence[dict[str, Any]]) -> list[Volatile]:
    """The "value" volatiles the rules do not make stable (carried state aside: it is not volatile)."""
    clean: list[dict[str, Any]] = [{k: r[k] for k in ("path", "pattern", "replace", "order") if k in r} for r in rules]
    return [v for v in volatiles if v.kind == "value" and not carried_state(v) and not fixed_by(v, clean)]


def call_of(v: Volatile) -> tuple[str, str | None]:
    """(method, tool/prompt/URI name) of the event a volatile is in: what an ignore hint is scoped to."""
    if v.group is None:
        return "", None
    _, _, method, name = (v.group.key.split("|") + ["", "", "", ""])[:4]
    return method, (name if name and name != "None" else None)


def ignore_hint(v: Volatile) -> str:
    """`drift: {ignore: [...]}` for one volatile, scoped to its call's method and name, so pasting
    it cannot hide the same path in another call."""
    method, name = call_of(v)
    keys = [f'method: "{method}"'] if method else []
    if name:
        keys.append(f"name: {json.dumps(name, ensure_ascii=False)}")
    keys.append(f'path: "{v.path}"')
    return f"drift: {{ignore: [{{{', '.join(keys)}}}]}}"
