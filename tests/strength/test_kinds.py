"""Honest numbers: each mutation kind is killed by a plain config, and let through by one rule, named.

For every kind of mutants.MUTATIONS, the demo golden (tests/strength/goldens.py) judged with no
rules at all kills every mutant of that kind (the gate catches the change), and judged with one
rule written against it lets it through, the rule named with its line in mcptape.yml, as survived
or, for a rule written for exactly that value, ignored by design. No server starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcptape.strength.measure import Judged, measure
from mcptape.strength.mutants import MUTATIONS
from mcptape.verdict.vocabulary import drift_classes
from tests.strength.goldens import CONFIG, SESSION, configured, context, golden_tape

# kind -> (the YAML appended to the demo config, what the rule lets through, the verdict then)
LET_THROUGH = {
    "surface_removed": ("drift: {fail_on: {surface.removed: info}}", "drift.fail_on `surface.removed: info`", "survived"),
    "surface_added": ("drift: {added_surface: info}", "drift.added_surface `info`", "survived"),
    "required_param_added": ("drift: {fail_on: {schema: info}}", "drift.fail_on `schema: info`", "survived"),
    "schema_narrowed": ("drift: {fail_on: {schema: info}}", "drift.fail_on `schema: info`", "survived"),
    "output_property_removed": ("drift: {fail_on: {schema.breaking: info, security: info}}",
                                "drift.fail_on `schema.breaking: info`", "survived"),
    "description_changed": ("drift: {fail_on: {schema.cosmetic: info}}", "drift.fail_on `schema.cosmetic: info`",
                            "survived"),
    "hint_changed": ("drift: {fail_on: {schema: info}}", "drift.fail_on `schema: info`", "survived"),
    "result_text_changed": ("drift: {ignore: [{path: result.structuredContent.text}]}",
                            "drift.ignore rule `path: result.structuredContent.text`", "survived"),
    "result_number_changed": ("normalize: [{path: $..count, replace: <N>}]", "normalize rule `path: $..count` → `<N>`",
                              "by_design"),
    "list_item_dropped": ("drift: {ignore: [{category: result*}]}", "drift.ignore rule `category: result*`", "survived"),
    "list_reordered": ("normalize: [{path: $..items, order: sorted}]",
                       "normalize rule `path: $..items` put in canonical order", "by_design"),
    "result_to_error": ("drift: {fail_on: {error: info}}", "drift.fail_on `error: info`", "survived"),
    "error_code_changed": ("drift: {fail_on: {error.code: info}}", "drift.fail_on `error.code: info`", "survived"),
    "notification_dropped": ("drift: {fail_on: {notification: info}}", "drift.fail_on `notification: info`", "survived"),
    "resource_content_changed": ("drift: {ignore: [{method: resources/read}]}", "drift.ignore rule `method: resources/read`",
                                 "survived"),
}


def _judged(tmp_path: Path, extra: str, kind: str) -> list[Judged]:
    loaded = configured(tmp_path, extra)
    measured = measure(context(loaded), loaded.config.sessions, goldens={SESSION: golden_tape()})
    assert [s.problem for s in measured.sessions] == [None]
    # The tools no session calls are survivors whatever the rules (test_measure.py); here: what was judged.
    return [j for j in measured.judged if j.kind == kind and "calls it" not in j.detail]


def test_every_kind_is_tested_and_names_a_drift_class_of_the_verdict() -> None:
    assert set(LET_THROUGH) == set(MUTATIONS)
    assert {m.expects for m in MUTATIONS.values()} <= set(drift_classes())


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_a_plain_gate_kills_the_kind_and_one_rule_lets_it_through_named(kind: str, tmp_path: Path) -> None:
    plain = _judged(tmp_path, "", kind)
    assert plain, f"the demo golden has no place for {kind}"
    assert {j.judgement.verdict for j in plain} == {"killed"}, [(j.detail, j.judgement) for j in plain]
    assert all(j.judgement.caught_by for j in plain)

    extra, rule, verdict = LET_THROUGH[kind]
    through = [j for j in _judged(tmp_path, extra + "\n", kind) if j.judgement.verdict != "killed"]
    assert through, f"{extra} let no {kind} mutant through"
    line = CONFIG.count("\n") + 1  # the rule is the first line appended
    for j in through:
        assert j.judgement.verdict == verdict, (j.detail, j.judgement)
        assert rule in [m.says for m in j.judgement.masks], j.judgement.masks
        assert any(m.line == line for m in j.judgement.masks), j.judgement.masks
