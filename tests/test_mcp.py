"""mcp.py: the protocol facts every module reads, one definition of "modern"."""

from __future__ import annotations

from mcptape.mcp import META_PROTOCOL, PROTOCOL_VERSIONS, era, is_modern, meta_version, strip_meta


def test_modern_is_2026_07_28_and_every_revision_after_it() -> None:
    assert [era(v) for v in PROTOCOL_VERSIONS] == ["legacy"] * 4 + ["modern"]
    assert is_modern("2026-07-28") and is_modern("2027-03-01")  # a newer revision is stateless too
    assert not is_modern("2025-11-25") and not is_modern(None) and era("") is None


def test_the_meta_version_is_a_non_empty_string_or_none() -> None:
    assert meta_version({"_meta": {META_PROTOCOL: "2026-07-28"}, "name": "x"}) == "2026-07-28"
    params: object
    for params in (None, {}, {"_meta": {}}, {"_meta": {META_PROTOCOL: ""}}, {"_meta": {META_PROTOCOL: 7}}, [1]):
        assert meta_version(params) is None


def test_strip_meta_drops_only_the_top_level_meta() -> None:
    params = {"_meta": {"progressToken": 1}, "arguments": {"_meta": "kept"}}
    assert strip_meta(params) == {"arguments": {"_meta": "kept"}}
    assert strip_meta(None) is None and strip_meta({"a": 1}) == {"a": 1}
