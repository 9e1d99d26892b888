"""Judging a mutant as `mcptape ci` judges a fresh tape, and naming the rule that let it through.

Owns one session's judge: the mutant's events go through ci's own path (ci/session.py): the events
it changed redacted with the config's redactor, every event normalized with the session's
Normalizer (normalize.Normalizer.event: the golden's unchanged events normalized once and shared),
put in canonical order, and compared with the golden normalized again (ci.session.compare: the
diff, the conformance gate, the client's schema breaks, then the context budget). Killed is what
ci would exit non-zero on.

Conformance only adds drifts, so a mutant is first judged without it and only one that passes is
judged again with it (its schema validation of every message is most of a judgement's cost).

Masks. A mutant that passes is judged again under variants of the config, to name what hid it:
the config's rules that can hide a change (`masks`: each normalize rule, each `drift.ignore` rule,
each `fail_on` entry that lowers a class to info, `added_surface: info`, `conformance: info`), with
none of them first (what still passes is hidden by mcptape's own normalization, or not compared at
all), then each alone. A masked mutant is *ignored by design* when the rule that hid it was written
for exactly that value and that kind of change (`by_design`), and *survived* otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcptape.ci.session import (
    RunContext,
    compare,
    fresh_tape,
    golden_tools,
    normalized_golden,
    session_normalizer,
)
from mcptape.config.models import DriftSettings, NormalizeRule, Session
from mcptape.diff.surface_cost import add_budget_drift, surface_facts
from mcptape.live.client import SchemaBreak, schema_break, schema_violation
from mcptape.strength.mutants import PROSE, Event, Mutant, get_at
from mcptape.tape.format import Tape
from mcptape.verdict.model import DiffResult, Finding
from mcptape.verdict.vocabulary import VERDICT_EXIT
from mcptape.volatility.normalize import Normalizer, apply_path, canonical_order, parse_path

Verdict = Literal["killed", "survived", "by_design", "equivalent"]
_WILDCARDS = frozenset("*?")


@dataclass(frozen=True)
class Mask:
    """A rule of the config that can hide a change, and where it is written."""

    key: str  # normalize.N | drift.ignore.N | drift.fail_on.CLASS | drift.added_surface | drift.conformance
    line: int
    says: str  # how a reviewer reads it: "normalize rule `pattern: ...` → `<X>`"


def config_masks(ctx: RunContext) -> list[Mask]:
    """Every rule of the config that can hide a change, in the order the file has them."""
    loaded = ctx.loaded
    config = loaded.config
    out: list[Mask] = []
    for i, rule in enumerate(config.normalize):
        selector = f"path: {rule.path}" if rule.path else f"pattern: {rule.pattern}"
        does = "put in canonical order" if rule.order == "sorted" else f"→ `{rule.replace}`"
        out.append(Mask(f"normalize.{i}", loaded.line_of("normalize", i), f"normalize rule `{selector}` {does}"))
    drift = config.drift
    for i, ignore in enumerate(drift.ignore):
        keys = ", ".join(f"{k}: {v}" for k, v in ignore.items())
        out.append(Mask(f"drift.ignore.{i}", loaded.line_of("drift", "ignore", i), f"drift.ignore rule `{keys}`"))
    for name, severity in drift.fail_on.items():
        if severity == "info":
            out.append(Mask(f"drift.fail_on.{name}", loaded.line_of("drift", "fail_on", name),
                            f"drift.fail_on `{name}: info`"))
    if drift.added_surface == "info":
        out.append(Mask("drift.added_surface", loaded.line_of("drift", "added_surface"), "drift.added_surface `info`"))
    if drift.conformance == "info":
        out.append(Mask("drift.conformance", loaded.line_of("drift", "conformance"), "drift.conformance `info`"))
    return out


BUILT_IN = Mask("built-in", 0, "mcptape's built-in normalization (clock dates, UUIDs, paths, tokens)")
NOT_COMPARED = Mask("not-compared", 0, "mcptape's diff, which does not compare this")


@dataclass
class Judgement:
    verdict: Verdict
    caught_by: str | None = None  # killed: the drift class of the finding that heads the verdict
    masks: list[Mask] = field(default_factory=list)  # survived / by design: what hid it


@dataclass
class _Variant:
    """The config with only some of its masks on: its normalizer, the golden under it, its drift settings."""

    normalizer: Normalizer
    golden_n: Tape
    normalized: dict[int, Event]  # id of a golden event -> that event normalized
    drift: DriftSettings


class SessionJudge:
    """ci's judgement of one session's golden against mutants of it (module docstring)."""

    def __init__(self, ctx: RunContext, session: Session, golden: Tape, masks: Sequence[Mask]) -> None:
        self.ctx = ctx
        self.session = session
        self.golden = golden
        self.masks = list(masks)
        self.redactor = ctx.redactor.fork()
        self.drift = ctx.loaded.config.drift
        self.server = session.server
        self._variants: dict[frozenset[str], _Variant] = {}
        self._as_sent = canonical_order(golden.events, copy=False)
        self._tools = golden_tools(golden)
        self._calls: dict[str, list[Event]] = {}  # tool name -> the session's tools/call requests of it
        for event in golden.events:
            msg = event.get("msg")
            params = msg.get("params") if isinstance(msg, dict) else None
            if (event.get("kind"), event.get("dir"), event.get("method")) == ("request", "c2s", "tools/call") \
                    and isinstance(params, dict) and isinstance(params.get("name"), str):
                self._calls.setdefault(params["name"], []).append(event)

    # -- the config with some masks on -------------------------------------------------------------

    def _variant(self, on: frozenset[str]) -> _Variant:
        key = frozenset(k for k in on if k.startswith("normalize."))
        drift = self._drift(on)
        cached = self._variants.get(key)
        if cached is None:
            rules: list[NormalizeRule] = [r for i, r in enumerate(self.ctx.loaded.config.normalize)
                                          if f"normalize.{i}" in key]
            normalizer = session_normalizer(self.ctx, self.session, rules)
            golden_n = normalized_golden(self.golden, normalizer)
            normalized = {id(e): n for e, n in zip(self.golden.events, golden_n.events, strict=True)}
            cached = self._variants[key] = _Variant(normalizer, golden_n, normalized, drift)
        return _Variant(cached.normalizer, cached.golden_n, cached.normalized, drift)

    def _drift(self, on: frozenset[str]) -> DriftSettings:
        drift = self.drift
        return drift.model_copy(update={
            "ignore": [rule for i, rule in enumerate(drift.ignore) if f"drift.ignore.{i}" in on],
            "fail_on": {k: v for k, v in drift.fail_on.items() if v != "info" or f"drift.fail_on.{k}" in on},
            "added_surface": drift.added_surface if "drift.added_surface" in on else "structural",
            "conformance": drift.conformance if "drift.conformance" in on else "structural",
        })

    # -- one verdict ---------------------------------------------------------------------------

    def redacted(self, mutant: Mutant) -> list[Event]:
        events = list(mutant.events)
        for i in mutant.changed:
            events[i] = self.redactor.redact_event(events[i])
        return events

    def verdict(self, events: list[Event], mutant: Mutant | None, on: frozenset[str], *,
                conformance_check: bool) -> DiffResult:
        """ci's verdict on `events` (redacted) as the fresh recording, with the masks `on` in force."""
        variant = self._variant(on)
        normalize = variant.normalizer.event
        known = variant.normalized
        scrubbed = canonical_order([known[id(e)] if id(e) in known else normalize(e) for e in events], copy=False)
        header = self.golden.header
        fresh = fresh_tape(header, scrubbed)
        as_sent = fresh_tape(header, canonical_order(events, copy=False)) if conformance_check else fresh
        diff = compare(variant.golden_n, fresh, variant.drift, as_sent=as_sent,
                       schema_breaks=self._schema_breaks(events, mutant), conformance_check=conformance_check)
        if variant.drift.budget is not None:  # ci adds it always; it can only fail with a budget set
            add_budget_drift(diff, surface_facts(fresh, self.golden, self.server), variant.drift)
        return diff

    def fails(self, events: list[Event], mutant: Mutant | None, on: frozenset[str]) -> DiffResult | None:
        """The failing verdict of `events` under the masks `on`, or None if ci would pass them."""
        for conformance_check in (False, True):
            diff = self.verdict(events, mutant, on, conformance_check=conformance_check)
            if VERDICT_EXIT[diff.verdict] != 0:
                return diff
        return None

    def _schema_breaks(self, events: list[Event], mutant: Mutant | None) -> list[SchemaBreak]:
        """What the scripted client would find before each call of a tool whose schema the mutant
        changed: arguments its golden schema accepted and the mutant's rejects (client.schema_break)."""
        if mutant is None or not mutant.subject.startswith("tool ") or mutant.kind not in (
                "required_param_added", "schema_narrowed"):
            return []
        name = mutant.subject.removeprefix("tool ")
        live = golden_tools(fresh_tape({}, [events[i] for i in mutant.changed])).get(name)
        golden = self._tools.get(name)
        if live is None:
            return []
        out = []
        for event in self._calls.get(name, []):  # a schema mutant changes a listing, never a request
            params = event["msg"]["params"]
            arguments: dict[str, Any] = params["arguments"] if isinstance(params.get("arguments"), dict) else {}
            live_rule = schema_violation(arguments, live.get("inputSchema"))
            golden_rule = schema_violation(arguments, golden.get("inputSchema")) if golden is not None else None
            if live_rule is not None and golden_rule is None:
                step = event.get("step")
                out.append(schema_break(step if isinstance(step, int) else None, name, arguments, live_rule, golden,
                                        live))
        return out

    # -- a mutant, judged and explained -----------------------------------------------------------

    def baseline(self) -> DiffResult | None:
        """The golden judged against itself with the whole config: None if it passes, as it must
        (a golden that fails against itself would make every mutant look killed). Without the
        conformance gate: every violation the golden holds is one the fresh tape holds too, which
        the gate calls known, and it would cost the schema check's import and a validation of every
        message in a check whose mutants may all fail without it."""
        diff = self.verdict(list(self.golden.events), None, self._all(), conformance_check=False)
        return diff if VERDICT_EXIT[diff.verdict] != 0 else None

    def _all(self) -> frozenset[str]:
        return frozenset(m.key for m in self.masks)

    def judge(self, mutant: Mutant) -> Judgement:
        events = self.redacted(mutant)
        failed = self.fails(events, mutant, self._all())
        if failed is not None:  # a golden passes against itself (baseline): what fails is not equivalent
            return Judgement("killed", caught_by=_caught_by(failed))
        if canonical_order(events, copy=False) == self._as_sent:
            return Judgement("equivalent")
        bare = self.fails(events, mutant, frozenset())
        if bare is None:
            variant = self._variant(frozenset())
            same = [variant.normalized.get(id(e)) or variant.normalizer.event(e) for e in events]
            if canonical_order(same, copy=False) == variant.golden_n.events:
                return Judgement("by_design", masks=[BUILT_IN])
            return Judgement("survived", masks=[NOT_COMPARED])
        alone = [m for m in self.masks if self.fails(events, mutant, frozenset({m.key})) is None]
        if not alone:  # only together: each whose removal lets the gate fail
            everything = self._all()
            alone = [m for m in self.masks if self.fails(events, mutant, everything - {m.key}) is not None]
        on_purpose = [m for m in alone if self.by_design(m, mutant, bare)]
        if on_purpose:
            return Judgement("by_design", masks=on_purpose)
        return Judgement("survived", masks=alone or list(self.masks))

    def by_design(self, mask: Mask, mutant: Mutant, bare: DiffResult) -> bool:
        """Was `mask` written for exactly what `mutant` changed? A canonical order for a reordering;
        a normalize path, or an ignore path without wildcards, naming the very value changed when
        that value is one value (one_value), not a text or a list; a pattern that hides the change
        but not prose put in its place (it matches a shape, and the change kept it). Anything else
        that hides a change is a blind spot: a `fail_on` lowered to info, `added_surface: info`, an
        ignore by category, method or name, a pattern that swallows any text."""
        kind, _, index = mask.key.rpartition(".")
        site = mutant.site
        if kind == "normalize":
            rule = self.ctx.loaded.config.normalize[int(index)]
            if rule.order == "sorted":
                return mutant.kind == "list_reordered"
            if site is None:
                return False
            if rule.path:  # a mutant that changes a value removes no event: its index is the golden's
                return one_value(site.before) and _selects_exactly(rule.path, self.golden.events[site.event]["msg"],
                                                                   site.path)
            if not isinstance(site.before, str) or site.span is None:
                return False
            start, end = site.span
            probe = site.before[:start] + PROSE + site.before[end:]
            alone = Normalizer([rule])
            return alone.text(probe) != alone.text(site.before)
        if kind == "drift.ignore":
            ignore = self.drift.ignore[int(index)]
            path = ignore.get("path")
            if site is None or path is None or _WILDCARDS & set(path) or set(ignore) - {"path", "method", "name"}:
                return False
            return one_value(site.before) and all(f.path == path for f in _failing(bare))
        return False


def one_value(value: Any) -> bool:
    """A number, a flag or a one-word string (an id, a date, a hash): what a rule naming one value
    is written for. A text with words in it, a list or an object is content, which such a rule hides
    whole: its changes are blind spots, whoever meant the rule."""
    if isinstance(value, str):
        return not any(ch.isspace() for ch in value)
    return value is None or isinstance(value, (int, float, bool))


def _selects_exactly(path: str, msg: Any, site: tuple[Any, ...]) -> bool:
    """Does the JSON path `path` select the value at `site` in `msg` itself (not a container of it)?"""
    try:
        target = get_at(msg, site)
    except (KeyError, IndexError, TypeError):
        return False
    chosen: list[Any] = []

    def mark(node: Any) -> Any:
        chosen.append(node)
        return node
    apply_path(msg, parse_path(path), mark)
    return any(node is target for node in chosen)


def _failing(diff: DiffResult) -> list[Finding]:
    return [f for d in diff.drifts if d.severity != "info" for f in d.findings if f.severity != "info"]


def _caught_by(diff: DiffResult) -> str | None:
    findings = _failing(diff)
    if not findings:
        return None
    first = findings[0]
    return f"{first.category}.{first.kind}" if first.kind else first.category

