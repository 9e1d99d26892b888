"""The security review of a surface change: what an agent will read and may do that it did not before.

Owns three checks that checks.py registers, and the field walk they share:
- `check_agent_text` (a call check): for a list result (tools, prompts, resources, templates),
  an `initialize`/`server/discover` result (`instructions`) or a `prompts/get` result (the prompt's
  text), every text an agent reads — titles, descriptions, schema `description`/`title`/`default`,
  annotation titles, argument descriptions — is judged by text_rules.review_text against the same
  field of the golden answer (of the old item when it was renamed); an added or renamed name by
  text_rules.name_problem. Findings: category `security`, kind = the rule id.
- `check_widening` (a call check): a tool that may do more than it declared (`widened`:
  readOnlyHint lost, destructiveHint or openWorldHint false → true, a result's cacheScope
  public ↔ private) or returns less (`output_dropped`: its outputSchema lost a property).
- `classify_surface_renames` (the result classifier of the list methods, wrapping
  classify.classify_surface): one removed and one added item that are one item under another
  name (equal non-trivial input schema, prompt arguments, or description, and no other candidate
  either way) become ONE `surface.renamed` finding, structural, in the surface table's breaking
  column as `old → new`; whatever else changed with the name is compared as for an unchanged item.
Every finding here is structural before DriftSettings (`drift.fail_on: {security: output}` relaxes
them). `review_surface` runs the text rules over a whole surface at once (old = nothing), for
`mcptape check --surface`. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcptape.diff import classify
from mcptape.diff.classify import SURFACE_LISTS, Pair, SurfaceNote
from mcptape.diff.schema_change import effective_annotations
from mcptape.diff.text_rules import Hit, addresses, name_problem, review_text, skeletons, visible
from mcptape.diff.values import fast_same, join
from mcptape.jsonrpc import dumps
from mcptape.verdict.model import Finding

HANDSHAKES = ("initialize", "server/discover")
# What each rule says it found, after "<noun> `<name>` <field>".
_SAYS = {
    "instruction": "adds instruction-shaped text",
    "invisible": "adds an invisible character",
    "homoglyph": "adds a mixed-script word",
    "url": "adds a new address",
    "encoded": "adds an encoded blob",
    "sensitive": "adds a reference to a credential or sensitive path",
    "oversize": "grew",
}
_SCHEMA_TEXT_KEYS = ("title", "description", "default", "examples")


# --- the texts an agent reads ----------------------------------------------------------------


def _schema_texts(schema: Any, path: str, *, names: bool = False) -> Iterator[tuple[str, str]]:
    """The texts in a JSON Schema; `names`: `schema` maps property names to schemas (`properties`)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            p = join(path, key)
            if names:
                yield from _schema_texts(value, p)
            elif key in _SCHEMA_TEXT_KEYS and not isinstance(value, (dict, list)):
                if isinstance(value, str):
                    yield p, value
                elif key == "default" and value is not None:
                    yield p, dumps(value)
            elif key in ("default", "examples"):
                yield p, dumps(value)
            else:
                yield from _schema_texts(value, p, names=key in ("properties", "patternProperties", "$defs",
                                                                 "definitions"))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _schema_texts(value, join(path, i))


def item_texts(method: str, item: Mapping[str, Any]) -> dict[str, str]:
    """The texts of one listed item an agent reads, by field path relative to the item ("description",
    "inputSchema.properties.q.description", ...); its identity (name, uri) is judged apart."""
    out: dict[str, str] = {}
    _, id_field, _, _ = SURFACE_LISTS[method]
    for key, value in item.items():
        if key in (id_field, "_meta", "icons", "mimeType", "size"):
            continue
        if isinstance(value, str) and key in ("title", "description", "name"):
            out[key] = value
        elif key in ("inputSchema", "outputSchema"):
            out.update(_schema_texts(value, key))
        elif key == "annotations" and isinstance(value, dict):
            out.update((join(key, k), v) for k, v in value.items() if isinstance(v, str))
        elif key == "arguments" and isinstance(value, list):
            for arg in value:
                if isinstance(arg, dict):
                    where = join(key, str(arg.get("name")))
                    out.update((join(where, k), v) for k, v in arg.items() if k != "name" and isinstance(v, str))
    return out


def result_texts(method: str, result: Any) -> dict[str, str]:
    """The texts of a handshake (`instructions`) or prompts/get result, by path from `result`."""
    if not isinstance(result, dict):
        return {}
    out: dict[str, str] = {}
    if method in HANDSHAKES and isinstance(result.get("instructions"), str):
        out["result.instructions"] = result["instructions"]
    if method == "prompts/get":
        if isinstance(result.get("description"), str):
            out["result.description"] = result["description"]
        messages = result.get("messages")
        for i, message in enumerate(messages if isinstance(messages, list) else []):
            content = message.get("content") if isinstance(message, dict) else None
            for j, part in enumerate(content if isinstance(content, list) else [content]):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    p = f"result.messages[{i}].content" + (f"[{j}]" if isinstance(content, list) else "")
                    out[p + ".text"] = part["text"]
    return out


def surface_addresses(texts: Iterable[Mapping[str, str]]) -> set[str]:
    """Every URL, e-mail and host already in a list's texts: a link moved or reworded is not new."""
    found: set[str] = set()
    for item in texts:
        for text in item.values():
            found |= addresses(text)
    return found


# --- renames ---------------------------------------------------------------------------------


def _identity(method: str, item: Mapping[str, Any]) -> list[str]:
    """What makes two items under different names one item: each canonical form that is not trivial."""
    keys = []
    schema = item.get("inputSchema")
    if method == "tools/list" and isinstance(schema, dict) and schema.get("properties"):
        keys.append("schema " + dumps({k: v for k, v in schema.items() if k != "$schema"}))
    if method == "prompts/list" and item.get("arguments"):
        keys.append("arguments " + dumps(item.get("arguments")))
    description = item.get("description")
    if isinstance(description, str) and description.strip():
        keys.append("description " + description.strip())
    return keys


def renames(method: str, before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """new name -> old name for each removed item that is exactly one added item (and no other)."""
    removed = [n for n in before if n not in after]
    added = [n for n in after if n not in before]
    if not removed or not added:
        return {}
    out: dict[str, str] = {}
    for old in removed:
        keys = set(_identity(method, before[old]))
        match = [new for new in added if keys & set(_identity(method, after[new]))]
        if len(match) != 1:
            continue
        back = [o for o in removed if set(_identity(method, before[o])) & set(_identity(method, after[match[0]]))]
        if back == [old]:
            out[match[0]] = old
    return out


def _by_id(result: Any, method: str) -> dict[str, dict[str, Any]]:
    list_key, id_field, _, _ = SURFACE_LISTS[method]
    items = result.get(list_key) if isinstance(result, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            out.setdefault(str(item.get(id_field)), item)
    return out


def classify_surface_renames(pair: Pair, ra: Any, rb: Any) -> list[Finding]:
    """classify.classify_surface, with each renamed item as one `surface.renamed` finding."""
    out = classify.classify_surface(pair, ra, rb)
    method = pair.golden.method
    before, after = _by_id(ra, method), _by_id(rb, method)
    renamed = renames(method, before, after)
    if not renamed:
        return out
    list_key, id_field, noun, prefix = SURFACE_LISTS[method]
    base = join("result", list_key)
    gone = {f"{base}[{old}]" for old in renamed.values()} | {f"{base}[{new}]" for new in renamed}
    dropped = {id(f) for f in out if f.category == "surface" and f.kind in ("added", "removed") and f.path in gone}
    out = [f for f in out if id(f) not in dropped]
    pair.surface[:] = [n for n in pair.surface if id(n.finding) not in dropped]
    for new, old in renamed.items():
        f = pair.found("surface", "renamed", f"{base}[{old}]", f"{noun} `{old}` renamed to `{new}`", old, new)
        out.append(f)
        pair.surface.append(SurfaceNote(f, "breaking", f"{prefix}{old} → {new}"))
        item_a = {k: v for k, v in before[old].items() if k != id_field}
        item_b = {k: v for k, v in after[new].items() if k != id_field}
        for change in classify._item_changes(method, item_a, item_b, f"{base}[{new}]"):
            f = pair.found("schema", change.kind, change.path,
                           f"{noun} `{new}` (was `{old}`): {change.message}", change.before, change.after)
            out.append(f)
            pair.surface.append(SurfaceNote(f, change.kind, prefix + new))
    return out


# --- the review of added text ----------------------------------------------------------------


def _result(call_answer: dict[str, Any] | None) -> Any:
    return call_answer.get("result") if isinstance(call_answer, dict) else None


def hit_message(where: str, hit: Hit, *, whole: bool = False) -> str:
    """`tool `search` description adds instruction-shaped text: "ignore previous instructions"`;
    `whole`: the text was judged whole (first contact), so it "has" what a change "adds"."""
    if hit.rule == "oversize":
        size = f"is {hit.note.lstrip('+')} long" if whole else f"grew by {hit.note.lstrip('+')}"
        return f"{where} {size}, starting {_quote(hit.excerpt)}"
    note = f" ({hit.note})" if hit.note and hit.rule in ("url", "encoded", "invisible") else ""
    more = f" and {hit.more} more" if hit.more else ""
    says = _SAYS[hit.rule].replace("adds ", "has ", 1) if whole else _SAYS[hit.rule]
    return f"{where} {says}{note}: {', '.join(_quote(e) for e in hit.excerpts)}{more}"


def _quote(excerpt: str) -> str:
    return '"' + excerpt.replace('"', "'") + '"'


def check_agent_text(pair: Pair) -> list[Finding]:
    """Security findings for what the fresh answer adds to the text an agent reads (module docstring)."""
    method = pair.golden.method
    ra, rb = _result(pair.golden.answer), _result(pair.fresh.answer)
    if rb is None or fast_same(ra, rb):
        return []
    out: list[Finding] = []
    if method in SURFACE_LISTS:
        list_key, _, noun, _ = SURFACE_LISTS[method]
        before, after = _by_id(ra, method), _by_id(rb, method)
        renamed = renames(method, before, after)
        texts_before = {name: item_texts(method, item) for name, item in before.items()}
        known_before = surface_addresses(texts_before.values())
        after_skeletons = skeletons(after)
        for name, item in after.items():
            old_name = name if name in before else renamed.get(name)
            old_item = before.get(old_name) if old_name is not None else None
            if old_item is not None and fast_same(old_item, item):
                continue
            base = f"{join('result', list_key)}[{name}]"
            if old_name != name:  # a new name: is it one a reader mistakes for another?
                problem = name_problem(name, after_skeletons)
                if problem is not None:
                    out.append(pair.found("security", "homoglyph", base,
                                          f"{noun} `{visible(name)}`: {problem}", None, visible(name)))
            old_texts = texts_before[old_name] if old_name is not None and old_item is not None else {}
            for field, text in item_texts(method, item).items():
                for hit in review_text(old_texts.get(field, ""), text, known_before):
                    out.append(pair.found("security", hit.rule, base + ("" if field.startswith("[") else ".")
                                            + field, hit_message(f"{noun} `{visible(name)}` {field}", hit),
                                          None, list(hit.excerpts)))
    elif method in HANDSHAKES or method == "prompts/get":
        old_texts, new_texts = result_texts(method, ra), result_texts(method, rb)
        known: set[str] = set()
        for text in old_texts.values():
            known |= addresses(text)
        what = "server instructions" if method in HANDSHAKES else f"prompt `{visible(str(pair.fresh.name))}`"
        for path, text in new_texts.items():
            field = "" if method in HANDSHAKES else " " + path.removeprefix("result.")
            for hit in review_text(old_texts.get(path, ""), text, known):
                out.append(pair.found("security", hit.rule, path, hit_message(what + field, hit), None,
                                      list(hit.excerpts)))
    return out


# --- what a tool may do ----------------------------------------------------------------------


def check_widening(pair: Pair) -> list[Finding]:
    """A tool that may now do more (hints flipped, cache scope changed) or returns less (output field dropped)."""
    out = _cache_scope(pair)
    if pair.golden.method != "tools/list":
        return out
    ra, rb = _result(pair.golden.answer), _result(pair.fresh.answer)
    if rb is None or fast_same(ra, rb):
        return out
    before, after = _by_id(ra, "tools/list"), _by_id(rb, "tools/list")
    renamed = renames("tools/list", before, after)
    for name, tool in after.items():
        old = before.get(name) or before.get(renamed.get(name, "\0"))
        if old is None or fast_same(old, tool):
            continue
        base = f"result.tools[{name}]"
        shown = f"tool `{visible(name)}`"
        ea, eb = effective_annotations(old.get("annotations")), effective_annotations(tool.get("annotations"))
        raw = tool.get("annotations")
        hints_b: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if ea["readOnlyHint"] is True and eb["readOnlyHint"] is not True:
            also = " and may destroy data (destructiveHint)" if eb["destructiveHint"] is True else ""
            out.append(_flip(pair, f"{base}.annotations.readOnlyHint",
                             f"{shown} may now change things: readOnlyHint true → {_hint(hints_b, 'readOnlyHint')}{also}",
                             True, hints_b.get("readOnlyHint")))
        elif ea["destructiveHint"] is False and eb["destructiveHint"] is True:
            out.append(_flip(pair, f"{base}.annotations.destructiveHint",
                             f"{shown} may now destroy data: destructiveHint false → {_hint(hints_b, 'destructiveHint')}",
                             False, hints_b.get("destructiveHint")))
        if ea["openWorldHint"] is False and eb["openWorldHint"] is True:
            out.append(_flip(pair, f"{base}.annotations.openWorldHint",
                             f"{shown} may now reach the outside world: openWorldHint false → "
                             f"{_hint(hints_b, 'openWorldHint')}", False, hints_b.get("openWorldHint")))
        dropped = _output_fields(old) - _output_fields(tool) if "outputSchema" in old else set()
        if dropped:
            lost = ", ".join(f"`{visible(d)}`" for d in sorted(dropped))
            out.append(pair.found("security", "output_dropped", f"{base}.outputSchema",
                                  f"{shown} no longer returns {lost} (outputSchema dropped it): agents relying on it break",
                                  sorted(dropped)))
    return out


def _hint(hints: Mapping[str, Any], key: str) -> str:
    return dumps(hints[key]) if key in hints else "absent"


def _flip(pair: Pair, path: str, message: str, before: Any, after: Any) -> Finding:
    return pair.found("security", "widened", path, message, before, after)


def _output_fields(tool: Mapping[str, Any]) -> set[str]:
    schema = tool.get("outputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return {str(k) for k in props} if isinstance(props, dict) else set()


def _cache_scope(pair: Pair) -> list[Finding]:
    """A result's cacheScope (2026-07-28) public ↔ private: who else may be served this answer."""
    def scope(tc_events: list[dict[str, Any]], event: int | None) -> Any:
        if event is None:
            return None
        msg = tc_events[event].get("msg")
        result = msg.get("result") if isinstance(msg, dict) else None
        return result.get("cacheScope") if isinstance(result, dict) else None

    sa = scope(pair.g.tape.events, pair.golden.answer_event)
    sb = scope(pair.f.tape.events, pair.fresh.answer_event)
    if {sa, sb} != {"public", "private"}:
        return []
    why = "may now be cached and served to other users" if sb == "public" else "is now private to a user (was shared)"
    subject = pair.golden.method + (f" `{visible(str(pair.fresh.name))}`" if pair.fresh.name else "")
    return [pair.found("security", "widened", "result.cacheScope",
                       f"{subject}: the result {why}: cacheScope {sa} → {sb}", sa, sb)]


# --- a whole surface at once (first contact) ---------------------------------------------------


@dataclass(frozen=True)
class SurfaceHit:
    """One rule match over a whole surface: what (noun and name), where (field), which rule, the words."""

    rule: str
    noun: str
    name: str
    field: str
    message: str
    excerpt: str


def review_surface(lists: Mapping[str, Any], instructions: str | None = None) -> list[SurfaceHit]:
    """The text rules over every listed item and the instructions, as if all of it were new:
    `lists` maps a list method ("tools/list", ...) to its result (or its item list)."""
    out: list[SurfaceHit] = []
    if instructions:
        for hit in review_text("", instructions):
            out.append(SurfaceHit(hit.rule, "server", "", "instructions",
                                  hit_message("server instructions", hit, whole=True), hit.excerpt))
    for method, result in lists.items():
        list_key, _, noun, _ = SURFACE_LISTS[method]
        items = _by_id(result if isinstance(result, dict) else {list_key: result}, method)
        by_skeleton = skeletons(items)
        for name, item in items.items():
            problem = name_problem(name, by_skeleton)
            if problem is not None:
                out.append(SurfaceHit("homoglyph", noun, name, "name", f"{noun} `{visible(name)}`: {problem}",
                                      visible(name)))
            for field, text in item_texts(method, item).items():
                for hit in review_text("", text):
                    out.append(SurfaceHit(hit.rule, noun, name, field,
                                          hit_message(f"{noun} `{visible(name)}` {field}", hit, whole=True),
                                          hit.excerpt))
    return out


__all__ = ["SurfaceHit", "check_agent_text", "check_widening", "classify_surface_renames", "renames",
           "review_surface"]
