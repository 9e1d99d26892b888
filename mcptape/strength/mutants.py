"""The mutants of a golden tape: the changes a server could make, each a copy of the golden's events.

Owns what a mutation is (the kinds in MUTATIONS, each with the drift class of the verdict's
vocabulary that should catch it), where each applies in a tape, and the seeded choice among the
places it could apply. Pure: a golden's events in, Mutants out; nothing here judges them (judge.py).

A mutant shares every event it does not change with its golden (the same objects: ci's diff reads
unchanged stretches by identity), and names the events it changed (`changed`), which are all the
pipeline needs to redact and normalize again. A change to a server's surface (its tools/list answer)
is made in every listing of the session, as a server's change would be. A change to an answer is made
at one call: at most SITES_PER_KIND calls per tool and kind are drawn (seeded), so the number of
mutants depends on what a session calls, not on how many times, and measuring stays linear in the
size of the goldens.

Strings. A golden holds normalized values: where a rule replaced a value, the golden has its
placeholder (`<TIMESTAMP>`, or a config's `replace:` text). A text gets one mutant per placeholder
in it (the value the placeholder stands for became other text: a rule that swallows any text there
masks it, one that matches only a clock's dates does not) and one that changes a word outside them.

Equivalent mutants: a change that leaves the value as it was (a list of equal items reordered, a
number that is its own successor) is never made; judge.py recognises what is left (a mutant whose
events, redacted and in canonical order, are the golden's).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcptape.diff.schema_change import effective_annotations

Event = dict[str, Any]
Path = tuple[str | int, ...]

SITES_PER_KIND = 2  # calls drawn per tool (resource, prompt) and mutation kind in one session
# What a placeholder is replaced with: prose that no volatile-value rule should take for a value.
PROSE = "mcptape mutant text"
CHANGED_WORD = "mutated"
MUTANT_TOOL = "mcptape_mutant_tool"
MUTANT_PARAM = "mcptape_mutant_param"
MUTANT_ERROR = {"code": -32603, "message": "mcptape mutant: the call failed"}
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*(?::[^<>\s]*)?>")  # ours and the usual `replace:` spelling
_WORD = re.compile(r"[A-Za-z]{3,}")
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w])")
# The answers whose result a call mutant changes, and what its subject is named after.
_CALLS = {"tools/call": ("tool", "name"), "resources/read": ("resource", "uri"), "prompts/get": ("prompt", "name")}
# The surface lists and their items: (list key, what an item is called, the field naming it).
SURFACE = {"tools/list": ("tools", "tool", "name"), "resources/list": ("resources", "resource", "uri"),
           "prompts/list": ("prompts", "prompt", "name")}


@dataclass(frozen=True)
class Site:
    """The one value a mutant changed: event index, path in its message, the value before and after,
    and for a string the span [start, end) of the golden string that was replaced."""

    event: int
    path: Path
    before: Any
    after: Any
    span: tuple[int, int] | None = None


@dataclass
class Mutant:
    kind: str  # a key of MUTATIONS
    session: str
    subject: str  # what the server changed, as a reviewer names it: "tool add", "resource calc://c", "surface"
    detail: str  # how: "description: the value <COMMANDS> stands for"
    events: list[Event]
    changed: tuple[int, ...]  # indices in `events` of the events this mutant made
    site: Site | None = None
    expects: str = field(init=False)

    def __post_init__(self) -> None:
        self.expects = MUTATIONS[self.kind].expects


@dataclass(frozen=True)
class Mutation:
    expects: str  # the drift class (verdict.py: category.kind) that should catch it
    what: str  # what the change is, for the report
    derive: Callable[[Golden, int], Iterator[Mutant]]


# -- a golden, read once ----------------------------------------------------------------------


@dataclass
class Golden:
    """A session's golden events and what mutants apply to: its surface listings, answers and
    notifications. `placeholders`: the config's `replace:` texts, besides the `<NAME>` spelling."""

    session: str
    events: list[Event]
    placeholders: tuple[str, ...] = ()
    listings: dict[str, list[int]] = field(default_factory=dict)  # list method -> answer event indices
    answers: list[tuple[int, str, str]] = field(default_factory=list)  # (event, kind, name) of a call's result
    errors: list[tuple[int, str]] = field(default_factory=list)  # (event, subject) of a JSON-RPC error answer
    notifications: dict[str, list[int]] = field(default_factory=dict)  # method -> s2c notification events

    @classmethod
    def read(cls, session: str, events: list[Event], placeholders: Sequence[str] = ()) -> Golden:
        golden = cls(session, events, tuple(p for p in placeholders if p))
        for i, event in enumerate(events):
            kind, method, msg = event.get("kind"), event.get("method"), event.get("msg")
            if event.get("dir") != "s2c" or not isinstance(msg, dict) or not isinstance(method, str):
                continue
            if kind == "notification":
                golden.notifications.setdefault(method, []).append(i)
            elif kind == "response" and isinstance(msg.get("result"), dict):
                if method in SURFACE:
                    golden.listings.setdefault(method, []).append(i)
                elif method in _CALLS:
                    golden.answers.append((i, *_call_subject(event)))
            elif kind == "error" and isinstance(msg.get("error"), dict):
                golden.errors.append((i, " ".join(_call_subject(event)) if method in _CALLS else f"method {method}"))
        return golden

    def surface_items(self, method: str) -> dict[str, dict[str, Any]]:
        """name -> item, of every listing of `method` in the session (the first of each name)."""
        key, _, name_field = SURFACE[method]
        items: dict[str, dict[str, Any]] = {}
        for i in self.listings.get(method, []):
            for item in self.events[i]["msg"]["result"].get(key) or []:
                if isinstance(item, dict) and isinstance(item.get(name_field), str):
                    items.setdefault(item[name_field], item)
        return items

    def with_events(self, replaced: Mapping[int, Event | None]) -> tuple[list[Event], tuple[int, ...]]:
        """The golden's events with some replaced (None: removed), and the new indices of the replaced ones."""
        out: list[Event] = []
        changed: list[int] = []
        for i, event in enumerate(self.events):
            if i not in replaced:
                out.append(event)
                continue
            new = replaced[i]
            if new is not None:
                changed.append(len(out))
                out.append(new)
        return out, tuple(changed)


def _call_subject(event: Event) -> tuple[str, str]:
    kind, key = _CALLS[event["method"]]
    params = event.get("params")
    name = params.get(key) if isinstance(params, dict) else None
    return kind, name if isinstance(name, str) else "?"


def rng_for(seed: int, *parts: object) -> random.Random:
    """The draw of one choice, seeded by what it is about: the same whatever else the config holds."""
    return random.Random(":".join(map(str, (seed, *parts))))


def with_msg(event: Event, msg: Any, **fields: Any) -> Event:
    """A copy of `event` carrying `msg` (its recorded wire bytes no longer say it: `raw` goes)."""
    out = {k: v for k, v in event.items() if k != "raw"}
    out["msg"] = msg
    out.update(fields)
    return out


def get_at(node: Any, path: Path) -> Any:
    for key in path:
        node = node[key]
    return node


def set_at(node: Any, path: Path, value: Any) -> Any:
    """`node` with the value at `path` replaced: copies along the path, shares the rest."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: set_at(node[head], rest, value)}
    items = list(node)
    items[head] = set_at(items[head], rest, value)  # type: ignore[index]
    return items


def leaves(node: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every scalar in `node`, with its path, in document order."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from leaves(value, (*path, index))
    else:
        yield path, node


# A result's keys that are not what it says: its `_meta` (the 2026-07-28 envelope's serverInfo among
# other notes) and the envelope's `resultType` and `ttlMs` (timing), which diff/protocol.py leaves out.
NOT_CONTENT = frozenset({"_meta", "resultType", "ttlMs"})


def said(result: dict[str, Any]) -> dict[str, Any]:
    """What a result says: the result without NOT_CONTENT."""
    return {k: v for k, v in result.items() if k not in NOT_CONTENT}


def containers(node: Any, path: Path = ()) -> Iterator[tuple[Path, list[Any]]]:
    """Every list in `node`, with its path, outermost first."""
    if isinstance(node, list):
        yield path, node
        for index, value in enumerate(node):
            yield from containers(value, (*path, index))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from containers(value, (*path, key))


def _embedded(text: str) -> Any:
    """The JSON object or array a text holds (a tool's JSON copy of its result), else None."""
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _as_text(value: Any, like: str) -> str:
    """`value` serialized as the text it came from was (indented if that one was)."""
    if "\n" in like:
        return json.dumps(value, ensure_ascii=False, indent=2)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": ") if ", " in like else (",", ":"))


# -- strings ------------------------------------------------------------------------------------


def _placeholder_spans(text: str, placeholders: Sequence[str]) -> list[tuple[int, int]]:
    spans = [m.span() for m in _PLACEHOLDER.finditer(text)]
    for literal in placeholders:
        start = text.find(literal)
        while start >= 0:
            spans.append((start, start + len(literal)))
            start = text.find(literal, start + len(literal))
    return sorted(set(spans))


def text_changes(text: str, rng: random.Random, placeholders: Sequence[str]) -> list[tuple[str, str, tuple[int, int]]]:
    """(how, new text, span replaced) for a text: the value each distinct placeholder stands for
    became prose, and one word outside them (drawn) changed; a text with neither gets words added."""
    out: list[tuple[str, str, tuple[int, int]]] = []
    spans = _placeholder_spans(text, placeholders)
    seen: set[str] = set()
    for start, end in spans:
        token = text[start:end]
        if token in seen:
            continue
        seen.add(token)
        out.append((f"the value {token} stands for", text[:start] + PROSE + text[end:], (start, end)))
    words = [m for m in _WORD.finditer(text) if not any(a < m.end() and m.start() < b for a, b in spans)]
    if words:
        word = rng.choice(words)
        new = CHANGED_WORD if word.group(0) != CHANGED_WORD else "changed"
        out.append((f"the word {word.group(0)!r}", text[:word.start()] + new + text[word.end():], word.span()))
    elif not spans:
        out.append(("words added", f"{text} {PROSE}" if text else PROSE, (len(text), len(text))))
    return out


def _text_number(text: str, rng: random.Random, placeholders: Sequence[str]) -> tuple[str, str, tuple[int, int]] | None:
    spans = _placeholder_spans(text, placeholders)
    numbers = [m for m in _NUMBER.finditer(text) if not any(a < m.end() and m.start() < b for a, b in spans)]
    if not numbers:
        return None
    number = rng.choice(numbers)
    new = str(int(number.group(0)) + 1).zfill(len(number.group(0)))  # `05` -> `06`: a clock stays a clock
    return f"the number {number.group(0)} in a text", text[:number.start()] + new + text[number.end():], number.span()


def _items(text: str) -> tuple[list[str], str] | None:
    """A text's list, as `order: sorted` reads one: its lines, else the comma-separated items of
    its one line, with the separator; None if it holds fewer than two."""
    lines = text.split("\n")
    if len([ln for ln in lines if ln.strip()]) >= 2:
        return lines, "\n"
    items = text.split(", ")
    return (items, ", ") if len(items) >= 2 else None


# -- the mutations ------------------------------------------------------------------------------


def _surface_mutants(golden: Golden, kind: str, method: str, name: str, detail: str,
                     change: Callable[[list[Any], int], list[Any] | None]) -> Iterator[Mutant]:
    """One mutant: `change` applied to the item list of every listing of `method` that holds `name`."""
    key, noun, name_field = SURFACE[method]
    replaced: dict[int, Event | None] = {}
    for i in golden.listings.get(method, []):
        event = golden.events[i]
        items = event["msg"]["result"].get(key)
        if not isinstance(items, list):
            continue
        at = next((j for j, item in enumerate(items) if isinstance(item, dict) and item.get(name_field) == name), None)
        if at is None:
            continue
        new_items = change(items, at)
        if new_items is None or new_items == items:
            continue
        msg = event["msg"]
        replaced[i] = with_msg(event, {**msg, "result": {**msg["result"], key: new_items}})
    if replaced:
        events, changed = golden.with_events(replaced)
        yield Mutant(kind, golden.session, f"{noun} {name}", detail, events, changed)


def _item_change(change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Callable[[list[Any], int], list[Any] | None]:
    def apply(items: list[Any], at: int) -> list[Any] | None:
        new = change(items[at])
        if new is None:
            return None
        return [*items[:at], new, *items[at + 1:]]
    return apply


def _removed(golden: Golden, seed: int) -> Iterator[Mutant]:
    for method, (_, noun, _) in SURFACE.items():
        for name in golden.surface_items(method):
            yield from _surface_mutants(golden, "surface_removed", method, name, f"{noun} removed",
                                        lambda items, at: [*items[:at], *items[at + 1:]])


def _added(golden: Golden, seed: int) -> Iterator[Mutant]:
    listings = golden.listings.get("tools/list", [])
    if not listings:
        return
    first = golden.events[listings[-1]]  # the last page: where a new tool would be listed
    tools = first["msg"]["result"].get("tools")
    if not isinstance(tools, list):
        return
    new_tool = {"name": MUTANT_TOOL, "description": "A tool the server did not list before.",
                "inputSchema": {"type": "object", "properties": {}}}
    msg = first["msg"]
    events, changed = golden.with_events(
        {listings[-1]: with_msg(first, {**msg, "result": {**msg["result"], "tools": [*tools, new_tool]}})})
    yield Mutant("surface_added", golden.session, "surface", f"tool {MUTANT_TOOL} added", events, changed)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _schema_of(tool: dict[str, Any], key: str) -> dict[str, Any] | None:
    schema = tool.get(key)
    return schema if isinstance(schema, dict) else None


def _required_added(golden: Golden, seed: int) -> Iterator[Mutant]:
    def change(tool: dict[str, Any]) -> dict[str, Any] | None:
        schema = _schema_of(tool, "inputSchema") or {"type": "object"}
        properties = _dict(schema.get("properties"))
        required = schema["required"] if isinstance(schema.get("required"), list) else []
        return {**tool, "inputSchema": {**schema, "properties": {**properties, MUTANT_PARAM: {"type": "string"}},
                                        "required": [*required, MUTANT_PARAM]}}
    for name in golden.surface_items("tools/list"):
        yield from _surface_mutants(golden, "required_param_added", "tools/list", name,
                                    f"required parameter {MUTANT_PARAM} added", _item_change(change))


def narrowed(prop: dict[str, Any]) -> dict[str, Any] | None:
    """An input property that accepts less than `prop` (diff/schema.py calls each of these breaking)."""
    kind = prop.get("type")
    if isinstance(kind, list) and len(kind) > 1:
        return {**prop, "type": kind[:-1]}
    if isinstance(prop.get("enum"), list) and len(prop["enum"]) > 1:
        return {**prop, "enum": prop["enum"][:-1]}
    if kind == "number":
        return {**prop, "type": "integer"}
    if kind == "string":
        return {**prop, "maxLength": max(0, int(prop.get("maxLength", 2)) // 2)}
    if kind == "integer":
        return {**prop, "maximum": int(prop.get("maximum", 1)) - 1}
    if kind == "array":
        return {**prop, "maxItems": max(0, int(prop.get("maxItems", 1)) - 1)}
    if kind == "boolean":
        return {**prop, "const": True}
    if kind == "object":
        return {**prop, "additionalProperties": False} if prop.get("additionalProperties") is not False else None
    return None


def _narrowed(golden: Golden, seed: int) -> Iterator[Mutant]:
    for name, tool in golden.surface_items("tools/list").items():
        schema = _schema_of(tool, "inputSchema")
        properties = schema.get("properties") if schema is not None else None
        if not isinstance(properties, dict):
            continue
        candidates = sorted(p for p, v in properties.items() if isinstance(v, dict) and narrowed(v) is not None)
        if not candidates:
            continue
        chosen = rng_for(seed, golden.session, "narrow", name).choice(candidates)

        def change(tool: dict[str, Any], chosen: str = chosen) -> dict[str, Any] | None:
            schema = tool["inputSchema"]
            prop = narrowed(schema["properties"][chosen])
            return {**tool, "inputSchema": {**schema, "properties": {**schema["properties"], chosen: prop}}}
        yield from _surface_mutants(golden, "schema_narrowed", "tools/list", name,
                                    f"parameter {chosen} accepts less", _item_change(change))


def _output_removed(golden: Golden, seed: int) -> Iterator[Mutant]:
    for name, tool in golden.surface_items("tools/list").items():
        schema = _schema_of(tool, "outputSchema")
        properties = schema.get("properties") if schema is not None else None
        if not isinstance(properties, dict) or not properties:
            continue
        chosen = rng_for(seed, golden.session, "output", name).choice(sorted(properties))

        def change(tool: dict[str, Any], chosen: str = chosen) -> dict[str, Any] | None:
            schema = tool["outputSchema"]
            required = [r for r in schema.get("required", []) if r != chosen] if isinstance(schema.get("required"), list) else None
            new = {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != chosen}}
            if required is not None:
                new["required"] = required
            return {**tool, "outputSchema": new}
        yield from _surface_mutants(golden, "output_property_removed", "tools/list", name,
                                    f"outputSchema property {chosen} removed", _item_change(change))


def _descriptions(golden: Golden) -> Iterator[tuple[str, str, str]]:
    """(list method, item name, description) of every listed item that has one."""
    for method in SURFACE:
        for name, item in golden.surface_items(method).items():
            if isinstance(item.get("description"), str):
                yield method, name, item["description"]


def _described(new: str) -> Callable[[list[Any], int], list[Any] | None]:
    return _item_change(lambda item: {**item, "description": new})


def _description(golden: Golden, seed: int) -> Iterator[Mutant]:
    for method, name, text in _descriptions(golden):
        rng = rng_for(seed, golden.session, "description", method, name)
        for how, new, _span in text_changes(text, rng, golden.placeholders):
            yield from _surface_mutants(golden, "description_changed", method, name, f"description: {how}",
                                        _described(new))


def _description_list(golden: Golden, seed: int, mutation: str) -> Iterator[Mutant]:
    """A list a description holds (a shell server's allowed commands): an item dropped, or two swapped."""
    for method, name, text in _descriptions(golden):
        split = _items(text)
        if split is None or (mutation == "list_reordered" and len(set(split[0])) < 2):
            continue
        rng = rng_for(seed, golden.session, mutation, method, name)
        how, new = _list_change(split[0], mutation, rng)
        yield from _surface_mutants(golden, mutation, method, name, f"description: {how}", _described(split[1].join(new)))


def widened_hint(annotations: Any) -> tuple[str, bool]:
    """The hint a tool's change would flip to let it do more (diff/schema.py: a read-only tool that no
    longer is, a tool that became destructive; else one that now reaches the open world, or stops)."""
    effective = effective_annotations(annotations)
    if effective.get("readOnlyHint") is True:
        return "readOnlyHint", False
    if effective.get("destructiveHint") is not True:
        return "destructiveHint", True
    return "openWorldHint", not effective.get("openWorldHint", True)


def _hint(golden: Golden, seed: int) -> Iterator[Mutant]:
    for name, tool in golden.surface_items("tools/list").items():
        hint, value = widened_hint(tool.get("annotations"))

        def change(tool: dict[str, Any], hint: str = hint, value: bool = value) -> dict[str, Any] | None:
            return {**tool, "annotations": {**_dict(tool.get("annotations")), hint: value}}
        yield from _surface_mutants(golden, "hint_changed", "tools/list", name, f"{hint} set to {str(value).lower()}",
                                    _item_change(change))


def _drawn(golden: Golden, seed: int, kind: str, kinds: Sequence[str] = ("tool", "prompt", "resource")) -> Iterator[tuple[int, str]]:
    """(event, subject) of at most SITES_PER_KIND answers per subject, drawn with the seed."""
    by_subject: dict[str, list[int]] = {}
    for i, call_kind, name in golden.answers:
        if call_kind in kinds:
            by_subject.setdefault(f"{call_kind} {name}", []).append(i)
    for subject, sites in by_subject.items():
        rng = rng_for(seed, golden.session, kind, subject)
        for i in sorted(rng.sample(sites, min(SITES_PER_KIND, len(sites)))):
            yield i, subject


def _result_mutant(golden: Golden, kind: str, subject: str, i: int, path: Path, before: Any, after: Any,
                   detail: str, span: tuple[int, int] | None = None) -> Mutant:
    event = golden.events[i]
    msg = set_at(event["msg"], ("result", *path), after)
    events, changed = golden.with_events({i: with_msg(event, msg)})
    return Mutant(kind, golden.session, subject, detail, events, changed,
                  Site(changed[0], ("result", *path), before, after, span))


def _show(path: Path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _texts(result: dict[str, Any]) -> list[Path]:
    """The paths of the texts a reviewer reads in a result: content texts, resource contents, prompt messages."""
    return [p for p, v in leaves(result) if isinstance(v, str) and p and p[-1] == "text"]


def _result_text(golden: Golden, seed: int, mutation: str = "result_text_changed",
                 kinds: Sequence[str] = ("tool", "prompt")) -> Iterator[Mutant]:
    for i, subject in _drawn(golden, seed, mutation, kinds):
        result = golden.events[i]["msg"]["result"]
        texts = _texts(said(result))
        if not texts:
            continue
        rng = rng_for(seed, golden.session, mutation, subject, i)
        path = rng.choice(texts)
        text = get_at(result, path)
        for how, new, span in text_changes(text, rng, golden.placeholders):
            yield _result_mutant(golden, mutation, subject, i, path, text, new, f"{_show(path)}: {how}", span)


def _resource_content(golden: Golden, seed: int) -> Iterator[Mutant]:
    yield from _result_text(golden, seed, "resource_content_changed", ("resource",))
    for i, subject in _drawn(golden, seed, "resource_blob", ("resource",)):
        result = golden.events[i]["msg"]["result"]
        for path, value in leaves(said(result)):
            if path and path[-1] == "blob" and isinstance(value, str):
                new = value[:-4] + ("AAAA" if not value.endswith("AAAA") else "BBBB") if len(value) >= 4 else "AAAA"
                yield _result_mutant(golden, "resource_content_changed", subject, i, path, value, new,
                                     f"{_show(path)}: the blob's bytes")
                break


def _result_number(golden: Golden, seed: int) -> Iterator[Mutant]:
    for i, subject in _drawn(golden, seed, "result_number_changed"):
        result = golden.events[i]["msg"]["result"]
        rng = rng_for(seed, golden.session, "number", subject, i)
        numbers = [(p, v) for p, v in leaves(said(result)) if type(v) in (int, float)]
        if numbers:
            path, value = rng.choice(numbers)
            yield _result_mutant(golden, "result_number_changed", subject, i, path, value, value + 1,
                                 f"{_show(path)}: {value} → {value + 1}")
            continue
        texts = [(p, v) for p, v in leaves(said(result)) if isinstance(v, str) and _NUMBER.search(v)]
        if texts:
            path, text = rng.choice(texts)
            found = _text_number(text, rng, golden.placeholders)
            if found is not None:
                how, new, span = found
                yield _result_mutant(golden, "result_number_changed", subject, i, path, text, new,
                                     f"{_show(path)}: {how}", span)


def _lists(result: dict[str, Any]) -> list[tuple[Path, Any, str | None]]:
    """(path, list, the text it is embedded in or None) of every list of two or more items in a
    result: JSON lists, lists inside a JSON text, and a text's lines or comma-separated items."""
    out: list[tuple[Path, Any, str | None]] = []
    for path, items in containers(result):
        if len(items) >= 2:
            out.append((path, items, None))
    for path, value in leaves(result):
        if not isinstance(value, str):
            continue
        embedded = _embedded(value)
        if embedded is not None:
            out.extend(((*path, *inner), items, value) for inner, items in containers(embedded) if len(items) >= 2)
        elif _items(value) is not None:
            out.append((path, value, value))
    return out


def _list_mutants(golden: Golden, seed: int, mutation: str) -> Iterator[Mutant]:
    for i, subject in _drawn(golden, seed, mutation):
        result = golden.events[i]["msg"]["result"]
        rng = rng_for(seed, golden.session, mutation, subject, i)
        candidates = _lists(said(result))
        if mutation == "list_reordered":
            candidates = [c for c in candidates if len({json.dumps(x, sort_keys=True) for x in _listed(c)}) >= 2]
        if not candidates:
            continue
        path, items, text = rng.choice(candidates)
        yield _list_mutant(golden, mutation, subject, i, result, path, items, text, rng)


def _listed(candidate: tuple[Path, Any, str | None]) -> list[Any]:
    _, items, text = candidate
    if isinstance(items, str):
        split = _items(items)
        return split[0] if split is not None else []
    return list(items)


def _list_change(listed: list[Any], mutation: str, rng: random.Random) -> tuple[str, list[Any]]:
    """(how, the new items): one item dropped, or two neighbours that differ swapped."""
    if mutation == "list_item_dropped":
        at = rng.randrange(len(listed))
        return f"item {at + 1} of {len(listed)} dropped", [*listed[:at], *listed[at + 1:]]
    new_items = list(listed)
    distinct = [j for j in range(len(listed) - 1) if listed[j] != listed[j + 1]]
    j = rng.choice(distinct) if distinct else 0
    new_items[j], new_items[j + 1] = new_items[j + 1], new_items[j]
    return f"items {j + 1} and {j + 2} of {len(listed)} swapped", new_items


def _list_mutant(golden: Golden, mutation: str, subject: str, i: int, result: dict[str, Any], path: Path,
                 items: Any, text: str | None, rng: random.Random) -> Mutant:
    how, new_items = _list_change(_listed((path, items, text)), mutation, rng)
    if isinstance(items, str):  # a text's lines or items
        _, separator = _items(items) or ([], ", ")
        return _result_mutant(golden, mutation, subject, i, path, items, separator.join(new_items),
                              f"{_show(path)}: {how}")
    if text is not None:  # a list inside a JSON text: the text changes
        text_path = next(p for p, v in leaves(result) if v is text)
        inner = path[len(text_path):]
        new_text = _as_text(set_at(_embedded(text), inner, new_items), text)
        return _result_mutant(golden, mutation, subject, i, text_path, text, new_text,
                              f"{_show(text_path)}(json){_show(inner) and '.' + _show(inner)}: {how}")
    return _result_mutant(golden, mutation, subject, i, path, items, new_items, f"{_show(path)}: {how}")


def _dropped(golden: Golden, seed: int) -> Iterator[Mutant]:
    yield from _description_list(golden, seed, "list_item_dropped")
    yield from _list_mutants(golden, seed, "list_item_dropped")


def _reordered(golden: Golden, seed: int) -> Iterator[Mutant]:
    yield from _description_list(golden, seed, "list_reordered")
    yield from _list_mutants(golden, seed, "list_reordered")


def _to_error(golden: Golden, seed: int) -> Iterator[Mutant]:
    for i, subject in _drawn(golden, seed, "result_to_error", ("tool", "prompt", "resource")):
        event = golden.events[i]
        msg = {k: v for k, v in event["msg"].items() if k != "result"}
        msg["error"] = dict(MUTANT_ERROR)
        events, changed = golden.with_events({i: with_msg(event, msg, kind="error")})
        yield Mutant("result_to_error", golden.session, subject, f"answered error {MUTANT_ERROR['code']}", events, changed)


def _error_code(golden: Golden, seed: int) -> Iterator[Mutant]:
    by_subject: dict[str, list[int]] = {}
    for i, subject in golden.errors:
        by_subject.setdefault(subject, []).append(i)
    for subject, sites in by_subject.items():
        rng = rng_for(seed, golden.session, "error_code", subject)
        for i in sorted(rng.sample(sites, min(SITES_PER_KIND, len(sites)))):
            event = golden.events[i]
            error = event["msg"]["error"]
            code = error.get("code")
            new = -32603 if code != -32603 else -32602
            msg = {**event["msg"], "error": {**error, "code": new}}
            events, changed = golden.with_events({i: with_msg(event, msg)})
            yield Mutant("error_code_changed", golden.session, subject, f"error code {code} → {new}", events, changed,
                         Site(changed[0], ("error", "code"), code, new))


def _notification(golden: Golden, seed: int) -> Iterator[Mutant]:
    for method, sites in golden.notifications.items():
        i = rng_for(seed, golden.session, "notification", method).choice(sites)
        events, changed = golden.with_events({i: None})
        yield Mutant("notification_dropped", golden.session, f"notification {method}",
                     f"one of {len(sites)} dropped", events, changed)


MUTATIONS: dict[str, Mutation] = {
    "surface_removed": Mutation("surface.removed", "a tool, resource or prompt removed", _removed),
    "surface_added": Mutation("surface.added", "a tool added", _added),
    "required_param_added": Mutation("schema.breaking", "a required parameter added", _required_added),
    "schema_narrowed": Mutation("schema.breaking", "a parameter's schema narrowed", _narrowed),
    "output_property_removed": Mutation("schema.breaking", "an outputSchema property removed", _output_removed),
    "description_changed": Mutation("schema.cosmetic", "a description changed", _description),
    "hint_changed": Mutation("schema", "an annotation hint changed", _hint),
    "result_text_changed": Mutation("result.changed", "a result's text changed", _result_text),
    "result_number_changed": Mutation("result.changed", "a number in a result changed", _result_number),
    "list_item_dropped": Mutation("result.changed", "a list item dropped", _dropped),
    "list_reordered": Mutation("result.changed", "a list reordered", _reordered),
    "result_to_error": Mutation("error.result_to_error", "a result turned into an error", _to_error),
    "error_code_changed": Mutation("error.code", "an error code changed", _error_code),
    "notification_dropped": Mutation("notification.removed", "a notification dropped", _notification),
    "resource_content_changed": Mutation("result.changed", "a resource's content changed", _resource_content),
}


def mutants(golden: Golden, seed: int = 0) -> Iterator[Mutant]:
    """Every mutant of one golden, kind by kind in MUTATIONS' order: the same ones for the same seed."""
    for mutation in MUTATIONS.values():
        yield from mutation.derive(golden, seed)
