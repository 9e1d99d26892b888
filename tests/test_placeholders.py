"""placeholders.py: one grammar for the placeholders the redactor writes and diff and replay read."""

from __future__ import annotations

from mcptape.placeholders import PLACEHOLDER_RE, fits, may_hold_placeholder, strip_tags, untag


def test_strip_tags_drops_the_tag_of_exactly_the_placeholders_the_grammar_accepts() -> None:
    assert strip_tags("a <REDACTED:github-token#1a2b3c4d> b") == "a <REDACTED:github-token> b"
    assert strip_tags("<REDACTED:env.CALC_TOKEN@calc#0f0f0f0f>") == "<REDACTED:env.CALC_TOKEN@calc>"
    # Not placeholders of ours (a character outside the kind grammar, a tag that is not 8 hex
    # digits): left as written, as PLACEHOLDER_RE leaves them.
    for text in ("<REDACTED:a/b#1a2b3c4d>", "<REDACTED:x#1A2B3C4D>", "<REDACTED:x#1a2b3c>"):
        assert PLACEHOLDER_RE.search(text) is None
        assert strip_tags(text) == text
    assert untag("no placeholder here") == "no placeholder here"


def test_a_recorded_placeholder_fits_any_non_empty_value_and_nothing_else_changes() -> None:
    assert fits("Bearer <REDACTED:bearer-token#1a2b3c4d>", "Bearer abc") is True
    assert fits("Bearer <REDACTED:bearer-token#1a2b3c4d>", "Bearer ") is False
    assert fits("Basic <USER>:<REDACTED:env.PW>", "Basic alice:pw") is True
    assert fits("plain text", "plain text") is None
    assert may_hold_placeholder("<HOME>/x") and not may_hold_placeholder("home/x")
