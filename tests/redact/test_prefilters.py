"""The redaction engine's cheap prefilters are exact stand-ins for what they replaced.

could_match reads a noisy name word (`pwd`, `pin`) as a key only where it ends one
(detectors._ends_a_key, read back from each `:` and `=`); rules.spans skips the library where the
text it would be handed has no token run left. Each is compared here with its plain definition.
"""

from __future__ import annotations

import random
import re

from mcptape.redact import detectors, rules
from mcptape.redact.redactor import make_redactor

# The definition _ends_a_key stands in for: a word, then this, at the word's end.
KEY_END = re.compile(r"(?:\\{0,7}[\"'])?[ \t]*[:=]")


def _by_definition(low: str, words: tuple[str, ...]) -> bool:
    for word in words:
        i = low.find(word)
        while i != -1:
            if KEY_END.match(low, i + len(word)):
                return True
            i = low.find(word, i + 1)
    return False


def test_ends_a_key_agrees_with_its_definition() -> None:
    words = make_redactor()._checker._noisy
    assert "pwd" in words and "pin" in words
    rng = random.Random(25)
    alphabet = ["pwd", "pin", "otp", "pass", "x", "a", " ", "\t", '"', "'", "\\", ":", "=", "\\\\\\\\"]
    found = 0
    for _ in range(20_000):
        low = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        expected = _by_definition(low, words)
        assert detectors._ends_a_key(low, words) == expected, repr(low)
        found += expected
    assert 1000 < found < 19_000  # both answers were exercised


def test_ends_a_key_cases() -> None:
    words = ("pwd", "pin")
    assert detectors._ends_a_key('{"db_pwd": "x"}', words)
    assert detectors._ends_a_key('{\\\\\\"pin\\\\\\": 1}', words)  # a raw message inside a tape line
    assert detectors._ends_a_key("pwd \t= x", words)
    assert not detectors._ends_a_key('{"spinner": "pwd"}', words)
    assert detectors._ends_a_key("{" + "\\" * 7 + '"pin' + "\\" * 7 + '": 1}', words)  # JSON text in a raw in a tape line
    assert not detectors._ends_a_key('pwd ' + '\\' * 8 + '": x', words)  # eight backslashes: not a key's end
    assert not detectors._ends_a_key("pwd x: y", words)


def test_rule_set_skipped_only_where_blanking_left_no_token_run(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []
    real = rules._scan_string()
    def scan(text: str) -> object:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(rules, "_scan_string", lambda: scan)
    image = "iVBORw0KGgo" * 100  # one long run: blanked before the library sees the text
    assert rules.spans('{"text":"' + image + '","method":"tools/call"}') == []
    assert calls == []  # nothing left the library could match
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    text = '{"text":"' + image + '","note":"' + token + '"}'
    assert [text[s:e] for s, e, _ in rules.spans(text)] == [token]  # the same line with a token: found
    assert len(calls) == 1 and image not in calls[0]
    calls.clear()
    digitless = "abcdefghijklmnopqrstuvwxyzABCD"[: 2 * rules.MIN_LEN - 2]  # no digit, under 2 * MIN_LEN: no token run alone...
    assert rules.spans("see " + digitless) == [] and calls == []
    rules.spans("see " + digitless + " " + image)  # ...but beside a long run, still handed over
    assert len(calls) == 1


def test_the_rule_set_runs_without_its_generic_rules() -> None:
    assert rules._CONFIG.is_file()  # shipped as package data (pyproject's package-data)
    scan = rules._scan_string()
    line = 'progressToken: 1, api_key = "Xk4vQ9zL2mW7rT5yPq8sN3"'
    assert not [f for f in scan(line) if str(f.rule_id).startswith("generic-")]
    import betterleaks  # the library's own default set does call it a secret: the config is what differs

    assert [f for f in betterleaks.scan_string(line) if str(f.rule_id).startswith("generic-")]
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    assert [str(f.rule_id) for f in scan(line + " " + token)] == ["github-pat"]


def _random_text(rng: random.Random) -> str:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    parts = ["api_key", "db_pwd", "session-id", "Set-Cookie", "cookie", "password", "PIN", "token", "keys", "otp",
             "sig", "x", "the", " ", "\t", '"', "'", "\\", ":", "=", ": ", "=", "Xk4vQ9zL2mW7rT5yPq8sN3", token,
             "Kq9-abcdefghijklmnopqrst", "s3cr3tVALUE99zz", "Bearer ", "a=b; c=Zk3vQ9zL2mW7rT5y", "{", "}", ",",
             "iVBORw0KGgoAAAANSUhEUgAA" * 3, "/home/bench-user/x", "${{ secrets.X }}", "<REDACTED:x>"]
    return "".join(rng.choice(parts) for _ in range(rng.randint(1, 30)))


def test_scan_reads_keys_or_searches_alike(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    r = make_redactor({"env.X": "Kq9-abcdefghijklmnopqrst"})
    rng = random.Random(7)
    texts = [_random_text(rng) for _ in range(3000)]
    monkeypatch.setattr(detectors, "KEY_SPAN_RATIO", 10**9)  # search the whole text for every trigger
    searched = [[(h.start, h.end, h.kind) for h in r._scrubber.scan(t)] for t in texts]
    monkeypatch.setattr(detectors, "KEY_SPAN_RATIO", 0)  # name triggers only in the keys
    keyed = [[(h.start, h.end, h.kind) for h in r._scrubber.scan(t)] for t in texts]
    assert keyed == searched
    kinds = {k for hits in searched for _, _, k in hits}
    assert {"api-key", "password", "cookie", "env.X", "github-token"} <= kinds, kinds  # the branches were hit


def test_blank_long_runs_blanks_exactly_the_long_base64_runs() -> None:
    run = re.compile(r"[A-Za-z0-9+/=]{" + str(rules.LONG_RUN + 1) + r",}")
    rng = random.Random(3)
    pieces = ["a" * 60, "Zz09+/=" * 10, "QUJD" * 100, " ", "-", "_", "\n", "x" * 321, "y" * 320, "é"]
    blanked = 0
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        expected = run.sub(lambda m: "\n" * len(m.group(0)), text) if text.isascii() else text
        got = rules._blank_long_runs(text, text.encode("utf-8"))
        assert got == expected
        blanked += got != text
        if got == text:
            assert got is text  # spans tells "nothing blanked" by identity
    assert 200 < blanked < 1900


def test_worth_scanning_agrees_with_its_definition() -> None:
    # The library is called only if the text has a token run of MIN_LEN with a digit or one of
    # twice that, and blanking its base64 runs over LONG_RUN leaves a run of MIN_LEN.
    token_run = re.compile(r"[A-Za-z0-9_\-.+/=~]{" + str(rules.MIN_LEN) + r",}")
    long_run = re.compile(r"[A-Za-z0-9+/=]{" + str(rules.LONG_RUN + 1) + r",}")

    def by_definition(text: str) -> bool:
        qualified = any(len(m.group(0)) >= 2 * rules.MIN_LEN or any(c.isdigit() for c in m.group(0))
                        for m in token_run.finditer(text))
        blanked = long_run.sub(lambda m: "\n" * len(m.group(0)), text) if text.isascii() else text
        return qualified and token_run.search(blanked) is not None

    rng = random.Random(11)
    pieces = ["a" * 60, "QUJD" * 100, "x" * 321, "y" * 320, "ab1", "abcdefgh", "7", "_", "-", ".", "~", " ",
              '"', ":", "é", "Zz09+/=" * 3, "abcdefghijklmnopqrstuvwxyzABCDE", "abcdefghijklmnopqrstuvwxyzABCDEF"]
    worth = 0
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        expected = by_definition(text)
        assert rules._worth_scanning(text, text.encode("utf-8")) == expected, repr(text)
        worth += expected
    assert 500 < worth < 4500  # both answers were exercised


def test_trigger_groups_read_at_their_gate_or_searched_alike(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    groups = make_redactor({"env.X": "Kq9-abcdefghijklmnopqrst"})._checker._trigger_groups
    underscore = next(g for g in groups if g.gate == "_")
    assert len(underscore.by_offset) > 1  # triggers with the gate at different offsets (hf_, ghp_, whsec_)
    rng = random.Random(5)
    parts = ["ghp_", "gh", "p_", "_", "_meta", "hf_", "whsec_", "github_pat_", "sk-", "-", "glpat-", "kq9-abc",
             "/root", "/", "x", "progress", "token", "key", "$", "${{", "<redacted:", "<", ".", "sg.", "abc"]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    expected = [[any(t in low for t in g.triggers) for g in groups] for low in texts]
    for cost in (0, 10**9):  # every group read at its gate, then every group searched
        monkeypatch.setattr(detectors, "_AT_GATE_COST", cost)
        assert [[g.found_in(low) for g in groups] for low in texts] == expected
    assert 100 < sum(map(any, expected)) < 2900


def test_prune_agrees_with_its_definition() -> None:
    # _prune keeps the triggers no other one starts; it looks up each one's prefixes instead of
    # comparing every pair. Random sets over a small alphabet, so prefixes are frequent.
    draw = random.Random(7)
    for _ in range(300):
        triggers = {"".join(draw.choice("ab-k") for _ in range(draw.randint(0, 6))) for _ in range(draw.randint(0, 30))}
        by_definition = sorted(t for t in triggers if not any(o != t and t.startswith(o) for o in triggers))
        assert detectors._prune(triggers) == by_definition, triggers
    kept = make_redactor(known={"token": "s3cr3t-value-123"})._scrubber.triggers
    assert "s3cr3t-value-123" in kept
    assert not [(o, t) for o in kept for t in kept if o != t and t.startswith(o)]
